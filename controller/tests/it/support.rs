//! Helpers of the controller's tests: the binary as a child process, the scene helper
//! (the rest is in crates/testkit).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use testkit::kube::kubeconfig;
use testkit::signal::ArmedKill;
use testkit::stack::StackEnv;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::broadcast;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_openstack-cloud-controller-manager");

/// What [`Process`] starts: cargo's binary, or `CCM_TEST_OCCM_BIN` (scripts/image.sh points it
/// at a wrapper running the binary of the built container image).
pub(crate) fn process_bin() -> std::ffi::OsString {
    std::env::var_os("CCM_TEST_OCCM_BIN").unwrap_or_else(|| BIN.into())
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
        Process::start_program(&process_bin(), args)
    }

    /// [`Process::start`] of another controller manager's binary (upstream's).
    pub(crate) fn start_program(program: &std::ffi::OsStr, args: &[String]) -> Process {
        Process::start_with_env(program, args, &[])
    }

    /// [`Process::start_program`] with `env` (name, value) set too.
    pub(crate) fn start_with_env(
        program: &std::ffi::OsStr,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Process {
        let mut child = Command::new(program)
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
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

    /// The exit code if the process has ended (-1 for a signal), `None` while it runs.
    pub(crate) fn try_exit(&mut self) -> Option<i32> {
        let status = self.child.try_wait().expect("the child's status")?;
        Some(status.code().unwrap_or(-1))
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
        self.exit_code().await
    }

    /// Sends SIGTERM as soon as a stderr line contains `needle` (within microseconds of it)
    /// and waits (bounded) for the exit code (`None`: ended by the signal itself).
    pub(crate) async fn terminate_on(&mut self, needle: &str) -> Option<i32> {
        let pid = self.child.id().expect("the process is running");
        let kill = ArmedKill::new("TERM");
        self.wait_line(needle, Duration::from_secs(20)).await;
        kill.fire(pid);
        self.exit_code().await
    }

    /// Sends SIGKILL and waits for the end: no handler runs, nothing is finished or cleaned
    /// up, as when the OOM killer or a lost node ends the controller.
    pub(crate) async fn kill(&mut self) {
        self.child.kill().await.expect("SIGKILL ends the process");
    }

    /// The exit code once the process ends after a SIGTERM, waited for 20 s at most.
    async fn exit_code(&mut self) -> Option<i32> {
        let exit = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
        exit.expect("the process exits after SIGTERM").unwrap().code()
    }

    pub(crate) fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }
}

/// `/metrics` served without a token, as upstream's controller managers serve a path added to
/// `--authorization-always-allow-paths`: the tests that read the counters are not about who
/// may (the fake API server has no TokenReview; tests/it/real_kube_metrics_auth.rs is).
pub(crate) const OPEN_METRICS: &str =
    "--authorization-always-allow-paths=/healthz,/readyz,/metrics";

/// The binary for `--cloud-provider=openstack` against the API server at `api_url`, with
/// `cloud_conf` as its cloud config and serving on a free port of 127.0.0.1 with `/metrics`
/// open to anyone ([`OPEN_METRICS`]), then `extra` flags: the process, its port, and the
/// directory of its files (keep it while the process runs).
pub(crate) fn start_ccm(
    api_url: &str,
    cloud_conf: &str,
    extra: &[&str],
) -> (Process, u16, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("cloud.conf");
    std::fs::write(&conf, cloud_conf).unwrap();
    let (args, port) = ccm_args(api_url, &conf, dir.path(), extra);
    (Process::start(&args), port, dir)
}

/// The arguments of [`start_ccm`] for the cloud config at `conf` (its kubeconfig written into
/// `dir`), and the port it serves on.
pub(crate) fn ccm_args(
    api_url: &str,
    conf: &std::path::Path,
    dir: &std::path::Path,
    extra: &[&str],
) -> (Vec<String>, u16) {
    let port = free_port();
    let mut args = vec![
        "--cloud-provider=openstack".to_owned(),
        format!("--cloud-config={}", conf.display()),
        format!("--kubeconfig={}", kubeconfig(dir, api_url).display()),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        OPEN_METRICS.to_owned(),
    ];
    args.extend(extra.iter().map(|flag| (*flag).to_owned()));
    (args, port)
}

/// The binary for `--cloud-provider=openstack` with the cloud config at `conf` and the
/// kubeconfig at `kubeconfig` (a real API server's), serving on a free port of 127.0.0.1, then
/// `extra` flags.
pub(crate) fn start_with_kubeconfig(
    conf: &std::path::Path,
    kubeconfig: &std::path::Path,
    extra: &[&str],
) -> Process {
    let mut args = vec![
        "--cloud-provider=openstack".to_owned(),
        format!("--cloud-config={}", conf.display()),
        format!("--kubeconfig={}", kubeconfig.display()),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={}", free_port()),
    ];
    args.extend(extra.iter().map(|flag| (*flag).to_owned()));
    Process::start(&args)
}

/// `occm_openstack_api_requests_total` of `service` and `operation`, all results summed, from
/// the binary's /metrics on `port`.
pub(crate) async fn requests(port: u16, service: &str, operation: &str) -> u64 {
    let url = format!("https://127.0.0.1:{port}/metrics");
    let text = https().get(url).send().await.unwrap().text().await.unwrap();
    let labels = format!("{{service=\"{service}\",operation=\"{operation}\",");
    text.lines()
        .filter(|l| l.starts_with("occm_openstack_api_requests_total") && l.contains(&labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The binary's requests to `service` that change something (operations ending in `_create`,
/// `_update` or `_delete`), all results summed, from its /metrics on `port`.
pub(crate) async fn writes(port: u16, service: &str) -> u64 {
    let url = format!("https://127.0.0.1:{port}/metrics");
    let text = https().get(url).send().await.unwrap().text().await.unwrap();
    let labels = format!("{{service=\"{service}\",operation=\"");
    let write = |l: &&str| ["_create\"", "_update\"", "_delete\""].iter().any(|w| l.contains(w));
    text.lines()
        .filter(|l| l.starts_with("occm_openstack_api_requests_total") && l.contains(&labels))
        .filter(write)
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// An HTTPS client that accepts the self-signed serving certificate.
pub(crate) fn https() -> reqwest::Client {
    reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap()
}

/// Runs `openstack_scene.py` and parses its JSON output.
pub(crate) async fn scene(env: &StackEnv, args: &[&str]) -> serde_json::Value {
    let mut command = Command::from(env.scene_command());
    let run = command.args(args).kill_on_drop(true).output();
    let output = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .unwrap_or_else(|_| panic!("openstack_scene.py {args:?} did not finish within 600 s"))
        .unwrap();
    assert!(
        output.status.success(),
        "openstack_scene.py {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null)
}
