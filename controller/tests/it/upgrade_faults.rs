//! Faults in the move from the in-tree OpenStack provider (ignored by default; scripts/test.sh
//! runs them): the controller killed between the steps of an adoption and started again, and
//! the Nodes the in-tree provider initialized, which it must leave as they are.

use axum::http::Method;
use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::{NodeFixture, load_balancer_service};
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;
use tokio::sync::oneshot;

use crate::load_balancer::{OWNER_TAG, WAIT, delete_service, lb_list, node, until};
use crate::proxy::Front;
use crate::support::{Process, https, requests, scene, start_ccm};
use crate::upgrade::{ANNOTATION, floating_ips_on, groups_named, in_tree_name};

/// The service controller of cluster `cluster`, authenticated to the stack's Keystone for
/// `region`, whose catalog sends Octavia and Neutron calls through the test's fronts.
fn start_in(
    env: &StackEnv,
    fake: &Cluster,
    region: &str,
    cluster: &str,
) -> (Process, tempfile::TempDir) {
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"],
    );
    testkit::sweep::watch(cluster); // what its CCM makes carries the cluster name
    crate::load_balancer::start_in_region(env, fake, region, cluster, &lb)
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

/// The NodePorts the group's ingress rules open to `subnet` (behind the amphora, the member
/// and VIP subnet: ours), sorted; the in-tree provider's rules on the Service ports and ICMP
/// left out.
fn node_ports_opened(group: &Value, subnet: &str) -> Vec<u64> {
    let rules = group["rules"].as_array().unwrap().iter();
    let opened = rules.filter(|r| {
        r["direction"] == "ingress" && r["protocol"] == "tcp" && r["remote_ip_prefix"] == subnet
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
    let _sweep = Sweep::start();
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
    let subnet = &env["OPENSTACK_INTERNAL_CIDR"];

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
    assert_eq!(node_ports_opened(&group, subnet).len(), 1, "{group}");
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
    assert_eq!(node_ports_opened(&group, subnet), [30215, 30216], "{group}");
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
    assert_eq!(node_ports_opened(&group, subnet), [30215, 30216], "{group}");
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

/// The `cloud-node` controller's reconcile outcomes so far (`occm_reconciles_total`, every
/// result: `initialized` and each error kind), from /metrics.
async fn node_reconciles(port: u16) -> u64 {
    let url = format!("https://127.0.0.1:{port}/metrics");
    let text = https().get(url).send().await.unwrap().text().await.unwrap();
    let lines =
        text.lines().filter(|l| l.starts_with("occm_reconciles_total{controller=\"cloud-node\","));
    lines.filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum()
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn nodes_the_in_tree_provider_initialized_are_never_initialized_again() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let name = format!("occm-intree-{}", std::process::id());
    let server = scene(&env, &["server-create", "--name", &name, "--wait-active"]).await;
    let id = server["id"].as_str().unwrap().to_owned();
    let fixed = server["fixed_ips"][0].as_str().unwrap().to_owned();
    // A floating IP that came after the kubelet's last report of cloud addresses (with
    // --cloud-provider=external it reports none): the address refresh is what adds it.
    let server_port = server["ports"][0]["id"].as_str().unwrap();
    let fip =
        scene(&env, &["floating-ip-create", "--port", server_port, "--wait-server", &id]).await;
    let external = fip["floating_ip_address"].as_str().unwrap().to_owned();

    // The Node as the in-tree kubelet left it: providerID, no taint, Ready, its addresses,
    // and the labels it set. The in-tree provider read the server at Nova's base microversion,
    // where a server's flavor is only its ID, and labelled the instance type with that
    // (legacy-cloud-providers/openstack `srvInstanceType`); an initialization writes the name.
    let flavor_id = &env["OPENSTACK_FLAVOR_ID"];
    let zone = server["availability_zone"].as_str().unwrap();
    let region = &env["OPENSTACK_REGION"];
    let provider_id = format!("openstack:///{id}");
    let mut node = NodeFixture::initialized(&name).provider_id(&provider_id).build();
    let labels = json!({
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": flavor_id,
        "beta.kubernetes.io/instance-type": flavor_id,
        "topology.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/region": region,
        "tier": "web",
    });
    node["metadata"]["labels"] = labels.clone();
    node["status"]["addresses"] =
        json!([{"type": "InternalIP", "address": fixed}, {"type": "Hostname", "address": name}]);
    let fake = Cluster::start();
    let before = fake.create("v1", "nodes", "", node);

    let conf = format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = {}\n",
        env["OPENSTACK_CLOUDS_YAML"], env["OPENSTACK_CLOUD_APPCRED"]
    );
    let flags = [
        "--controllers=cloud-node,cloud-node-lifecycle",
        "--node-status-update-frequency=2s",
        "--node-monitor-period=2s",
        "--leader-elect=false",
    ];
    let (process, port, _dir) = start_ccm(&fake.url(), &conf, &flags);

    // Several address refreshes (one server list each: the first full, then changes-since);
    // the first writes what the README documents: the port's fixed IP, Nova's floating
    // address, kubelet's Hostname kept (the server has no metadata `hostname`).
    let refreshed = json!([
        {"type": "InternalIP", "address": fixed},
        {"type": "ExternalIP", "address": external},
        {"type": "Hostname", "address": name},
    ]);
    until("four address refreshes", &process, async || {
        let node = fake.get("v1", "nodes", "", &name)?;
        let lists = requests(port, "compute", "server_list").await;
        (lists >= 4 && node["status"]["addresses"] == refreshed).then_some(())
    })
    .await;
    let after = fake.get("v1", "nodes", "", &name).unwrap();
    assert_eq!(after["spec"], before["spec"], "providerID or taints changed");
    assert_eq!(after["metadata"]["labels"], labels, "labels changed");
    assert_eq!(after["status"]["conditions"], before["status"]["conditions"]);
    assert_eq!(after["status"]["addresses"], refreshed);

    // No initialization: its server lookup by ID (`servers/{id}`) never made, none counted,
    // no line and no Event about it.
    assert_eq!(requests(port, "compute", "server_get").await, 0, "{}", process.log());
    assert_eq!(node_reconciles(port).await, 0, "an initialization was tried");
    let log = process.log();
    assert!(!log.lines().any(|l| l.contains("initialized") && l.contains(&id)), "{log}");
    let events = fake.list("events.k8s.io/v1", "events");
    let about = |e: &&Value| e["regarding"]["name"] == name.as_str();
    assert_eq!(events.iter().filter(about).count(), 0, "{events:?}");

    scene(&env, &["floating-ip-delete", fip["id"].as_str().unwrap()]).await;
    scene(&env, &["server-delete", &id, "--wait"]).await;
}
