//! Members and VIP on the subnet the user means, on nodes with ports on two networks (issue 41,
//! part 2; ignored by default, scripts/test.sh runs it), against the real Nova, Octavia and
//! Neutron: a second network with the internal network's own range, each node's server booted
//! on a port of both, one node's address on the second being the other's InternalIP on the first.

use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{
    delete_service, ingress_ip, lb_list, node, reasons, start_with_flags, until,
};
use crate::support::scene;

/// Node `name` on server `server` (its providerID), InternalIP `ip`.
fn node_on(name: &str, server: &str, ip: &str) -> Value {
    let mut node = node(name, ip);
    node["spec"]["providerID"] = json!(format!("openstack:///{server}"));
    node
}

/// A port of server `server` with fixed IP `ip` on `network` (default: the internal one).
async fn server_port(env: &StackEnv, server: &str, network: Option<&str>, ip: &str) -> String {
    port_with(env, &["--device-id", server], network, ip).await
}

/// A port with fixed IP `ip` on `network` (default: the internal one), bound to nothing yet.
async fn port(env: &StackEnv, network: Option<&str>, ip: &str) -> String {
    port_with(env, &[], network, ip).await
}

async fn port_with(env: &StackEnv, extra: &[&str], network: Option<&str>, ip: &str) -> String {
    let mut args = vec!["port-create", "--fixed-ip", ip];
    args.extend(extra);
    if let Some(network) = network {
        args.extend(["--network", network]);
    }
    scene(env, &args).await["id"].as_str().unwrap().to_owned()
}

/// A server booted on `ports` (one NIC each), ACTIVE: its ID.
async fn boot(env: &StackEnv, name: &str, ports: &[&str]) -> String {
    let mut args = vec!["server-create", "--name", name, "--wait-active"];
    for port in ports {
        args.extend(["--port", port]);
    }
    scene(env, &args).await["id"].as_str().unwrap().to_owned()
}

/// A second network using the internal network's range; its name and subnet.
async fn overlapping_network(env: &StackEnv, name: &str) -> String {
    let cidr = &env["OPENSTACK_INTERNAL_CIDR"];
    let made = scene(env, &["network-create", "--name", name, "--cidr", cidr]).await;
    made["subnet"].as_str().unwrap().to_owned()
}

/// `(address, subnet)` of every member of the load balancer's pools, sorted.
fn members(lb: &Value) -> Vec<(String, String)> {
    let pools = lb["pools"].as_array().unwrap();
    let mut out: Vec<(String, String)> = pools
        .iter()
        .flat_map(|p| p["member_details"].as_array().unwrap().iter())
        .map(|m| {
            let text = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (text("address"), text("subnet_id"))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn members_are_the_nodes_own_ports_on_the_member_subnet_and_a_node_moved_off_leaves() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let network = format!("members{}", std::process::id());
    let back = overlapping_network(&env, &network).await;
    // Two servers, each booted on a port of either network: Nova binds them (their device).
    let a_front = port(&env, None, "10.0.0.211").await;
    let a_back = port(&env, Some(&network), "10.0.0.61").await;
    let b_front = port(&env, None, "10.0.0.212").await;
    let b_back = port(&env, Some(&network), "10.0.0.211").await;
    let tag = std::process::id();
    let srv_a = boot(&env, &format!("member-a-{tag}"), &[&a_front, &a_back]).await;
    let srv_b = boot(&env, &format!("member-b-{tag}"), &[&b_front, &b_back]).await;
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node_on("member-a", &srv_a, "10.0.0.211"));
    fake.create("v1", "nodes", "", node_on("member-b", &srv_b, "10.0.0.212"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "split", &[(80, 30211)]));
    let conf =
        format!("subnet-id = {}\nmember-subnet-id = {back}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let flags = ["--load-balancer-resync-period=2s"];
    let (process, cluster, _port, _dir) =
        start_with_flags(&env, &fake, cloud, "members", &conf, &flags);
    ingress_ip(&fake, &process, "shop", "split").await;
    let name = format!("kube_service_{cluster}_shop_split");
    let lb = lb_list(&env, &name).await[0].clone();
    // ACTIVE; its operating status is OFFLINE here whatever the members (the stack's no-op
    // amphora driver reports no health), so ONLINE cannot be checked on this stack.
    assert_eq!(lb["provisioning_status"], "ACTIVE", "{lb}");
    let both = [("10.0.0.211".to_owned(), back.clone()), ("10.0.0.61".to_owned(), back.clone())];
    assert_eq!(members(&lb), both, "not the nodes' own addresses on the member subnet: {lb}");
    assert!(!reasons(&fake).contains(&"MembersLeftOut".to_owned()), "{:?}", reasons(&fake));

    // Node b's port leaves the member subnet: at the next resync it leaves the pool, told once.
    scene(&env, &["port-delete", &b_back]).await;
    // Octavia lists the new members while still PENDING_UPDATE: waited for, ACTIVE at the end.
    until("node b out of the pool, the load balancer ACTIVE", &process, async || {
        let lb = lb_list(&env, &name).await[0].clone();
        let out = members(&lb) == [("10.0.0.61".to_owned(), back.clone())];
        (out && lb["provisioning_status"] == "ACTIVE").then_some(())
    })
    .await;
    until("one MembersLeftOut", &process, async || {
        let n = reasons(&fake).iter().filter(|r| *r == "MembersLeftOut").count();
        (n == 1).then_some(())
    })
    .await;
    // Several resyncs later, still one (no retry loop, no Event per resync).
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let events = fake.list("events.k8s.io/v1", "events");
    let told: Vec<&Value> = events.iter().filter(|e| e["reason"] == "MembersLeftOut").collect();
    assert_eq!(told.len(), 1, "{told:#?}");
    assert_eq!(told[0]["type"], "Warning");
    assert!(
        told[0]["note"].as_str().unwrap().contains("Nodes member-b have no port on member subnet"),
        "{}",
        told[0]
    );

    delete_service(&fake, &process, "shop", "split").await;
    for server in [&srv_a, &srv_b] {
        scene(&env, &["server-delete", server, "--wait"]).await;
    }
    for port in [a_front, a_back, b_front] {
        scene(&env, &["port-delete", &port]).await;
    }
    scene(&env, &["network-delete", "--name", &network]).await;
}

/// Without a VIP subnet configured, the VIP goes to the subnet of the first member's address on
/// its own server's port, even when a port of another network holds that address too.
#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn the_vip_subnet_is_the_first_members_port_by_its_server_not_by_its_address() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let network = format!("vipnet{}", std::process::id());
    // The look-alike first: an address lookup alone would meet it first.
    let other = overlapping_network(&env, &network).await;
    let decoy = uuid();
    server_port(&env, &decoy, Some(&network), "10.0.0.221").await;
    let srv = uuid();
    let front = server_port(&env, &srv, None, "10.0.0.221").await;
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node_on("vip-a", &srv, "10.0.0.221"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "vip", &[(80, 30221)]));
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (process, cluster, _port, _dir) = start_with_flags(&env, &fake, cloud, "vipsrv", "", &[]);
    ingress_ip(&fake, &process, "shop", "vip").await;
    let lb = lb_list(&env, &format!("kube_service_{cluster}_shop_vip")).await[0].clone();
    assert_eq!(lb["vip_subnet_id"], env["OPENSTACK_INTERNAL_SUBNET_ID"].as_str(), "{lb}");
    assert_ne!(lb["vip_subnet_id"], other.as_str());
    delete_service(&fake, &process, "shop", "vip").await;
    scene(&env, &["network-delete", "--name", &network]).await;
    scene(&env, &["port-delete", &front]).await;
}

/// A server ID for a port's device (no Nova server needed: the controller reads the ports).
fn uuid() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let n = nanos.as_nanos();
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        (n >> 64) as u32 ^ std::process::id(),
        n as u64 & 0xffff_ffff_ffff
    )
}
