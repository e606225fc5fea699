//! What the operator benchmarks share (benches/operator.rs, benches/operator_ccm.rs): the
//! cluster set up as an installer would from what `create manifests` wrote, the operator run as
//! a process of its own, and the figures' arithmetic.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::create::CreateManifests;
use testkit::installer;
use testkit::kube_stack::KubeStack;

pub(crate) const CCM_NAMESPACE: &str = "openshift-cloud-controller-manager";
pub(crate) const OPERATOR_NAMESPACE: &str = "openshift-cloud-controller-manager-operator";
pub(crate) const CONFIG_NAMESPACE: &str = "openshift-config";
pub(crate) const DEPLOYMENT: &str = "openstack-cloud-controller-manager";
pub(crate) const LEASE: &str = "ccm-assets-operator";

/// A number from the environment, else `default`.
pub(crate) fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What `create manifests` wrote, put in the cluster as an installer would; everything is
/// deleted on drop.
pub(crate) struct Cluster {
    pub(crate) stack: KubeStack,
    pub(crate) dir: tempfile::TempDir,
}

impl Cluster {
    /// `create` run by `bin` on a copy of the files of `source` (an install-config.yaml, and a
    /// clouds.yaml unless `clouds` names one), then its Infrastructure (edited by
    /// `edit_infra`, spec and status), cloud-provider-config and credentials Secret put in the
    /// cluster with a Network and a Proxy, as an installer would. Waits first while another
    /// run uses the same objects, and deletes what an earlier run left.
    pub(crate) fn new(
        bin: &Path,
        source: &Path,
        create: &CreateManifests,
        clouds: Option<&Path>,
        edit_infra: impl FnOnce(&mut Value),
    ) -> Cluster {
        let stack = KubeStack::load();
        stack.install_crds();
        let cluster = Cluster { stack, dir: tempfile::tempdir().expect("tempdir") };
        let generated = cluster.generate(bin, source, create, clouds);
        cluster.wait_until_unused();
        cluster.clean();
        let read = |rel: &str| {
            std::fs::read_to_string(generated.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
        };
        installer::install(&cluster.stack, &read, edit_infra);
        cluster
    }

    /// `create` on a copy of `source`; its asset directory.
    fn generate(
        &self,
        bin: &Path,
        source: &Path,
        create: &CreateManifests,
        clouds: Option<&Path>,
    ) -> PathBuf {
        let assets = self.dir.path().join("cluster");
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&assets).expect("asset dir");
        std::fs::create_dir_all(&home).expect("home");
        for entry in std::fs::read_dir(source).expect("the source directory") {
            let entry = entry.expect("an entry");
            std::fs::copy(entry.path(), assets.join(entry.file_name())).expect("copy the source");
        }
        let clouds = clouds.map_or_else(|| assets.join("clouds.yaml"), Path::to_path_buf);
        let out = Command::new(bin)
            .args(create.args(assets.to_str().expect("a UTF-8 temp path")))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("OS_CLIENT_CONFIG_FILE", clouds)
            .output()
            .expect("ccm-assets runs");
        assert!(
            out.status.success(),
            "create manifests failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assets
    }

    /// The objects with fixed names that an operator test (tests/it/real_kube_operator.rs) also
    /// uses, by resourceVersion ("-" when absent).
    fn fingerprint(&self) -> Vec<String> {
        [
            ("lease", Some(OPERATOR_NAMESPACE), LEASE),
            ("infrastructures.config.openshift.io", None, "cluster"),
            ("clusteroperators.config.openshift.io", None, "cloud-controller-manager"),
            ("configmap", Some(CCM_NAMESPACE), "cloud-conf"),
            ("namespace", None, CONFIG_NAMESPACE),
        ]
        .into_iter()
        .map(|(kind, namespace, name)| match self.stack.get(kind, namespace, name) {
            Some(object) => object["metadata"]["resourceVersion"].as_str().unwrap_or("?").into(),
            None => "-".to_owned(),
        })
        .collect()
    }

    /// Waits while something else writes those objects (an operator test runs: its operator
    /// renews the Lease every second); objects nothing has written for 8 s are a dead run's,
    /// and are deleted by the clean that follows.
    fn wait_until_unused(&self) {
        let start = Instant::now();
        loop {
            let before = self.fingerprint();
            if before.iter().all(|v| v == "-") {
                return;
            }
            std::thread::sleep(Duration::from_secs(8));
            if self.fingerprint() == before {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(1200),
                "another run has used the operator's objects for 20 minutes"
            );
            eprintln!("operator: another run is using the cluster's operator objects; waiting");
        }
    }

    /// Deletes what the run made (and what an earlier run left).
    fn clean(&self) {
        installer::clean(&self.stack);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.clean();
    }
}

/// A running `ccm-assets operator`, stopped on drop; its log in a file.
pub(crate) struct Operator {
    child: Child,
    log: PathBuf,
}

impl Operator {
    pub(crate) fn start(bin: &Path, kubeconfig: &Path, dir: &Path) -> Operator {
        let log = dir.join("operator.log");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(bin)
            .args(["operator", "--kubeconfig"])
            .arg(kubeconfig)
            .args(["--health-addr", &format!("127.0.0.1:{port}")])
            .args(["--system-ca-bundle", "/nonexistent", "--leader-elect-retry-period", "1s"])
            .env_remove("KUBECONFIG")
            .env("POD_NAME", "operator-bench")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("ccm-assets runs");
        Operator { child, log }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `VmRSS`, `RssAnon` and `RssFile` from /proc, in KiB.
    pub(crate) fn rss(&self) -> Value {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| -> u64 {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap_or_default();
            line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).unwrap_or(0)
        };
        json!({"VmRSS": field("VmRSS:"), "RssAnon": field("RssAnon:"), "RssFile": field("RssFile:")})
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        // SIGTERM releases the Lease; killed if it has not stopped within 10 s.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let start = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value at `p` (0 to 1) of sorted figures.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Seconds as milliseconds, to a tenth.
pub(crate) fn millis(seconds: f64) -> f64 {
    (seconds * 10_000.0).round() / 10.0
}
