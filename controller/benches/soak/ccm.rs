//! The CCM binary as a child process: started, SIGKILLed (`Child::kill` sends SIGKILL),
//! started again; stopped with SIGTERM at the end or when dropped (a panic too).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_openstack-cloud-controller-manager");

pub(crate) struct Ccm {
    args: Vec<String>,
    pub(crate) log: PathBuf,
    child: Option<Child>,
    /// SIGKILLs sent so far.
    pub(crate) kills: usize,
    /// When the last start after a kill happened.
    pub(crate) restarted: Option<Instant>,
}

impl Ccm {
    pub(crate) fn start(args: Vec<String>, log: PathBuf) -> Ccm {
        let mut ccm = Ccm { args, log, child: None, kills: 0, restarted: None };
        ccm.spawn();
        ccm
    }

    fn spawn(&mut self) {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("the CCM's log file");
        let child = Command::new(BIN)
            .args(&self.args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start the CCM binary");
        self.child = Some(child);
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL now (no-op when it is not running); it stays down until [`Ccm::restart`].
    pub(crate) fn kill(&mut self) -> bool {
        let Some(mut child) = self.child.take() else { return false };
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the CCM had exited by itself ({status}); log: {}", self.log.display());
        }
        child.kill().expect("SIGKILL the CCM");
        let _ = child.wait();
        self.kills += 1;
        true
    }

    pub(crate) fn restart(&mut self) {
        if self.child.is_none() {
            self.spawn();
            self.restarted = Some(Instant::now());
        }
    }

    /// Panics when the CCM exited by itself (it never should).
    pub(crate) fn check_alive(&mut self) {
        if let Some(child) = self.child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            panic!("the CCM exited by itself ({status}); log: {}", self.log.display());
        }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }
}

impl Drop for Ccm {
    fn drop(&mut self) {
        self.stop();
    }
}
