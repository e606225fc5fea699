//! Octavia's VIP port left behind, against the real Octavia and Neutron of
//! scripts/openstack-up.sh (ignored by default): when Octavia lost track of the VIP port of a
//! load balancer of ours that went to ERROR, replacing the load balancer leaves no port of it.

use serde_json::Value;
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{delete_service, ingress_ip, lb_list, node, start_with_flags, until};
use crate::support::scene;

/// Whether Neutron has port `id` (`port-show` fails for a missing one).
fn port_exists(env: &StackEnv, id: &str) -> bool {
    let script = env.get("OPENSTACK_SCENE").unwrap_or("scripts/openstack_scene.py");
    let out = std::process::Command::new(script).args(["port-show", id]).output().unwrap();
    out.status.success()
}

/// The floating IP with this address, as Neutron lists it.
async fn floating_ip(env: &StackEnv, address: &str) -> Option<Value> {
    let fips = scene(env, &["floating-ip-list"]).await;
    fips.as_array().unwrap().iter().find(|f| f["floating_ip_address"] == address).cloned()
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_vip_port_octavia_lost_track_of_goes_with_our_replaced_load_balancer() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("lost-a", "10.0.0.191"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "lost", &[(80, 30191)]));
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let flags = ["--load-balancer-resync-period=2s"];
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (process, cluster, _port, _dir) = start_with_flags(&env, &fake, cloud, "lost", &lb, &flags);
    let name = format!("kube_service_{cluster}_shop_lost");
    let address = ingress_ip(&fake, &process, "shop", "lost").await;
    let fip = floating_ip(&env, &address).await.expect("the Service's floating IP");
    let vip_port = fip["port_id"].as_str().expect("the floating IP on the VIP port").to_owned();
    let broken = lb_list(&env, &name).await[0]["id"].as_str().unwrap().to_owned();
    testkit::sweep::watch(&broken); // its VIP port, octavia-lb-<id>, if the test fails
    assert!(port_exists(&env, &vip_port));

    // The load balancer goes to ERROR and Octavia's record of its VIP port names no port: its
    // delete leaves octavia-lb-<id> (with our floating IP on it) behind.
    let lose = ["loadbalancer-break", &broken, "--status", "ERROR", "--lose-vip-port"];
    assert_eq!(scene(&env, &lose).await["provisioning_status"], "ERROR");
    let replaced = until("a new ACTIVE load balancer", &process, async || {
        let lbs = lb_list(&env, &name).await;
        let [lb] = lbs.as_array()?.as_slice() else { return None };
        (lb["id"] != broken.as_str() && lb["provisioning_status"] == "ACTIVE").then(|| lb.clone())
    })
    .await;
    assert!(
        !port_exists(&env, &vip_port),
        "the VIP port of {broken} is left behind:\n{}",
        process.log()
    );
    let fips = scene(&env, &["floating-ip-list"]).await;
    let ids: Vec<&Value> = fips.as_array().unwrap().iter().map(|f| &f["id"]).collect();
    assert!(!ids.contains(&&fip["id"]), "our floating IP on the lost port is left: {fips}");
    assert!(process.log().contains("VIP port Octavia left behind deleted"), "{}", process.log());

    // The Service follows the new load balancer, and goes with it, leaving no port either.
    let new_port = until("the floating IP on the new VIP port", &process, async || {
        let svc = fake.get("v1", "services", "shop", "lost")?;
        let ip = svc.pointer("/status/loadBalancer/ingress/0/ip")?.as_str()?.to_owned();
        let port = floating_ip(&env, &ip).await?["port_id"].as_str()?.to_owned();
        (port != vip_port).then_some(port)
    })
    .await;
    delete_service(&fake, &process, "shop", "lost").await;
    assert_eq!(lb_list(&env, &name).await, Value::Array(vec![]), "{}", replaced);
    assert!(!port_exists(&env, &new_port), "the new VIP port is left behind");
}
