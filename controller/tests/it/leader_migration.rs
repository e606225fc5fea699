//! Leader migration (KEP-2436), the real binary against the fake API server and the scale
//! replay of Nova: a test-side holder of the migration lease stands in for the old
//! kube-controller-manager.

use std::process::Command;
use std::time::Duration;

use fake_kube_apiserver::FakeApiServer;
use serde_json::{Value, json};
use testkit::kube::NodeFixture;
use testkit::sweep::Sweep;

use crate::replay::{self, Replay};
use crate::support::{BIN, https, requests, start_ccm};

const MIGRATION: &str = "cloud-provider-extraction-migration";
const OLD_MANAGER: &str = "kube-controller-manager";

fn lease(holder: &str, seconds: i64) -> Value {
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": MIGRATION, "namespace": "kube-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": seconds,
                 "acquireTime": now, "renewTime": now},
    })
}

fn holder(fake: &FakeApiServer, name: &str) -> Option<String> {
    let lease = fake.get("coordination.k8s.io/v1", "leases", "kube-system", name)?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// `occm_leader{lease=…}` from /metrics.
async fn leading(port: u16, lease: &str) -> Option<u64> {
    let url = format!("https://127.0.0.1:{port}/metrics");
    let text = https().get(url).send().await.ok()?.text().await.ok()?;
    let prefix = format!("occm_leader{{lease=\"{lease}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
}

/// The Nova replay with one NotReady node (so every lifecycle tick lists the servers), the
/// fake API server, and a cloud.conf for the replay.
async fn lifecycle_scene() -> (Replay, FakeApiServer, String) {
    let replay = Replay::start(1).await;
    let fake = FakeApiServer::start().await.unwrap();
    let mut node = NodeFixture::initialized(&replay::server_name(0))
        .provider_id(&format!("openstack:///{}", replay::server_id(0)))
        .build();
    node["status"]["conditions"] = json!([{"type": "Ready", "status": "Unknown"}]);
    fake.create("v1", "nodes", "", node);
    let conf = format!(
        "[Global]\nauth-url = {}\nusername = ccm-user\npassword = replay-pass\ntenant-name = \
         ccm\ndomain-name = Default\n",
        replay.auth_url()
    );
    (replay, fake, conf)
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "not within 30 s: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn a_migration_file_without_the_flag_is_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("cloud.conf");
    std::fs::write(&conf, "[Global]\nauth-url = http://127.0.0.1:1/v3\n").unwrap();
    let out = Command::new(BIN)
        .args(["--cloud-provider=openstack", "--leader-migration-config=/etc/m.yaml"])
        .arg(format!("--cloud-config={}", conf.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--leader-migration-config /etc/m.yaml")
            && stderr.contains("without --enable-leader-migration"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_migrated_controller_runs_only_while_this_process_holds_the_migration_lease() {
    let (_replay, fake, conf) = lifecycle_scene().await;
    // The old kube-controller-manager holds the migration lease.
    fake.create("coordination.k8s.io/v1", "leases", "kube-system", lease(OLD_MANAGER, 3600));
    let flags = [
        "--controllers=cloud-node-lifecycle",
        "--enable-leader-migration",
        "--leader-elect-retry-period=200ms",
        "--node-monitor-period=500ms",
    ];
    let (mut process, port, _dir) = start_ccm(&fake.url(), &conf, &flags);
    process.wait_line("waiting for the migration lease", Duration::from_secs(30)).await;

    // The main lease is ours, the migration lease theirs: no lifecycle tick here.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(leading(port, "cloud-controller-manager").await, Some(1));
    assert_eq!(leading(port, MIGRATION).await, Some(0));
    assert_eq!(requests(port, "compute", "server_list").await, 0, "{}", process.log());
    assert_eq!(holder(&fake, MIGRATION).as_deref(), Some(OLD_MANAGER));

    // The old manager stops (and releases, as client-go's ReleaseOnCancel does): the lease and
    // the controller move here.
    fake.patch(
        "coordination.k8s.io/v1",
        "leases",
        "kube-system",
        MIGRATION,
        json!({"spec": {"holderIdentity": null, "leaseDurationSeconds": 1}}),
    );
    process.wait_line("migration lease held: starting", Duration::from_secs(30)).await;
    eventually("a lifecycle tick", async || requests(port, "compute", "server_list").await > 0)
        .await;
    assert_eq!(leading(port, MIGRATION).await, Some(1));
    let ours = holder(&fake, MIGRATION).unwrap();
    assert_eq!(holder(&fake, "cloud-controller-manager"), Some(ours.clone()));

    // Rolled back: this process stops and hands both leases back at once, the migration one
    // first, so the old manager takes it without waiting for an expiry.
    assert_eq!(process.terminate().await, Some(0), "{}", process.log());
    assert_eq!(holder(&fake, MIGRATION), None, "the migration lease is released");
    assert_eq!(holder(&fake, "cloud-controller-manager"), None);
}

#[tokio::test]
async fn a_controller_the_file_gives_to_the_other_component_never_runs_here() {
    let (_replay, fake, conf) = lifecycle_scene().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("migration.yaml");
    std::fs::write(
        &file,
        "apiVersion: controllermanager.config.k8s.io/v1\nkind: LeaderMigrationConfiguration\n\
         leaderName: cloud-provider-extraction-migration\ncontrollerLeaders:\n\
         - name: cloud-node-lifecycle-controller\n  component: kube-controller-manager\n",
    )
    .unwrap();
    let file_flag = format!("--leader-migration-config={}", file.display());
    let flags = [
        "--controllers=cloud-node-lifecycle",
        "--enable-leader-migration",
        &file_flag,
        "--leader-elect-retry-period=200ms",
        "--node-monitor-period=500ms",
    ];
    let (process, port, _dir) = start_ccm(&fake.url(), &conf, &flags);
    process
        .wait_line("gives this controller to the other component", Duration::from_secs(30))
        .await;
    // Both leases held (nobody else wants the migration one), still no lifecycle tick.
    eventually("the migration lease", async || leading(port, MIGRATION).await == Some(1)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(requests(port, "compute", "server_list").await, 0, "{}", process.log());
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn the_service_controller_moves_with_the_migration_lease_and_back() {
    let _sweep = Sweep::start();
    use testkit::cluster::Cluster;
    use testkit::kube::load_balancer_service;
    use testkit::stack::StackEnv;

    use crate::load_balancer::{ingress_ip, lb_list, node};
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("mig-a", "10.0.0.201"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "moved", &[(80, 30201)]));
    fake.create("coordination.k8s.io/v1", "leases", "kube-system", lease(OLD_MANAGER, 3600));
    let cluster = format!("mig{}", std::process::id());
    testkit::sweep::watch(&cluster); // what its CCM makes carries the cluster name
    let conf = format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = {}\n\n[LoadBalancer]\nsubnet-id = \
         {}\n",
        env["OPENSTACK_CLOUDS_YAML"],
        env["OPENSTACK_CLOUD_APPCRED"],
        env["OPENSTACK_INTERNAL_SUBNET_ID"]
    );
    let cluster_flag = format!("--cluster-name={cluster}");
    let flags = [
        "--controllers=service",
        &cluster_flag,
        "--enable-leader-migration",
        "--leader-elect-retry-period=200ms",
    ];
    let (mut process, port, _dir) = start_ccm(&fake.url(), &conf, &flags);
    let lease_holder = || {
        let lease = fake.get("coordination.k8s.io/v1", "leases", "kube-system", MIGRATION);
        lease.and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
    };
    process.wait_line("waiting for the migration lease", Duration::from_secs(60)).await;

    // The old manager holds the service controller: nothing of ours touches the Service.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let name = format!("kube_service_{cluster}_shop_moved");
    let svc = fake.get("v1", "services", "shop", "moved").unwrap();
    assert!(svc["metadata"].get("finalizers").is_none(), "{svc}\n{}", process.log());
    assert_eq!(lb_list(&env, &name).await, json!([]));
    assert_eq!(leading(port, MIGRATION).await, Some(0));
    assert_eq!(lease_holder().as_deref(), Some(OLD_MANAGER));

    // It stops: the lease, and the service controller, move here.
    let release = json!({"spec": {"holderIdentity": null, "leaseDurationSeconds": 1}});
    fake.patch("coordination.k8s.io/v1", "leases", "kube-system", MIGRATION, release);
    ingress_ip(&fake, &process, "shop", "moved").await;
    assert_eq!(leading(port, MIGRATION).await, Some(1));
    let events = fake.list("events.k8s.io/v1", "events");
    let ours: Vec<&Value> = events
        .iter()
        .filter(|e| e["regarding"]["name"] == "moved")
        .map(|e| &e["reportingController"])
        .collect();
    assert!(!ours.is_empty() && ours.iter().all(|c| *c == "service-lb-controller"), "{ours:?}");

    // Rolled back: stopped, it hands the lease back at once; the old manager takes it.
    assert_eq!(process.terminate().await, Some(0));
    assert_eq!(lease_holder(), None);
    fake.patch(
        "coordination.k8s.io/v1",
        "leases",
        "kube-system",
        MIGRATION,
        json!({"spec": {"holderIdentity": OLD_MANAGER, "leaseDurationSeconds": 3600}}),
    );
    assert_eq!(lease_holder().as_deref(), Some(OLD_MANAGER));
    // Clean up with a controller of our own again (the lease is the old manager's: drop it).
    fake.delete("coordination.k8s.io/v1", "leases", "kube-system", MIGRATION);
    let (process, _port, _dir) =
        start_ccm(&fake.url(), &conf, &[flags[0], flags[1], "--leader-elect=false"]);
    crate::load_balancer::delete_service(&fake, &process, "shop", "moved").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
}
