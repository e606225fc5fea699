//! `spec.loadBalancerIP` against the real Octavia and Neutron of scripts/openstack-up.sh
//! (ignored by default): a user's pre-made floating IP is only attached (and kept); an address
//! the project has not allocated is asked of Neutron, whose default policy lets only admins
//! choose it: for the stack's usual user a Warning Event that says so, as for an address outside
//! the floating network; for its user whose role the stack's policy lets choose, the floating IP
//! allocated with that address, tagged ours, and released with the Service.

use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{
    OWNER_TAG, delete_service, ingress_ip, lb_list, node, start_with, until,
};
use crate::support::scene;

/// The floating IPs of the project.
async fn floating_ips(env: &StackEnv) -> Vec<Value> {
    scene(env, &["floating-ip-list"]).await.as_array().cloned().unwrap_or_default()
}

/// An address of the external subnet's pool (203.0.113.200-254) that no floating IP holds
/// now; `salt` keeps the tests of this file (which run at the same time) from picking the same.
async fn free_address(env: &StackEnv, salt: u32) -> String {
    let taken: Vec<String> = floating_ips(env)
        .await
        .iter()
        .filter_map(|f| f["floating_ip_address"].as_str().map(str::to_owned))
        .collect();
    let start = 200 + (std::process::id() + salt * 25) % 55;
    (start..255)
        .chain(200..start)
        .map(|i| format!("203.0.113.{i}"))
        .find(|a| !taken.contains(a))
        .expect("a free address in 203.0.113.200-254")
}

fn asking(name: &str, node_port: u16, address: &str) -> Value {
    let mut service = load_balancer_service("shop", name, &[(80, node_port)]);
    service["spec"]["loadBalancerIP"] = json!(address);
    service
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_users_address_is_kept_and_one_neutron_will_not_give_is_an_event() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("lbip-a", "10.0.0.193"));
    let wanted = free_address(&env, 0).await;
    fake.create("v1", "services", "shop", asking("asked", 30193, &wanted));
    let theirs = scene(&env, &["floating-ip-create"]).await;
    let user_address = theirs["floating_ip_address"].as_str().unwrap().to_owned();
    fake.create("v1", "services", "shop", asking("kept", 30194, &user_address));
    fake.create("v1", "services", "shop", asking("outside", 30195, "198.51.100.77"));
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let (process, _cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "lbip", &lb);

    // Not allocated yet: Neutron's default policy lets only admins choose the address of a
    // new floating IP, and the stack keeps it: a Warning Event says so, no other address taken.
    let refused = |address: String| {
        let fake = fake.clone();
        async move || {
            let events = fake.list("events.k8s.io/v1", "events");
            events
                .into_iter()
                .filter(|e| e["reason"] == "SyncLoadBalancerFailed" && e["type"] == "Warning")
                .filter_map(|e| e["note"].as_str().map(str::to_owned))
                .find(|n| n.contains(&format!("spec.loadBalancerIP {address}:")))
        }
    };
    let note =
        until("the Event about the address asked for", &process, refused(wanted.clone())).await;
    assert!(note.contains("create_floatingip:floating_ip_address"), "{note}");
    assert!(!floating_ips(&env).await.iter().any(|f| f["floating_ip_address"] == wanted.as_str()));
    // The user's: attached as it is.
    assert_eq!(ingress_ip(&fake, &process, "shop", "kept").await, user_address);
    // Outside the floating network's subnets: refused the same way.
    until("the Event about 198.51.100.77", &process, refused("198.51.100.77".into())).await;
    let outside = fake.get("v1", "services", "shop", "outside").unwrap();
    assert!(outside.pointer("/status/loadBalancer/ingress/0").is_none(), "{outside}");

    // On delete: the user's is only detached.
    for name in ["asked", "kept", "outside"] {
        delete_service(&fake, &process, "shop", name).await;
    }
    let fips = floating_ips(&env).await;
    let user = fips.iter().find(|f| f["id"] == theirs["id"]).expect("the user's floating IP");
    assert!(user["port_id"].is_null(), "the user's floating IP is still attached: {user}");
    scene(&env, &["floating-ip-delete", theirs["id"].as_str().unwrap()]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn an_address_the_project_may_choose_is_allocated_tagged_ours_and_released() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("lbip-c", "10.0.0.196"));
    let wanted = free_address(&env, 1).await;
    fake.create("v1", "services", "shop", asking("chosen", 30196, &wanted));
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    // The stack's second user: its role is the one the stack's Neutron policy lets choose.
    let cloud = &env["OPENSTACK_CLOUD_FIP_CHOOSER"];
    let (process, cluster, _dir) = start_with(&env, &fake, cloud, "lbipc", &lb);

    assert_eq!(ingress_ip(&fake, &process, "shop", "chosen").await, wanted);
    let name = format!("kube_service_{cluster}_shop_chosen");
    let vip = lb_list(&env, &name).await[0]["vip_address"].clone();
    let fips = floating_ips(&env).await;
    let fip = fips
        .iter()
        .find(|f| f["floating_ip_address"] == wanted.as_str())
        .unwrap_or_else(|| panic!("no floating IP {wanted}: {fips:?}"));
    assert_eq!(fip["fixed_ip_address"], vip, "on the load balancer's VIP: {fip}");
    let mut tags: Vec<&str> =
        fip["tags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    tags.sort_unstable();
    assert_eq!(tags, [OWNER_TAG, name.as_str()], "allocated and tagged as ours: {fip}");

    // Allocated by the controller: released with the Service.
    delete_service(&fake, &process, "shop", "chosen").await;
    let left: Vec<Value> = floating_ips(&env)
        .await
        .into_iter()
        .filter(|f| f["floating_ip_address"] == wanted.as_str())
        .collect();
    assert!(left.is_empty(), "the floating IP the controller allocated is left: {left:?}");
}
