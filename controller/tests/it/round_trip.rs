//! Upgrade, downgrade, upgrade again (ignored by default; scripts/test.sh runs it), issue 36:
//! what the in-tree provider made (`openstack_scene.py made-lb-create --by in-tree`, its
//! floating IP without a description) is adopted by this controller, handed back with
//! `migrate-load-balancers --to in-tree` and taken again with `--to external`, which renames the
//! load balancer; the controller restarted; the Service deleted. Nothing may stay: the floating
//! IP used to (detached, kept for good), as its ownership rested on the load balancer's in-tree
//! name. Against the real Octavia and Neutron, with the fake API server.

use std::path::Path;
use std::process::Command;

use axum::http::Method;
use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{
    OWNER_TAG, WAIT, delete_service, ingress_ip, lb_list, node, start_with, until,
};
use crate::proxy::Front;
use crate::support::{BIN, Process, scene};
use crate::upgrade::{ANNOTATION, groups_named, in_tree_name};

/// The kinds of objects the round trip must leave as it found them.
const KINDS: &[&str] =
    &["loadbalancer", "floating-ip", "security-group", "security-group-rule", "port"];

/// The project's objects of [`KINDS`] (`scripts/openstack/inventory.py`: kind, id, name, and
/// the text a test may have marked them with).
fn inventory() -> Vec<Value> {
    let file = tempfile::NamedTempFile::new().unwrap();
    let env_file = std::env::var(testkit::stack::VAR).expect("StackEnv::load checked it");
    let out = Command::new(testkit::repo().join("scripts/openstack/inventory.py"))
        .arg("save")
        .arg(file.path())
        .args(["--env", &env_file])
        .output()
        .unwrap();
    assert!(out.status.success(), "inventory.py: {}", String::from_utf8_lossy(&out.stderr));
    let all: Vec<Value> = serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
    all.into_iter().filter(|o| KINDS.iter().any(|k| o["kind"] == *k)).collect()
}

/// What `after` holds that `before` did not and that is this test's: its ID is one of `ids`,
/// or its name, description or a tag holds one of them (the cluster name, the Service's UID, a
/// load balancer's ID in its VIP port's name). Other tests run beside this one, so what they
/// made meanwhile is not counted.
fn new_of_this_test(before: &[Value], after: &[Value], ids: &[&str]) -> Vec<Value> {
    let seen: Vec<&Value> = before.iter().map(|o| &o["id"]).collect();
    let ours = |o: &Value| {
        let text = o["text"].as_array().into_iter().flatten().filter_map(Value::as_str);
        let mut text = text;
        ids.iter().any(|id| o["id"] == *id) || text.any(|t| ids.iter().any(|id| t.contains(id)))
    };
    after.iter().filter(|o| !seen.contains(&&o["id"]) && ours(o)).cloned().collect()
}

/// The floating IP of ID `id`, if the project still has it.
async fn floating_ip(env: &StackEnv, id: &str) -> Option<Value> {
    let fips = scene(env, &["floating-ip-list"]).await;
    fips.as_array()?.iter().find(|f| f["id"] == id).cloned()
}

fn tagged(object: &Value, tag: &str) -> bool {
    object["tags"].as_array().is_some_and(|tags| tags.contains(&json!(tag)))
}

/// `migrate-load-balancers --to <to>` with the files of a controller run in `dir` (its
/// cloud.conf and kubeconfig) and `--cluster-name` given: its output, once it succeeded. Run
/// without blocking the test's runtime, which serves the fronts it may go through.
async fn migrate(dir: &Path, cluster: &str, to: &str) -> String {
    let out = tokio::process::Command::new(BIN)
        .arg("migrate-load-balancers")
        .arg(format!("--to={to}"))
        .arg(format!("--cloud-config={}", dir.join("cloud.conf").display()))
        .arg(format!("--kubeconfig={}", dir.join("kubeconfig").display()))
        .arg(format!("--cluster-name={cluster}"))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, out).await.expect("migrate-load-balancers ends").unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "migrate-load-balancers --to={to}:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

/// The in-tree provider's load balancer for `shop/<name>` with one port and a floating IP
/// (with `group`, its security-group layout too, `member_port` carrying the nodes' group).
async fn made_by_in_tree(
    env: &StackEnv,
    name: &str,
    uid: &str,
    port: &str,
    member: &str,
    group: Option<&str>,
) -> Value {
    let mut args = vec!["made-lb-create", "--by", "in-tree", "--namespace", "shop"];
    args.extend(["--service", name, "--uid", uid, "--port", port, "--member", member]);
    args.push("--floating-ip");
    if let Some(member_port) = group {
        args.extend(["--security-group", "--member-port", member_port]);
    }
    scene(env, &args).await
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn issue_36_an_in_tree_floating_ip_goes_with_its_service_after_a_downgrade_and_upgrade() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let before = inventory();
    let member = "10.0.0.223";
    let port = scene(&env, &["port-create", "--fixed-ip", member]).await;
    let port_id = port["id"].as_str().unwrap().to_owned();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("trip-a", member));
    let svc = load_balancer_service("shop", "trip", &[(80, 30223)]);
    let svc = fake.create("v1", "services", "shop", svc);
    let uid = svc["metadata"]["uid"].as_str().unwrap().to_owned();
    let made = made_by_in_tree(&env, "trip", &uid, "80:30223", member, Some(&port_id)).await;
    let fip = made["floating_ip"].clone();
    let (fip_id, address) = (fip["id"].as_str().unwrap(), &fip["floating_ip_address"]);
    let status = json!({"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}});
    fake.patch("v1", "services", "shop", "trip", json!({"status": status}));
    let (lb_id, in_tree) = (made["id"].as_str().unwrap(), in_tree_name(&uid));
    let group_name = format!("lb-sg-{uid}-shop-trip");
    let conf = format!(
        "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];

    // Upgrade: adopted in place (annotation, our tags on the load balancer and its group).
    let (mut process, cluster, dir) = start_with(&env, &fake, cloud, "trip", &conf);
    let ours = format!("kube_service_{cluster}_shop_trip");
    until("the adoption finished", &process, async || {
        let svc = fake.get("v1", "services", "shop", "trip")?;
        let lbs = lb_list(&env, &in_tree).await;
        let groups = groups_named(&env, &group_name).await;
        let done = svc["metadata"]["annotations"][ANNOTATION] == lb_id
            && tagged(&lbs[0], OWNER_TAG)
            && groups.first().is_some_and(|g| tagged(g, OWNER_TAG));
        done.then_some(())
    })
    .await;
    let adopted = floating_ip(&env, fip_id).await.unwrap();
    assert_eq!(process.terminate().await, Some(0));

    // Downgrade: handed back under the in-tree name (it never lost it); then upgrade again,
    // taken back under ours.
    let back = migrate(dir.path(), &cluster, "in-tree").await;
    assert_eq!(lb_list(&env, &in_tree).await[0]["id"], lb_id, "{back}");
    let again = migrate(dir.path(), &cluster, "external").await;
    let renamed = lb_list(&env, &ours).await;
    assert_eq!(renamed[0]["id"], lb_id, "{again}");
    assert_eq!(lb_list(&env, &in_tree).await, json!([]), "{again}");

    // Restarted, the same address; then the Service goes, and everything with it.
    let (process, _, _dir) = start_with(&env, &fake, cloud, "trip", &conf);
    assert_eq!(ingress_ip(&fake, &process, "shop", "trip").await, *address);
    delete_service(&fake, &process, "shop", "trip").await;
    assert_eq!(lb_list(&env, &ours).await, json!([]), "{}", process.log());
    let left = floating_ip(&env, fip_id).await;
    assert_eq!(left, None, "the floating IP outlived its Service:\n{}", process.log());
    assert_eq!(groups_named(&env, &group_name).await, Vec::<Value>::new(), "{}", process.log());
    scene(&env, &["port-delete", &port_id]).await;
    scene(&env, &["security-group-delete", made["node_group"].as_str().unwrap()]).await;
    let after = inventory();
    let ids = [cluster.as_str(), &uid, &in_tree, lb_id, fip_id, address.as_str().unwrap()];
    let new = new_of_this_test(&before, &after, &ids);
    assert_eq!(new, Vec::<Value>::new(), "left in the project:\n{}", process.log());

    // How: marked ours at the adoption, with upstream's description and our tags.
    assert!(tagged(&adopted, OWNER_TAG) && tagged(&adopted, &ours), "{adopted}");
    let description =
        format!("Floating IP for Kubernetes external service shop/trip from cluster {cluster}");
    assert_eq!(adopted["description"], description, "{adopted}");
}

/// The `[LoadBalancer]` keys of the killed controller: floating IPs, no security groups.
fn lb_conf(env: &StackEnv) -> String {
    format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    )
}

/// Starts the service controller of `cluster` in `region` (whose catalog sends Octavia and
/// Neutron through fronts) and kills it right after the call `held` was told of went through.
async fn killed_after(
    env: &StackEnv,
    fake: &Cluster,
    region: &str,
    cluster: &str,
    held: tokio::sync::oneshot::Receiver<()>,
) -> Process {
    let (mut process, _dir) =
        crate::load_balancer::start_in_region(env, fake, region, cluster, &lb_conf(env));
    let Ok(Ok(())) = tokio::time::timeout(WAIT, held).await else {
        panic!("the armed call never went through; log:\n{}", process.log())
    };
    process.kill().await;
    process
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn killed_while_adopting_the_floating_ip_is_marked_ours_before_the_load_balancer_is() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let member = "10.0.0.224";
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("trip-kill-a", member));
    let svc = load_balancer_service("shop", "tripkill", &[(80, 30224)]);
    let svc = fake.create("v1", "services", "shop", svc);
    let uid = svc["metadata"]["uid"].as_str().unwrap().to_owned();
    let made = made_by_in_tree(&env, "tripkill", &uid, "80:30224", member, None).await;
    let fip_id = made["floating_ip"]["id"].as_str().unwrap().to_owned();
    let (lb_id, in_tree) = (made["id"].as_str().unwrap(), in_tree_name(&uid));
    let octavia = Front::start(env["OPENSTACK_LOADBALANCER_URL"].to_owned()).await;
    let neutron_url = env["OPENSTACK_NETWORK_URL"].trim_end_matches('/').trim_end_matches("/v2.0");
    let neutron = Front::start(neutron_url.to_owned()).await;
    let region = format!("RoundTrip{}", std::process::id());
    let fronts = ["--load-balancer", &octavia.url, "--network", &neutron.url];
    scene(&env, &[&["region-create", "--name", &region][..], &fronts].concat()).await;
    let cluster = format!("tripkill{}", std::process::id());
    testkit::sweep::watch(&cluster); // what its CCM makes carries the cluster name
    let ours = format!("kube_service_{cluster}_shop_tripkill");

    // Killed once: the floating IP has its description, not yet our tags; the load balancer
    // is not ours yet either.
    let held = neutron.hold(Method::PUT, &format!("/floatingips/{fip_id}"));
    let process = killed_after(&env, &fake, &region, &cluster, held).await;
    let fip = floating_ip(&env, &fip_id).await.unwrap();
    let described =
        format!("Floating IP for Kubernetes external service shop/tripkill from cluster {cluster}");
    assert_eq!(fip["description"], described, "{fip}\n{}", process.log());
    assert!(!tagged(&fip, OWNER_TAG), "{fip}");
    assert!(!tagged(&lb_list(&env, &in_tree).await[0], OWNER_TAG));

    // Killed twice, the moment the load balancer takes our tags: its floating IP has them.
    let held = octavia.hold(Method::PUT, &format!("/lbaas/loadbalancers/{lb_id}"));
    let process = killed_after(&env, &fake, &region, &cluster, held).await;
    let fip = floating_ip(&env, &fip_id).await.unwrap();
    assert!(tagged(&fip, OWNER_TAG) && tagged(&fip, &ours), "{fip}\n{}", process.log());
    let lb = until("the load balancer ACTIVE", &process, async || {
        let lbs = lb_list(&env, &in_tree).await;
        (lbs[0]["provisioning_status"] == "ACTIVE").then(|| lbs[0].clone())
    })
    .await;
    assert!(tagged(&lb, OWNER_TAG), "{lb}");

    // Started again, it finishes the adoption; stopped, the load balancer renamed to ours;
    // started again, the Service deleted: nothing stays.
    let address = made["floating_ip"]["floating_ip_address"].as_str().unwrap();
    let (mut process, dir) =
        crate::load_balancer::start_in_region(&env, &fake, &region, &cluster, &lb_conf(&env));
    assert_eq!(ingress_ip(&fake, &process, "shop", "tripkill").await, address);
    assert_eq!(process.terminate().await, Some(0));
    let out = migrate(dir.path(), &cluster, "external").await;
    assert_eq!(lb_list(&env, &ours).await[0]["id"], lb_id, "{out}");
    let (process, _dir) =
        crate::load_balancer::start_in_region(&env, &fake, &region, &cluster, &lb_conf(&env));
    delete_service(&fake, &process, "shop", "tripkill").await;
    assert_eq!(lb_list(&env, &ours).await, json!([]), "{}", process.log());
    assert_eq!(floating_ip(&env, &fip_id).await, None, "{}", process.log());
    scene(&env, &["region-delete", "--name", &region]).await;
}
