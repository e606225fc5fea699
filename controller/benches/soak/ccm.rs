//! The CCM binary as a child process: started, SIGKILLed (`Child::kill` sends SIGKILL),
//! started again; stopped with SIGTERM at the end or when dropped (a panic too).
//!
//! `CCM_SOAK_BIN` names another binary (an older build, to see that the soak catches a bug it
//! had).

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
    /// When the process started, each time (the first start included), in order.
    pub(crate) starts: Vec<Instant>,
}

impl Ccm {
    pub(crate) fn start(args: Vec<String>, log: PathBuf) -> Ccm {
        let mut ccm = Ccm { args, log, child: None, kills: 0, starts: Vec::new() };
        ccm.spawn();
        ccm
    }

    fn spawn(&mut self) {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("the CCM's log file");
        let bin = std::env::var("CCM_SOAK_BIN").unwrap_or_else(|_| BIN.to_owned());
        let child = Command::new(bin)
            .args(&self.args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start the CCM binary");
        self.child = Some(child);
        self.starts.push(Instant::now());
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
