//! The controller binary as the benchmarks run it: against the fake API server, the service
//! controller only, its /metrics read without a token; and the waits and figures they share.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fake_kube_apiserver::FakeApiServer;
use testkit::kube::kubeconfig;

use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::ops::Counter;
use crate::real::Real;

const BIN: &str = env!("CARGO_BIN_EXE_openstack-cloud-controller-manager");

pub(crate) struct Controller {
    pub(crate) child: Child,
    pub(crate) port: u16,
    log: std::path::PathBuf,
    /// For /metrics (its certificate is self-signed).
    client: reqwest::Client,
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

impl Controller {
    /// The controller binary, service controller only, against `fake` and the proxy.
    pub(crate) fn start(
        dir: &tempfile::TempDir,
        fake: &FakeApiServer,
        conf: &str,
        flags: &[String],
    ) -> Self {
        let path = dir.path().join("cloud.conf");
        std::fs::write(&path, conf).expect("write cloud.conf");
        Controller::start_at(&path, dir.path(), fake, flags)
    }

    /// [`Controller::start`] with the cloud config at `path` (a mount the caller swaps), its
    /// kubeconfig and log in `dir`.
    pub(crate) fn start_at(
        path: &Path,
        dir: &Path,
        fake: &FakeApiServer,
        flags: &[String],
    ) -> Self {
        let log = dir.join("occm.log");
        let file =
            std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("log file");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut args = vec![
            "--cloud-provider=openstack".to_owned(),
            format!("--cloud-config={}", path.display()),
            format!("--kubeconfig={}", kubeconfig(dir, &fake.url()).display()),
            "--controllers=service".to_owned(),
            "--leader-elect=false".to_owned(),
            "--bind-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            // Its /metrics is read without a token (the fake API server has no TokenReview).
            "--authorization-always-allow-paths=/healthz,/readyz,/metrics".to_owned(),
            "--kube-api-qps=-1".to_owned(),
        ];
        args.extend(flags.iter().cloned());
        let child = Command::new(BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start the controller binary");
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .expect("HTTPS client");
        Controller { child, port, log, client }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its /metrics text, empty until it answers.
    pub(crate) async fn metrics(&self) -> String {
        let url = format!("https://127.0.0.1:{}/metrics", self.port);
        let Ok(response) = self.client.get(url).send().await else { return String::new() };
        response.text().await.unwrap_or_default()
    }

    /// The service controller's reconciles so far (`occm_reconciles_total`, every result);
    /// 0 until /metrics answers.
    pub(crate) async fn reconciles(&self) -> u64 {
        let text = self.metrics().await;
        text.lines()
            .filter(|l| l.starts_with("occm_reconciles_total{controller=\"service\","))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Waits until `n` service reconciles have ended, at most `limit`; returns the count.
    pub(crate) async fn until_reconciles(&self, n: u64, limit: Duration) -> u64 {
        let deadline = Instant::now() + limit;
        loop {
            let done = self.reconciles().await;
            if done >= n {
                return done;
            }
            assert!(
                Instant::now() < deadline,
                "{done} of {n} reconciles after {limit:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// `purge --cluster-name=cluster` with the cloud config and kubeconfig a [`Controller`] of
/// `dir` used: the time it took and its stdout lines (it must exit 0).
pub(crate) fn purge(dir: &Path, fake: &FakeApiServer, cluster: &str) -> (Duration, Vec<String>) {
    let started = Instant::now();
    let out = Command::new(BIN)
        .arg("purge")
        .arg(format!("--cloud-config={}", dir.join("cloud.conf").display()))
        .arg(format!("--kubeconfig={}", kubeconfig(dir, &fake.url()).display()))
        .arg(format!("--cluster-name={cluster}"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("run purge");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "purge: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (took, stdout.lines().map(str::to_owned).collect())
}

/// Waits until no request arrived for `quiet`, at most `limit` (only while no resync is due).
pub(crate) async fn settle(counter: &Counter, quiet: Duration, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut seen = counter.hits().len();
    let mut since = Instant::now();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = counter.hits().len();
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= quiet {
            return;
        }
    }
    panic!("requests still arriving after {limit:?}");
}

/// The `p` quantile (0 to 1) of `sorted`, nearest rank.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// A number from the environment, else `default`.
pub(crate) fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The stack with Octavia, behind the counting proxy; what the run makes is swept when it ends
/// (after a panic too).
pub(crate) struct Octavia {
    pub(crate) real: Real,
    /// The stack's internal subnet (`[LoadBalancer] subnet-id`).
    pub(crate) subnet: String,
    _sweep: Sweep,
}

impl Octavia {
    pub(crate) async fn start() -> Octavia {
        let sweep = Sweep::start();
        let env = StackEnv::load();
        assert!(env.get("OPENSTACK_LOADBALANCER_URL").is_some(), "the stack runs no Octavia");
        let subnet = env["OPENSTACK_INTERNAL_SUBNET_ID"].to_owned();
        let real = Real::start(env).await;
        Octavia { real, subnet, _sweep: sweep }
    }

    /// A cloud config logging in through the proxy as the stack's member, with `lb` after
    /// `[LoadBalancer] subnet-id`.
    pub(crate) fn conf(&self, lb: &str) -> String {
        let [user, password, project, domain] = self.real.member();
        format!(
            "[Global]\nauth-url = {}\nusername = {user}\npassword = {password}\n\
             tenant-name = {project}\ndomain-name = {domain}\nregion = RegionOne\n\n\
             [LoadBalancer]\nsubnet-id = {}\n{lb}",
            self.real.auth_url(),
            self.subnet
        )
    }
}
