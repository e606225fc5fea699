//! Faults in the move from the in-tree OpenStack provider (ignored by default; scripts/test.sh
//! runs them): the controller killed between the steps of an adoption and started again.

use axum::http::Method;
use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use tokio::sync::oneshot;

use crate::load_balancer::{OWNER_TAG, WAIT, delete_service, lb_list, node, until};
use crate::proxy::Front;
use crate::support::{Process, scene, start_ccm};
use crate::upgrade::{ANNOTATION, floating_ips_on, groups_named, in_tree_name};

/// The service controller of cluster `cluster`, authenticated to the stack's Keystone for
/// `region`, whose catalog sends Octavia and Neutron calls through the test's fronts.
fn start_in(
    env: &StackEnv,
    fake: &Cluster,
    region: &str,
    cluster: &str,
) -> (Process, tempfile::TempDir) {
    let conf = format!(
        "[Global]\nauth-url = {}\napplication-credential-id = {}\napplication-credential-secret = \
         {}\nregion = {region}\n\n[LoadBalancer]\nsubnet-id = {}\nfloating-network-id = {}\n\
         manage-security-groups = true\n",
        env["OPENSTACK_AUTH_URL"],
        env["OPENSTACK_APPCRED_ID"],
        env["OPENSTACK_APPCRED_SECRET"],
        env["OPENSTACK_INTERNAL_SUBNET_ID"],
        env["OPENSTACK_EXTERNAL_NETWORK_ID"],
    );
    let cluster_flag = format!("--cluster-name={cluster}");
    let flags = ["--controllers=service", &cluster_flag, "--leader-elect=false"];
    let (process, _port, dir) = start_ccm(&fake.url(), &conf, &flags);
    (process, dir)
}

/// Waits for the front to hold the armed call, then kills the controller with SIGKILL: the
/// call took effect, nothing after it did. Nothing was made under our name meanwhile.
async fn kill_when_held(
    env: &StackEnv,
    process: &mut Process,
    held: oneshot::Receiver<()>,
    ours: &str,
) {
    let Ok(Ok(_)) = tokio::time::timeout(WAIT, held).await else {
        panic!("the armed call never went through; log:\n{}", process.log())
    };
    process.kill().await;
    let lbs = lb_list(env, ours).await;
    assert_eq!(lbs, json!([]), "a second load balancer:\n{}", process.log());
}

fn tagged(object: &Value, tag: &str) -> bool {
    object["tags"].as_array().is_some_and(|tags| tags.contains(&json!(tag)))
}

/// The load balancer named `name` once Octavia is done with what it was asked (the
/// controller, killed, asks nothing more).
async fn settled(env: &StackEnv, process: &Process, name: &str) -> Value {
    until(&format!("load balancer {name} ACTIVE"), process, async || {
        let lbs = lb_list(env, name).await;
        (lbs[0]["provisioning_status"] == "ACTIVE").then(|| lbs[0].clone())
    })
    .await
}

/// The one security group named `name`.
async fn the_group(env: &StackEnv, name: &str) -> Value {
    let groups = groups_named(env, name).await;
    let [group] = groups.as_slice() else { panic!("one group named {name}: {groups:?}") };
    group.clone()
}

/// How many rules of group `of` let in traffic from group `from` (the in-tree layout).
async fn rules_naming(env: &StackEnv, of: &str, from: &str) -> usize {
    let groups = scene(env, &["security-group-list"]).await;
    let group = groups.as_array().unwrap().iter().find(|g| g["id"] == of).unwrap().clone();
    group["rules"].as_array().unwrap().iter().filter(|r| r["remote_group_id"] == from).count()
}

/// The NodePorts the group's ingress rules open to everyone (the Service has no source
/// ranges), sorted; the in-tree provider's rules on the Service ports and ICMP left out.
fn node_ports_opened(group: &Value) -> Vec<u64> {
    let rules = group["rules"].as_array().unwrap().iter();
    let opened = rules.filter(|r| {
        r["direction"] == "ingress"
            && r["protocol"] == "tcp"
            && r["remote_ip_prefix"] == "0.0.0.0/0"
    });
    let mut ports: Vec<u64> =
        opened.filter_map(|r| r["port_range_min"].as_u64()).filter(|p| *p >= 30000).collect();
    ports.sort_unstable();
    ports
}

async fn port_carries(env: &StackEnv, port: &str, group: &str) -> bool {
    let port = scene(env, &["port-show", port]).await;
    port["security_groups"].as_array().unwrap().contains(&json!(group))
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn killed_between_adoption_steps_the_controller_converges_with_nothing_duplicated_or_lost() {
    let env = StackEnv::load();
    let member = "10.0.0.215";
    let port = scene(&env, &["port-create", "--fixed-ip", member]).await;
    let port_id = port["id"].as_str().unwrap().to_owned();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("killed-a", member));
    let svc = load_balancer_service("shop", "killed", &[(80, 30215), (443, 30216)]);
    let svc = fake.create("v1", "services", "shop", svc);
    let uid = svc["metadata"]["uid"].as_str().unwrap().to_owned();
    let made = scene(
        &env,
        &[
            "made-lb-create",
            "--by",
            "in-tree",
            "--namespace",
            "shop",
            "--service",
            "killed",
            "--uid",
            &uid,
            "--port",
            "80:30215",
            "--port",
            "443:30216",
            "--member",
            member,
            "--floating-ip",
            "--security-group",
            "--member-port",
            &port_id,
        ],
    )
    .await;
    let fip = made["floating_ip"]["floating_ip_address"].as_str().unwrap().to_owned();
    let status = json!({"loadBalancer": {"ingress": [{"ip": fip, "ipMode": "VIP"}]}});
    fake.patch("v1", "services", "shop", "killed", json!({"status": status}));
    let (node_group, group_id) = (made["node_group"].as_str().unwrap(), &made["security_group"]);
    let group_id = group_id.as_str().unwrap();
    let in_tree = in_tree_name(&uid);
    let group_name = format!("lb-sg-{uid}-shop-killed");

    // A region of our own whose catalog sends Octavia and Neutron through fronts that can stop
    // the controller right after a given call.
    let octavia = Front::start(env["OPENSTACK_LOADBALANCER_URL"].to_owned()).await;
    let neutron_url = env["OPENSTACK_NETWORK_URL"].trim_end_matches('/').trim_end_matches("/v2.0");
    let neutron = Front::start(neutron_url.to_owned()).await;
    let region = format!("KilledAdoption{}", std::process::id());
    scene(
        &env,
        &[
            "region-create",
            "--name",
            &region,
            "--load-balancer",
            &octavia.url,
            "--network",
            &neutron.url,
        ],
    )
    .await;
    let cluster = format!("killed{}", std::process::id());
    let ours = format!("kube_service_{cluster}_shop_killed");
    let service_tag = |listener: &&Value| tagged(listener, &ours);

    // Killed once: the first listener carries our tags, the load balancer not yet.
    let held = octavia.hold(Method::PUT, "/lbaas/listeners/");
    let (mut process, _dir) = start_in(&env, &fake, &region, &cluster);
    kill_when_held(&env, &mut process, held, &ours).await;
    let lb = settled(&env, &process, &in_tree).await;
    assert!(!tagged(&lb, OWNER_TAG), "the load balancer was tagged before its listeners: {lb}");
    let listeners = lb["listener_details"].as_array().unwrap();
    assert_eq!(listeners.iter().filter(service_tag).count(), 1, "{lb}");

    // Killed twice: the group has the first of our rules beside the in-tree ones, and is on
    // no member port yet; the load balancer is ours now.
    let held = neutron.hold(Method::POST, "/security-group-rules");
    let (mut process, _dir) = start_in(&env, &fake, &region, &cluster);
    kill_when_held(&env, &mut process, held, &ours).await;
    assert!(tagged(&settled(&env, &process, &in_tree).await, OWNER_TAG));
    let group = the_group(&env, &group_name).await;
    assert_eq!(node_ports_opened(&group).len(), 1, "{group}");
    assert!(!tagged(&group, OWNER_TAG), "{group}");
    assert!(!port_carries(&env, &port_id, group_id).await);
    assert_eq!(rules_naming(&env, node_group, group_id).await, 2);

    // Killed a third time: the member port carries the group, whose rules are ours alone,
    // while the nodes' group still lets it in (both layouts at once: nothing refused).
    let held = neutron.hold(Method::PUT, &format!("/ports/{port_id}"));
    let (mut process, _dir) = start_in(&env, &fake, &region, &cluster);
    kill_when_held(&env, &mut process, held, &ours).await;
    assert!(port_carries(&env, &port_id, group_id).await);
    let group = the_group(&env, &group_name).await;
    assert_eq!(node_ports_opened(&group), [30215, 30216], "{group}");
    assert!(!tagged(&group, OWNER_TAG), "{group}");
    assert_eq!(rules_naming(&env, node_group, group_id).await, 2);

    // Started once more: it finishes the move.
    let (process, _dir) = start_in(&env, &fake, &region, &cluster);
    until("the adoption finished", &process, async || {
        let group = groups_named(&env, &group_name).await;
        (group.len() == 1 && tagged(&group[0], OWNER_TAG)).then_some(())
    })
    .await;
    let lbs = lb_list(&env, &in_tree).await;
    let [lb] = lbs.as_array().unwrap().as_slice() else { panic!("one {in_tree}: {lbs}") };
    assert_eq!((&lb["id"], &lb["vip_address"]), (&made["id"], &made["vip_address"]));
    assert!(tagged(lb, OWNER_TAG) && tagged(lb, &ours), "{lb}");
    let listeners = lb["listener_details"].as_array().unwrap();
    assert!(listeners.iter().all(|l| service_tag(&l)), "{lb}");
    let mut ids: Vec<&Value> = listeners.iter().map(|l| &l["id"]).collect();
    let made_listeners = made["listeners"].as_array().unwrap();
    let mut made_ids: Vec<&Value> = made_listeners.iter().map(|l| &l["id"]).collect();
    ids.sort_by_key(|v| v.to_string());
    made_ids.sort_by_key(|v| v.to_string());
    assert_eq!(ids, made_ids, "{lb}");
    assert_eq!(lb_list(&env, &ours).await, json!([]), "a second load balancer");
    assert_eq!(floating_ips_on(&env, &made["vip_port_id"]).await, std::slice::from_ref(&fip));
    let svc = fake.get("v1", "services", "shop", "killed").unwrap();
    assert_eq!(svc["metadata"]["annotations"][ANNOTATION], made["id"], "{svc}");
    assert_eq!(svc["status"], status, "{svc}");
    let group = the_group(&env, &group_name).await;
    assert_eq!(group["id"], group_id);
    assert_eq!(node_ports_opened(&group), [30215, 30216], "{group}");
    assert!(port_carries(&env, &port_id, group_id).await);
    assert_eq!(rules_naming(&env, node_group, group_id).await, 0);

    // The Service goes, and everything with it.
    delete_service(&fake, &process, "shop", "killed").await;
    assert_eq!(lb_list(&env, &in_tree).await, json!([]), "{}", process.log());
    let fips = scene(&env, &["floating-ip-list"]).await;
    let left = fips.as_array().unwrap().iter().any(|f| f["floating_ip_address"] == fip.as_str());
    assert!(!left, "the floating IP is left:\n{}", process.log());
    assert_eq!(groups_named(&env, &group_name).await, Vec::<Value>::new(), "{}", process.log());
    scene(&env, &["port-delete", &port_id]).await;
    scene(&env, &["security-group-delete", node_group]).await;
    scene(&env, &["region-delete", "--name", &region]).await;
}
