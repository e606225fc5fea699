//! The `fake-kube-apiserver` binary as a test's cluster, driven with real kubectl (Debian's
//! `kubernetes-client`, unpacked by scripts/test-tools.sh; `KUBECTL` names another) as a user
//! drives a cluster: objects created from files, read, merge-patched, deleted; a status changed
//! with a raw PUT of the status subresource (kubectl 1.20 has no `--subresource`).
//!
//! The binary is built on first use (`cargo build -p fake-kube-apiserver`, a no-op when fresh),
//! so that a test of another package runs the current one.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, Once, mpsc};
use std::time::Duration;

use serde_json::Value;

/// How long one kubectl call or the server's start may take.
const LIMIT: Duration = Duration::from_secs(60);

/// kubectl: `$KUBECTL`, else the one scripts/test-tools.sh installs (missing: the test fails).
pub fn kubectl_path() -> PathBuf {
    std::env::var_os("KUBECTL").map_or_else(|| crate::tools::path("bin/kubectl"), PathBuf::from)
}

/// The `fake-kube-apiserver` binary of this workspace, built once per test process.
pub fn server_binary() -> PathBuf {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "fake-kube-apiserver", "--bin", "fake-kube-apiserver"])
            .current_dir(crate::repo())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build -p fake-kube-apiserver failed");
    });
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::repo().join("target"), PathBuf::from);
    target.join("debug/fake-kube-apiserver")
}

/// Starts a fake-kube-apiserver `binary` on a free port of 127.0.0.1: the child (kill it by
/// its PID) and the URL it printed first, read within a minute.
pub fn start_server(binary: &Path) -> (Child, String) {
    let mut child = Command::new(binary)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("fake-kube-apiserver starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = match rx.recv_timeout(LIMIT) {
        Ok(line) => line.trim().to_owned(),
        Err(_) => {
            let _ = child.kill();
            panic!("fake-kube-apiserver printed no URL within {LIMIT:?}");
        }
    };
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    (child, url)
}

/// kubectl against `url`, its home (config, cache) in `home` whatever the user's is.
pub fn kubectl_command(url: &str, home: &Path) -> Command {
    let mut cmd = Command::new(kubectl_path());
    cmd.arg("--server").arg(url).arg("--cache-dir").arg(home.join("cache"));
    cmd.env("HOME", home).env_remove("KUBECONFIG");
    cmd
}

/// Runs `cmd` (with `stdin`) to completion within a minute, its output captured, killing it
/// by its PID if it hangs.
pub fn run_bounded(cmd: Command, stdin: Option<&str>) -> Output {
    try_run_bounded(cmd, stdin).unwrap_or_else(|hung| panic!("{hung}"))
}

/// [`run_bounded`] that says a hang instead of panicking: for cleanups in a `Drop`, which may
/// run while a failed test unwinds (a second panic there aborts the test binary, and every
/// cleanup after it is lost).
pub fn try_run_bounded(mut cmd: Command, stdin: Option<&str>) -> Result<Output, String> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!(
            "cannot run {:?} ({e}): run scripts/test-tools.sh, or set KUBECTL",
            cmd.get_program()
        )
    });
    if let Some(text) = stdin {
        child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write stdin");
    }
    drop(child.stdin.take());
    let (tx, rx) = mpsc::channel();
    let id = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(output) => Ok(output.expect("the output")),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &id.to_string()]).status();
            let args = cmd.get_args().collect::<Vec<_>>();
            Err(format!("{args:?} did not finish within {LIMIT:?}"))
        }
    }
}

struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        // By its own PID, never by name.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server process and kubectl's home; stopped when the last clone goes.
#[derive(Clone)]
pub struct Cluster {
    url: String,
    home: Arc<tempfile::TempDir>,
    _server: Arc<Mutex<Running>>,
}

impl Cluster {
    /// Starts `fake-kube-apiserver --listen 127.0.0.1:0` and reads its URL (its first line).
    pub fn start() -> Cluster {
        let (child, url) = start_server(&server_binary());
        let server = Running { child };
        let home = Arc::new(tempfile::tempdir().expect("a home for kubectl"));
        Cluster { url, home, _server: Arc::new(Mutex::new(server)) }
    }

    /// The server's base URL, for a kubeconfig.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Runs kubectl with `args` (and `stdin`), bounded; the output, successful or not.
    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = kubectl_command(&self.url, self.home.path());
        cmd.args(args);
        run_bounded(cmd, stdin)
    }

    /// Runs kubectl and requires success; its stdout.
    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.run(args, stdin);
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8")
    }

    /// `kubectl create -f -` of `object` (in `namespace`, or cluster-scoped with ""); the
    /// object as the server stored it.
    pub fn create(
        &self,
        _api_version: &str,
        _plural: &str,
        namespace: &str,
        object: Value,
    ) -> Value {
        let mut args = vec!["create", "--validate=false", "-f", "-", "-o", "json"];
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        json(&self.kubectl(&args, Some(&object.to_string())))
    }

    /// `kubectl get`; `None` when there is no such object.
    pub fn get(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let resource = resource(api_version, plural);
        let mut args = vec!["get", resource.as_str(), name, "--ignore-not-found", "-o", "json"];
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        let out = self.kubectl(&args, None);
        (!out.trim().is_empty()).then(|| json(&out))
    }

    /// `kubectl patch --type merge`; a `status` in the patch goes, merged into the current
    /// object, to the status subresource with a raw PUT.
    pub fn patch(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Value {
        let resource = resource(api_version, plural);
        let mut patch = patch;
        let status = patch.as_object_mut().and_then(|p| p.remove("status"));
        let mut object = Value::Null;
        if patch.as_object().is_some_and(|p| !p.is_empty()) {
            let text = patch.to_string();
            let mut args = vec![
                "patch",
                resource.as_str(),
                name,
                "--type",
                "merge",
                "-p",
                &text,
                "-o",
                "json",
            ];
            if !namespace.is_empty() {
                args.extend(["-n", namespace]);
            }
            object = json(&self.kubectl(&args, None));
        }
        if let Some(status) = status {
            let mut current = self.get(api_version, plural, namespace, name).expect("the object");
            merge(&mut current["status"], status);
            let path = object_path(api_version, plural, namespace, name);
            let file = self.home.path().join("status.json");
            std::fs::write(&file, current.to_string()).expect("write the status");
            let file = file.display().to_string();
            let status_path = format!("{path}/status");
            let args = ["replace", "--validate=false", "--raw", &status_path, "-f", &file];
            self.kubectl(&args, None);
            object = self.get(api_version, plural, namespace, name).expect("the object");
        }
        object
    }

    /// `kubectl delete --wait=false` (finalizers may hold it).
    pub fn delete(&self, api_version: &str, plural: &str, namespace: &str, name: &str) {
        let resource = resource(api_version, plural);
        let mut args = vec!["delete", resource.as_str(), name, "--wait=false"];
        if !namespace.is_empty() {
            args.extend(["-n", namespace]);
        }
        self.kubectl(&args, None);
    }

    /// `kubectl get -A`: every object of the kind.
    pub fn list(&self, api_version: &str, plural: &str) -> Vec<Value> {
        let resource = resource(api_version, plural);
        let out = self.kubectl(&["get", resource.as_str(), "-A", "-o", "json"], None);
        json(&out)["items"].as_array().cloned().unwrap_or_default()
    }
}

/// kubectl's fully-qualified resource: `services`, `events.v1.events.k8s.io`.
fn resource(api_version: &str, plural: &str) -> String {
    match api_version.split_once('/') {
        Some((group, version)) => format!("{plural}.{version}.{group}"),
        None => plural.to_owned(),
    }
}

fn object_path(api_version: &str, plural: &str, namespace: &str, name: &str) -> String {
    let base = match api_version.split_once('/') {
        Some(_) => format!("/apis/{api_version}"),
        None => format!("/api/{api_version}"),
    };
    match namespace {
        "" => format!("{base}/{plural}/{name}"),
        ns => format!("{base}/namespaces/{ns}/{plural}/{name}"),
    }
}

/// A JSON merge patch (RFC 7386) of `patch` into `target`.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(&key);
                } else {
                    merge(target.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch,
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("kubectl printed no JSON ({e}): {text}"))
}
