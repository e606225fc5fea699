//! Nothing is left behind, and nothing made twice, by a controller killed between a Neutron
//! create and its tags (issue 35: the soak's orphan, seed 631637277). Neutron makes a floating
//! IP or a security group in one call and takes our tags in the next; a SIGKILL between the two
//! left an untagged object that the controller then took for someone else's: a floating IP
//! detached and kept for good when its Service was deleted meanwhile, a second security group
//! beside the first. Our description now marks them too.

use axum::http::Method;
use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{WAIT, lb_list, node, until};
use crate::proxy::Front;
use crate::support::{Process, scene};
use crate::upgrade::groups_named;

/// A Service `shop/<name>` and a controller started (again) in a region whose Neutron is a
/// front: the first start is killed right after `held` (a POST path) went through.
struct Killed {
    env: StackEnv,
    fake: Cluster,
    region: String,
    cluster: String,
    name: String,
    lb_conf: String,
}

impl Killed {
    async fn after(name: &str, ip: &str, node_port: u16, held: &str) -> (Killed, Value) {
        let env = StackEnv::load();
        let fake = Cluster::start();
        fake.create("v1", "nodes", "", node(&format!("{name}-a"), ip));
        let service = load_balancer_service("shop", name, &[(80, node_port)]);
        fake.create("v1", "services", "shop", service);
        let neutron_url =
            env["OPENSTACK_NETWORK_URL"].trim_end_matches('/').trim_end_matches("/v2.0");
        let neutron = Front::start(neutron_url.to_owned()).await;
        let region = format!("Killed{name}{}", std::process::id());
        let octavia = env["OPENSTACK_LOADBALANCER_URL"].clone();
        let created = ["region-create", "--name", &region, "--load-balancer", &octavia];
        scene(&env, &[&created[..], &["--network", &neutron.url]].concat()).await;
        let cluster = format!("{name}{}", std::process::id());
        testkit::sweep::watch(&cluster);
        let lb_conf = format!(
            "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
            env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"],
        );
        let killed = Killed { env, fake, region, cluster, name: name.to_owned(), lb_conf };
        let hold = neutron.hold(Method::POST, held);
        let (mut process, _dir) = killed.start();
        let Ok(Ok(())) = tokio::time::timeout(WAIT, hold).await else {
            panic!("no POST {held} went through; log:\n{}", process.log())
        };
        process.kill().await;
        let lbs = lb_list(&killed.env, &killed.lb_name()).await;
        let [made] = lbs.as_array().unwrap().as_slice() else { panic!("one load balancer: {lbs}") };
        let made = made.clone();
        (killed, made)
    }

    fn start(&self) -> (Process, tempfile::TempDir) {
        let (env, fake, region) = (&self.env, &self.fake, &self.region);
        crate::load_balancer::start_in_region(env, fake, region, &self.cluster, &self.lb_conf)
    }

    fn lb_name(&self) -> String {
        format!("kube_service_{}_shop_{}", self.cluster, self.name)
    }

    fn group_name(&self) -> String {
        let svc = self.fake.get("v1", "services", "shop", &self.name).unwrap();
        format!("lb-sg-{}-shop-{}", svc["metadata"]["uid"].as_str().unwrap(), self.name)
    }

    /// Deleted, and the load balancer gone with it.
    async fn delete(&self, process: &Process) {
        crate::load_balancer::delete_service(&self.fake, process, "shop", &self.name).await;
        assert_eq!(lb_list(&self.env, &self.lb_name()).await, json!([]), "{}", process.log());
        scene(&self.env, &["region-delete", "--name", &self.region]).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_floating_ip_made_before_a_kill_goes_with_its_service() {
    let _sweep = Sweep::start();
    let (killed, lb) = Killed::after("fipkill", "10.0.0.81", 30081, "/floatingips").await;
    let fips = scene(&killed.env, &["floating-ip-list"]).await;
    let vip = &lb["vip_address"];
    let on_vip: Vec<&Value> =
        fips.as_array().unwrap().iter().filter(|f| f["fixed_ip_address"] == *vip).collect();
    let [fip] = on_vip.as_slice() else { panic!("one floating IP on the VIP: {fips}") };
    assert_eq!(fip["tags"], json!([]), "the kill came before the tags: {fip}");
    let address = fip["floating_ip_address"].clone();

    // Deleted while the controller is down; started again, it cleans up everything.
    killed.fake.delete("v1", "services", "shop", "fipkill");
    let (process, _dir) = killed.start();
    killed.delete(&process).await;
    let fips = scene(&killed.env, &["floating-ip-list"]).await;
    let left: Vec<&Value> =
        fips.as_array().unwrap().iter().filter(|f| f["floating_ip_address"] == address).collect();
    assert!(left.is_empty(), "floating IP {address} outlived its Service: {left:?}");
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_security_group_made_before_a_kill_is_the_one_kept_and_tagged() {
    let _sweep = Sweep::start();
    let (killed, _) = Killed::after("sgkill", "10.0.0.82", 30082, "/security-groups").await;
    let name = killed.group_name();
    let groups = groups_named(&killed.env, &name).await;
    let [group] = groups.as_slice() else { panic!("one group {name}: {groups:?}") };
    assert_eq!(group["tags"], json!([]), "the kill came before the tags: {group}");

    // Started again: the same group, tagged now; no second one.
    let (process, _dir) = killed.start();
    let tagged = until("the group tagged", &process, async || {
        let groups = groups_named(&killed.env, &name).await;
        let tagged = |g: &Value| g["tags"].as_array().is_some_and(|t| !t.is_empty());
        groups.iter().any(tagged).then_some(groups)
    })
    .await;
    let [again] = tagged.as_slice() else { panic!("one group {name}: {tagged:?}") };
    assert_eq!(again["id"], group["id"], "{}", process.log());
    killed.delete(&process).await;
    assert_eq!(groups_named(&killed.env, &name).await, Vec::<Value>::new());
}
