//! The real binary: flags, `--check-config`, and a start with Keystone unreachable.

use std::process::Command;
use std::time::Duration;

use fake_kube_apiserver::FakeApiServer;

use crate::support::{BIN, Process, free_port, https, start_ccm};

#[test]
fn unknown_flag_fails_naming_it() {
    let out =
        Command::new(BIN).args(["--cloud-provider=openstack", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[test]
fn check_config_prints_redacted_config_and_exits_by_validity() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.conf");
    std::fs::write(&good, "[Global]\nauth-url = http://k:5000/v3\nusername = u\npassword = \"s3cr;t\"\ntenant-name = p\n").unwrap();
    let out =
        Command::new(BIN).args(["--check-config", "--cloud-config"]).arg(&good).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("password = <redacted>") && !stdout.contains("s3cr"), "{stdout}");
    let bad = dir.path().join("bad.conf");
    std::fs::write(
        &bad,
        "[Global]\nauth-url = http://k:5000/v3\npassword = x\n[Metadata]\nrequest-timeout = 60\n",
    )
    .unwrap();
    let out =
        Command::new(BIN).args(["--check-config", "--cloud-config"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[Metadata] request-timeout: \"60\" is not a duration"), "{stderr}");
}

/// `purge` on bad input exits 2 before any request, saying why and that nothing changed: an
/// empty cluster name, a cloud config that is missing or wrong (naming the file and the key), a
/// Secret named with no kubeconfig to read it, no `--cluster-name`. Keystone here is a port
/// where nothing listens, so a run that got as far as a login would fail otherwise (exit 1).
#[test]
fn purge_refuses_bad_input_before_any_change() {
    let dir = tempfile::tempdir().unwrap();
    let unreachable = format!("http://127.0.0.1:{}/v3", free_port());
    let good = dir.path().join("good.conf");
    let creds = format!(
        "[Global]\nauth-url = {unreachable}\nusername = u\npassword = p\ntenant-name = t\n"
    );
    std::fs::write(&good, &creds).unwrap();
    let bad = dir.path().join("bad.conf");
    std::fs::write(&bad, format!("{creds}[LoadBalancer]\nmonitor-delay = 5\n")).unwrap();
    let secret = dir.path().join("secret.conf");
    std::fs::write(&secret, "[Global]\nsecret-name = cloud\nsecret-namespace = kube-system\n")
        .unwrap();
    let missing = dir.path().join("missing.conf");
    let purge = |conf: &std::path::Path, cluster: &str| {
        let out = Command::new(BIN)
            .arg("purge")
            .arg(format!("--cloud-config={}", conf.display()))
            .arg(format!("--cluster-name={cluster}"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "nothing on stdout: {stderr}");
        (out.status.code(), stderr)
    };
    let refused = "openstack-cloud-controller-manager purge: refused, nothing changed: ";
    let cases = [
        (good.as_path(), " ", "--cluster-name is empty".to_owned()),
        (missing.as_path(), "infra", missing.display().to_string()),
        (
            bad.as_path(),
            "infra",
            "[LoadBalancer] monitor-delay: \"5\" is not a duration".to_owned(),
        ),
    ];
    for (conf, cluster, why) in cases {
        let (code, stderr) = purge(conf, cluster);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(refused) && stderr.contains(&why), "{why}: {stderr}");
    }
    // No --kubeconfig: the Secret cannot be read.
    let (code, stderr) = purge(&secret, "infra");
    assert_eq!(code, Some(2), "{stderr}");
    let why = "[Global] secret-name names the credentials Secret kube-system/cloud: reading it \
               needs --kubeconfig";
    assert!(stderr.contains(refused) && stderr.contains(why), "{stderr}");
    // The flag is required.
    let out = Command::new(BIN).args(["purge", "--cloud-config"]).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cluster-name"));
}

/// The binary against a fake API server, its Keystone a port where nothing listens and its
/// password `fixture-pass-4711` (which must never reach the log).
async fn start_with_keystone_down(
    extra: &[&str],
) -> (FakeApiServer, Process, u16, tempfile::TempDir) {
    let fake = FakeApiServer::start().await.unwrap();
    let keystone = free_port();
    let conf = format!(
        "[Global]\nauth-url = http://127.0.0.1:{keystone}/v3\nusername = u\npassword = fixture-pass-4711\ntenant-name = p\n"
    );
    let (process, port, dir) = start_ccm(&fake.url(), &conf, extra);
    (fake, process, port, dir)
}

#[tokio::test]
async fn sigterm_during_start_up_is_a_clean_exit() {
    // Signalled as soon as the configuration is read, before the server, the clients and the
    // leader election are started: the handlers were installed only after all of that, and
    // such a SIGTERM ended the process by the default action.
    let (_fake, mut process, _port, _dir) = start_with_keystone_down(&[]).await;
    let code = process.terminate_on("configuration loaded").await;
    assert_eq!(code, Some(0), "log:\n{}", process.log());
    process.wait_line("signal received; shutting down", Duration::from_secs(5)).await;
}

#[tokio::test]
async fn keystone_unreachable_at_start_keeps_the_process_up_and_not_ready() {
    let (fake, mut process, port, _dir) =
        start_with_keystone_down(&["--leader-elect-retry-period=100ms"]).await;
    process.wait_line("cannot authenticate to OpenStack", Duration::from_secs(20)).await;
    process.wait_line("acquired lease", Duration::from_secs(20)).await;
    let client = https();
    let get = |path: &str| client.get(format!("https://127.0.0.1:{port}{path}")).send();
    assert_eq!(get("/healthz").await.unwrap().status(), 200);
    assert_eq!(get("/readyz").await.unwrap().status(), 503);
    let metrics = get("/metrics").await.unwrap().text().await.unwrap();
    assert!(metrics.contains("occm_openstack_api_requests_total{service=\"identity\",operation=\"authenticate\",result=\"connection\"}"), "{metrics}");
    let lease = fake
        .get("coordination.k8s.io/v1", "leases", "kube-system", "cloud-controller-manager")
        .unwrap();
    assert!(lease["spec"]["holderIdentity"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(process.terminate().await, Some(0), "SIGTERM is a clean exit");
    let lease = fake
        .get("coordination.k8s.io/v1", "leases", "kube-system", "cloud-controller-manager")
        .unwrap();
    assert!(
        lease["spec"].get("holderIdentity").is_none(),
        "the lease is released on exit: {lease}"
    );
    assert!(!process.log().contains("fixture-pass-4711"), "a password reached the log");
}

#[tokio::test]
async fn a_refused_request_is_said_once_fails_readyz_and_clears_when_allowed() {
    let fake = FakeApiServer::start().await.unwrap();
    // The lease cannot be created: RBAC's 403, as with the grant removed.
    fake.refuse("POST", "/leases");
    let keystone = free_port();
    let conf = format!(
        "[Global]\nauth-url = http://127.0.0.1:{keystone}/v3\nusername = u\npassword = p\ntenant-name = p\n"
    );
    let (mut process, port, _dir) =
        start_ccm(&fake.url(), &conf, &["--leader-elect-retry-period=100ms"]);
    let line = "forbidden: cannot create coordination.k8s.io/leases:";
    process.wait_line(line, Duration::from_secs(20)).await;
    let client = https();
    let readyz = async || {
        let response = client.get(format!("https://127.0.0.1:{port}/readyz")).send().await.unwrap();
        response.text().await.unwrap()
    };
    assert!(readyz().await.contains(&format!("kubernetes: {line}")), "{}", readyz().await);
    // Retried every 100 ms: still one line.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let said = process.lines.lock().unwrap().iter().filter(|l| l.contains(line)).count();
    assert_eq!(said, 1, "one line, not one per retry:\n{}", process.log());
    fake.allow_all();
    process.wait_line("acquired lease", Duration::from_secs(20)).await;
    process
        .wait_line("allowed again: create coordination.k8s.io/leases", Duration::from_secs(5))
        .await;
    // Keystone is still down: not ready, but no longer for Kubernetes.
    assert!(!readyz().await.contains("kubernetes:"), "{}", readyz().await);
    assert_eq!(process.terminate().await, Some(0));
}
