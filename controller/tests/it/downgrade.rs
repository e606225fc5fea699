//! Going back to the in-tree provider and forth again (ignored by default; scripts/test.sh runs
//! it): `openstack-cloud-controller-manager migrate-load-balancers` against the real Octavia
//! and the fake API server, with the controller stopped in between as a downgrade stops it.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{delete_service, ingress_ip, lb_list, node, start_with, until};
use crate::support::{BIN, scene};
use crate::upgrade::{ANNOTATION, in_tree_name};

/// Runs `migrate-load-balancers` with the files of a controller run in `dir` (its cloud.conf and
/// kubeconfig): its exit code and its stdout lines, sorted.
fn migrate(dir: &Path, cluster: &str, extra: &[&str]) -> (Option<i32>, Vec<String>) {
    let out = Command::new(BIN)
        .arg("migrate-load-balancers")
        .arg(format!("--cloud-config={}", dir.join("cloud.conf").display()))
        .arg(format!("--kubeconfig={}", dir.join("kubeconfig").display()))
        .arg(format!("--cluster-name={cluster}"))
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    lines.sort();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("error"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), lines)
}

fn line<'a>(lines: &'a [String], service: &str) -> &'a str {
    let prefix = format!("shop/{service}: ");
    lines.iter().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("{lines:?}"))
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn load_balancers_go_to_the_in_tree_names_and_back_with_their_ids_and_addresses() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("down-a", "10.0.0.191"));
    let solo = fake.create(
        "v1",
        "services",
        "shop",
        load_balancer_service("shop", "solo", &[(80, 30191)]),
    );
    let owner = load_balancer_service("shop", "owner", &[(80, 30192)]);
    fake.create("v1", "services", "shop", owner);
    let conf = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (mut process, cluster, dir) = start_with(&env, &fake, cloud, "down", &conf);
    let fip = ingress_ip(&fake, &process, "shop", "solo").await;
    ingress_ip(&fake, &process, "shop", "owner").await;
    let ours = format!("kube_service_{cluster}_shop_solo");
    let made = lb_list(&env, &ours).await[0].clone();
    // A second Service joins the owner's load balancer: that one cannot be handed back.
    let shared_id =
        lb_list(&env, &format!("kube_service_{cluster}_shop_owner")).await[0]["id"].clone();
    let mut joiner = load_balancer_service("shop", "joiner", &[(8080, 30193)]);
    joiner["metadata"]["annotations"] = json!({ANNOTATION: shared_id});
    fake.create("v1", "services", "shop", joiner);
    ingress_ip(&fake, &process, "shop", "joiner").await;
    let fip_port_before = fip_port(&env, &fip).await;
    assert!(fip_port_before.is_string());
    // The downgrade stops this controller.
    assert_eq!(process.terminate().await, Some(0));
    let in_tree = in_tree_name(solo["metadata"]["uid"].as_str().unwrap());

    // A dry run says what it would do and changes nothing.
    let (code, lines) = migrate(dir.path(), &cluster, &["--to=in-tree", "--dry-run"]);
    assert_eq!(code, Some(1), "the shared load balancer is not handed back: {lines:?}");
    assert!(line(&lines, "solo").ends_with("(dry run: nothing changed)"), "{lines:?}");
    assert_eq!(lb_list(&env, &ours).await[0]["id"], made["id"]);

    let (code, lines) = migrate(dir.path(), &cluster, &["--to=in-tree"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        line(&lines, "solo"),
        format!("load balancer {}: {ours:?} -> {in_tree:?}", made["id"].as_str().unwrap())
    );
    assert!(line(&lines, "owner").contains("also serves 1 other"), "{lines:?}");
    assert!(line(&lines, "joiner").contains("no sharing"), "{lines:?}");
    // What the in-tree provider looks up: the same load balancer, VIP and floating IP.
    let handed = lb_list(&env, &in_tree).await;
    let [handed] = handed.as_array().unwrap().as_slice() else { panic!("{handed}") };
    assert_eq!((&handed["id"], &handed["vip_address"]), (&made["id"], &made["vip_address"]));
    assert_eq!(handed["description"], format!("Kubernetes external service {in_tree}"));
    assert_eq!(lb_list(&env, &ours).await, json!([]));
    assert_eq!(fip_port(&env, &fip).await, fip_port_before, "the floating IP moved");
    // Safe to run twice.
    let (_, again) = migrate(dir.path(), &cluster, &["--to=in-tree"]);
    assert!(line(&again, "solo").contains("already named"), "{again:?}");

    // Back to this controller without --to external: it knows the load balancer under the
    // in-tree name (and now by the annotation), makes no second one.
    let (mut process, _, dir) = start_with(&env, &fake, cloud, "down", &conf);
    until("the annotation on solo", &process, async || {
        let svc = fake.get("v1", "services", "shop", "solo")?;
        (svc["metadata"]["annotations"][ANNOTATION] == made["id"]).then_some(())
    })
    .await;
    assert_eq!(lb_list(&env, &ours).await, json!([]), "{}", process.log());
    assert_eq!(ingress_ip(&fake, &process, "shop", "solo").await, fip);
    assert_eq!(process.terminate().await, Some(0));

    // --to external: our name again, nothing else changes.
    let (code, lines) = migrate(dir.path(), &cluster, &["--to=external"]);
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(line(&lines, "solo").ends_with(&format!("{in_tree:?} -> {ours:?}")), "{lines:?}");
    let back = lb_list(&env, &ours).await[0].clone();
    assert_eq!((&back["id"], &back["vip_address"]), (&made["id"], &made["vip_address"]));
    let (process, _, _dir) = start_with(&env, &fake, cloud, "down", &conf);
    assert_eq!(ingress_ip(&fake, &process, "shop", "solo").await, fip);
    for name in ["joiner", "owner", "solo"] {
        delete_service(&fake, &process, "shop", name).await;
    }
    assert_eq!(lb_list(&env, &ours).await, json!([]), "{}", process.log());
    let fips = scene(&env, &["floating-ip-list"]).await;
    let addresses: Vec<&Value> =
        fips.as_array().unwrap().iter().map(|f| &f["floating_ip_address"]).collect();
    assert!(!addresses.contains(&&json!(fip)), "the floating IP is left");
}

/// The port the floating IP `address` is on (its VIP's).
async fn fip_port(env: &StackEnv, address: &str) -> Value {
    let fips = scene(env, &["floating-ip-list"]).await;
    let fip = fips.as_array().unwrap().iter().find(|f| f["floating_ip_address"] == address);
    fip.map(|f| f["port_id"].clone()).unwrap_or(Value::Null)
}
