//! A floating IP is never left behind by a controller killed while making it (issue 35: the
//! soak's orphan, seed 631637277): Neutron allocates the floating IP in one call and takes our
//! tags in the next, and a SIGKILL between the two left an untagged floating IP on the VIP that
//! the clean-up then took for a user's, detached and kept for good.

use axum::http::Method;
use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{WAIT, lb_list, node, until};
use crate::proxy::Front;
use crate::support::scene;

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_floating_ip_made_before_a_kill_goes_with_its_service() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("fipkill-a", "10.0.0.81"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "fipkill", &[(80, 30081)]));
    // Neutron through a front that stops the controller right after the floating IP's create.
    let neutron_url = env["OPENSTACK_NETWORK_URL"].trim_end_matches('/').trim_end_matches("/v2.0");
    let neutron = Front::start(neutron_url.to_owned()).await;
    let region = format!("KilledFip{}", std::process::id());
    let octavia = env["OPENSTACK_LOADBALANCER_URL"].clone();
    let created = ["region-create", "--name", &region, "--load-balancer", &octavia];
    scene(&env, &[&created[..], &["--network", &neutron.url]].concat()).await;
    let cluster = format!("fipkill{}", std::process::id());
    testkit::sweep::watch(&cluster);
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"],
    );
    let start = || crate::load_balancer::start_in_region(&env, &fake, &region, &cluster, &lb);

    let held = neutron.hold(Method::POST, "/floatingips");
    let (mut process, _dir) = start();
    let Ok(Ok(())) = tokio::time::timeout(WAIT, held).await else {
        panic!("no floating IP was made; log:\n{}", process.log())
    };
    process.kill().await;
    let name = format!("kube_service_{cluster}_shop_fipkill");
    let lbs = lb_list(&env, &name).await;
    let [made] = lbs.as_array().unwrap().as_slice() else { panic!("one load balancer: {lbs}") };
    let fips = scene(&env, &["floating-ip-list"]).await;
    let on_vip: Vec<&Value> = fips.as_array().unwrap().iter().filter(|f| on(f, made)).collect();
    let [fip] = on_vip.as_slice() else { panic!("one floating IP on the VIP: {fips}") };
    assert_eq!(fip["tags"], json!([]), "the kill came before the tags: {fip}");
    let address = fip["floating_ip_address"].clone();

    // Deleted while the controller is down; started again, it cleans up everything.
    fake.delete("v1", "services", "shop", "fipkill");
    let (process, _dir) = start();
    until("the Service gone", &process, async || {
        fake.get("v1", "services", "shop", "fipkill").is_none().then_some(())
    })
    .await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
    let fips = scene(&env, &["floating-ip-list"]).await;
    let left: Vec<&Value> =
        fips.as_array().unwrap().iter().filter(|f| f["floating_ip_address"] == address).collect();
    assert!(left.is_empty(), "floating IP {address} outlived its Service: {left:?}");
    scene(&env, &["region-delete", "--name", &region]).await;
}

fn on(fip: &Value, lb: &Value) -> bool {
    let vip = lb["vip_address"].as_str();
    fip["fixed_ip_address"].as_str() == vip && fip["port_id"].is_string()
}
