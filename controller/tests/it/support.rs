//! Shared helpers: the binary as a child process, a kubeconfig for the fake API server, the
//! real-OpenStack env file and scene helper.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::broadcast;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_openstack-cloud-controller-manager");

/// A kubeconfig pointing at `url` (plain HTTP, no auth), written into `dir`.
pub(crate) fn kubeconfig(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {url}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\ncurrent-context: fake\nusers:\n- name: fake\n  user: {{}}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A free TCP port on 127.0.0.1 (nothing listens on it when this returns).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The running binary; its stderr lines are kept and broadcast; killed on drop.
pub(crate) struct Process {
    child: Child,
    pub(crate) lines: Arc<Mutex<Vec<String>>>,
    events: broadcast::Sender<String>,
}

impl Process {
    pub(crate) fn start(args: &[String]) -> Process {
        let mut child = Command::new(BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (events, _) = broadcast::channel(1024);
        let (keep, send) = (lines.clone(), events.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                keep.lock().unwrap().push(line.clone());
                let _ = send.send(line);
            }
        });
        Process { child, lines, events }
    }

    /// Waits (bounded) for a stderr line containing `needle`, including lines already seen.
    pub(crate) async fn wait_line(&self, needle: &str, timeout: Duration) -> String {
        let mut rx = self.events.subscribe();
        if let Some(line) = self.lines.lock().unwrap().iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        let wait = async {
            loop {
                match rx.recv().await {
                    Ok(line) if line.contains(needle) => return line,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        panic!("process ended before logging {needle:?}")
                    }
                }
            }
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(line) => line,
            Err(_) => panic!(
                "no log line {needle:?} within {timeout:?}; log:\n{}",
                self.lines.lock().unwrap().join("\n")
            ),
        }
    }

    /// Sends SIGTERM and waits (bounded) for the exit code.
    pub(crate) async fn terminate(&mut self) -> Option<i32> {
        let pid = self.child.id().expect("the process is running");
        let status =
            std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
        assert!(status.success());
        let exit = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
        exit.expect("the process exits after SIGTERM").unwrap().code()
    }

    pub(crate) fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

/// An HTTPS client that accepts the self-signed serving certificate.
pub(crate) fn https() -> reqwest::Client {
    reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap()
}

/// The env file of scripts/openstack-up.sh (path in `CCM_OPENSTACK_ENV`).
pub(crate) fn openstack_env() -> BTreeMap<String, String> {
    let path = std::env::var("CCM_OPENSTACK_ENV").unwrap_or_else(|_| {
        panic!("CCM_OPENSTACK_ENV is not set: start the stack with scripts/openstack-up.sh and point CCM_OPENSTACK_ENV at target/openstack/env")
    });
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read CCM_OPENSTACK_ENV={path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Runs `openstack_scene.py` and parses its JSON output.
pub(crate) async fn scene(env: &BTreeMap<String, String>, args: &[&str]) -> serde_json::Value {
    let script =
        env.get("OPENSTACK_SCENE").cloned().unwrap_or_else(|| "scripts/openstack_scene.py".into());
    // Run by its shebang (/usr/bin/python3, which has openstacksdk), not whatever python3 is first in PATH.
    let output = Command::new(script).args(args).output().await.unwrap();
    assert!(
        output.status.success(),
        "openstack_scene.py {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null)
}
