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

use crate::load_balancer::OWNER_TAG;
use crate::load_balancer::{delete_service, ingress_ip, lb_list, node, start_with, until};
use crate::support::{process_bin, scene};
use crate::upgrade::{ANNOTATION, in_tree_name};

/// Runs `migrate-load-balancers` with the files of a controller run in `dir` (its cloud.conf and
/// kubeconfig): its exit code and its stdout lines, sorted.
fn migrate(dir: &Path, cluster: &str, extra: &[&str]) -> (Option<i32>, Vec<String>) {
    let (code, lines, stderr) = migrate_as(dir, Some(cluster), extra);
    assert!(!stderr.contains("error"), "{stderr}");
    (code, lines)
}

/// [`migrate`] with `--cluster-name` only when `cluster` is given: also its stderr.
fn migrate_as(
    dir: &Path,
    cluster: Option<&str>,
    extra: &[&str],
) -> (Option<i32>, Vec<String>, String) {
    let out = Command::new(process_bin())
        .arg("migrate-load-balancers")
        .arg(format!("--cloud-config={}", dir.join("cloud.conf").display()))
        .arg(format!("--kubeconfig={}", dir.join("kubeconfig").display()))
        .args(cluster.map(|c| format!("--cluster-name={c}")))
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    lines.sort();
    (out.status.code(), lines, String::from_utf8_lossy(&out.stderr).into_owned())
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

/// The downgrade as a generated cluster runs it: the CCM has `--cluster-name=<infraID>`, the
/// operator runs the command without it (or with upstream's default). Before the fix every
/// Service printed `no load balancer`, the adopted in-tree one `also serves 1 other Service(s)`,
/// and `--to in-tree` exited 0: the in-tree provider then made second load balancers.
#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn the_cluster_name_comes_from_our_tags_and_a_contradicting_one_changes_nothing() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("named-a", "10.0.0.194"));
    let solo = load_balancer_service("shop", "solo", &[(80, 30194)]);
    let solo = fake.create("v1", "services", "shop", solo);
    // What the in-tree provider left for "legacy", adopted by our controller below.
    let legacy = load_balancer_service("shop", "legacy", &[(80, 30195)]);
    let legacy = fake.create("v1", "services", "shop", legacy);
    let uid = |svc: &Value| svc["metadata"]["uid"].as_str().unwrap().to_owned();
    let made = scene(
        &env,
        &["made-lb-create", "--by", "in-tree", "--namespace", "shop", "--service", "legacy"]
            .into_iter()
            .chain(["--uid", &uid(&legacy), "--port", "80:30195", "--floating-ip"])
            .collect::<Vec<_>>(),
    )
    .await;
    let address = made["floating_ip"]["floating_ip_address"].as_str().unwrap();
    let status =
        json!({"status": {"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}}});
    fake.patch("v1", "services", "shop", "legacy", status);
    let conf = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (mut process, cluster, dir) = start_with(&env, &fake, cloud, "named", &conf);
    assert_ne!(cluster, "kubernetes");
    ingress_ip(&fake, &process, "shop", "solo").await;
    until("legacy adopted", &process, async || {
        let svc = fake.get("v1", "services", "shop", "legacy")?;
        let lbs = lb_list(&env, made["name"].as_str()?).await;
        let tagged = lbs[0]["tags"].as_array()?.contains(&json!(OWNER_TAG));
        (svc["metadata"]["annotations"][ANNOTATION] == made["id"] && tagged).then_some(())
    })
    .await;
    assert_eq!(process.terminate().await, Some(0));
    let ours = format!("kube_service_{cluster}_shop_solo");
    let solo_id = lb_list(&env, &ours).await[0]["id"].clone();

    // Upstream's default name contradicts the tags: refused, nothing renamed.
    let (code, lines, stderr) = migrate_as(dir.path(), Some("kubernetes"), &["--to=in-tree"]);
    assert_eq!(code, Some(2), "{lines:?} {stderr}");
    assert!(lines.is_empty(), "{lines:?}");
    assert!(stderr.contains("refused, nothing changed"), "{stderr}");
    assert!(stderr.contains(&format!("tagged for cluster {cluster:?}")), "{stderr}");
    assert!(stderr.contains("--cluster-name is \"kubernetes\""), "{stderr}");
    assert_eq!(lb_list(&env, &ours).await[0]["id"], solo_id);

    // Without --cluster-name: the tags name the cluster; the adopted in-tree load balancer is
    // its Service's own, not shared.
    let (code, lines, stderr) = migrate_as(dir.path(), None, &["--to=in-tree"]);
    assert_eq!(code, Some(0), "{lines:?} {stderr}");
    assert!(stderr.contains(&format!("cluster name {cluster:?} (our tags")), "{stderr}");
    let in_tree = in_tree_name(&uid(&solo));
    assert!(line(&lines, "solo").ends_with(&format!("{ours:?} -> {in_tree:?}")), "{lines:?}");
    assert!(line(&lines, "legacy").contains("already named"), "{lines:?}");
    assert_eq!(lb_list(&env, &in_tree).await[0]["id"], solo_id);

    // A Service with an address and no load balancer of that cluster fails the run.
    let ghost = load_balancer_service("shop", "ghost", &[(80, 30196)]);
    fake.create("v1", "services", "shop", ghost);
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}]}}});
    fake.patch("v1", "services", "shop", "ghost", status);
    let (code, lines, stderr) = migrate_as(dir.path(), None, &["--to=in-tree"]);
    assert_eq!(code, Some(1), "{lines:?} {stderr}");
    assert_eq!(
        line(&lines, "ghost"),
        format!(
            "failed: has an address but no load balancer of cluster {cluster:?} was found: is \
             --cluster-name right?"
        )
    );
    fake.delete("v1", "services", "shop", "ghost");

    // Back, and everything goes with its Service.
    let (code, lines, _) = migrate_as(dir.path(), None, &["--to=external"]);
    assert_eq!(code, Some(0), "{lines:?}");
    let (process, _, _dir) = start_with(&env, &fake, cloud, "named", &conf);
    for name in ["legacy", "solo"] {
        delete_service(&fake, &process, "shop", name).await;
    }
    assert_eq!(lb_list(&env, &ours).await, json!([]), "{}", process.log());
    assert_eq!(lb_list(&env, made["name"].as_str().unwrap()).await, json!([]));
}
