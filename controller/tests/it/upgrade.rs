//! Moving a cluster from the in-tree OpenStack provider to this controller (ignored by default;
//! scripts/test.sh runs it): the test scene makes in the real Octavia and Neutron exactly what
//! the in-tree provider left (`openstack_scene.py made-lb-create --by in-tree`: `a<uid32>`
//! load balancers, floating IPs without description, the Service's group on the VIP port and
//! remote-group rules in the nodes' group), the Services carry the status it wrote, then our
//! controller starts.

use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{OWNER_TAG, delete_service, lb_list, node, reasons, start_with, until};
use crate::support::scene;

pub(crate) const ANNOTATION: &str = "loadbalancer.openstack.org/load-balancer-id";

/// The addresses of the floating IPs on port `port` (a VIP's): one per load balancer, never a
/// second. (Counted per object, not per project: other tests run beside this one.)
pub(crate) async fn floating_ips_on(env: &StackEnv, port: &Value) -> Vec<String> {
    let fips = scene(env, &["floating-ip-list"]).await;
    let on = fips.as_array().unwrap().iter().filter(|f| f["port_id"] == *port);
    on.filter_map(|f| f["floating_ip_address"].as_str().map(str::to_owned)).collect()
}

/// The security groups named `name`.
pub(crate) async fn groups_named(env: &StackEnv, name: &str) -> Vec<Value> {
    scene(env, &["security-group-list", "--name", name])
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The in-tree provider's load-balancer name for the Service of `uid` (`a<uid32>`).
pub(crate) fn in_tree_name(uid: &str) -> String {
    format!("a{}", uid.replace('-', ""))[..32].to_owned()
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn what_the_in_tree_provider_made_is_adopted_in_place_and_goes_with_its_service() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let member = "10.0.0.161";
    let port = scene(&env, &["port-create", "--fixed-ip", member]).await;
    let port_id = port["id"].as_str().unwrap().to_owned();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("intree-a", member));
    // An external Service of two ports with its floating IP and the in-tree security-group
    // layout, and an internal one with source ranges.
    let ext = load_balancer_service("shop", "ext", &[(80, 30161), (443, 30162)]);
    let ext = fake.create("v1", "services", "shop", ext);
    let mut int = load_balancer_service("shop", "int", &[(5432, 30163)]);
    int["metadata"]["annotations"] =
        json!({"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"});
    int["spec"]["loadBalancerSourceRanges"] = json!(["10.1.0.0/16"]);
    let int = fake.create("v1", "services", "shop", int);
    let uid = |svc: &Value| svc["metadata"]["uid"].as_str().unwrap().to_owned();
    let (ext_uid, int_uid) = (uid(&ext), uid(&int));
    let made_ext = scene(
        &env,
        &[
            "made-lb-create",
            "--by",
            "in-tree",
            "--namespace",
            "shop",
            "--service",
            "ext",
            "--uid",
            &ext_uid,
            "--port",
            "80:30161",
            "--port",
            "443:30162",
            "--member",
            member,
            "--floating-ip",
            "--security-group",
            "--member-port",
            &port_id,
        ],
    )
    .await;
    let made_int = scene(
        &env,
        &[
            "made-lb-create",
            "--by",
            "in-tree",
            "--namespace",
            "shop",
            "--service",
            "int",
            "--uid",
            &int_uid,
            "--port",
            "5432:30163",
            "--member",
            member,
        ],
    )
    .await;
    let fip = made_ext["floating_ip"]["floating_ip_address"].as_str().unwrap().to_owned();
    let status =
        |ip: &str| json!({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}});
    fake.patch("v1", "services", "shop", "ext", status(&fip));
    fake.patch("v1", "services", "shop", "int", status(made_int["vip_address"].as_str().unwrap()));
    let node_group = made_ext["node_group"].as_str().unwrap().to_owned();
    let lb_group = made_ext["security_group"].as_str().unwrap().to_owned();

    let conf = format!(
        "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let (process, cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "intree", &conf);

    for (name, made, address) in [
        ("ext", &made_ext, fip.as_str()),
        ("int", &made_int, made_int["vip_address"].as_str().unwrap()),
    ] {
        // Annotated with its load balancer's ID, which keeps its name, VIP and listeners and
        // gains our tags; the status stays.
        let svc = until(&format!("{name} annotated and settled"), &process, async || {
            let svc = fake.get("v1", "services", "shop", name)?;
            let lbs = lb_list(&env, made["name"].as_str()?).await;
            let tagged = lbs[0]["tags"].as_array()?.contains(&json!(OWNER_TAG));
            (svc["metadata"]["annotations"][ANNOTATION] == made["id"] && tagged).then_some(svc)
        })
        .await;
        assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ip"], address);
        let lb = lb_list(&env, made["name"].as_str().unwrap()).await[0].clone();
        assert_eq!((&lb["id"], &lb["vip_address"]), (&made["id"], &made["vip_address"]));
        let mut ids: Vec<&Value> =
            lb["listener_details"].as_array().unwrap().iter().map(|l| &l["id"]).collect();
        let mut made_ids: Vec<&Value> =
            made["listeners"].as_array().unwrap().iter().map(|l| &l["id"]).collect();
        ids.sort_by_key(|v| v.to_string());
        made_ids.sort_by_key(|v| v.to_string());
        assert_eq!(ids, made_ids, "{lb}");
    }
    let int_lb = lb_list(&env, &in_tree_name(&int_uid)).await[0].clone();
    assert_eq!(int_lb["listeners"][0]["allowed_cidrs"], json!(["10.1.0.0/16"]));
    // No second load balancer, floating IP or group anywhere in the project.
    let group_name = format!("lb-sg-{ext_uid}-shop-ext");
    until("the security group taken over", &process, async || {
        let groups = groups_named(&env, &group_name).await;
        groups[0]["tags"].as_array()?.contains(&json!(OWNER_TAG)).then_some(())
    })
    .await;
    assert_eq!(groups_named(&env, &group_name).await.len(), 1);
    assert_eq!(floating_ips_on(&env, &made_ext["vip_port_id"]).await, std::slice::from_ref(&fip));
    assert_eq!(floating_ips_on(&env, &made_int["vip_port_id"]).await, Vec::<String>::new());
    assert_eq!(lb_list(&env, &format!("kube_service_{cluster}_shop_ext")).await, json!([]));
    assert_eq!(lb_list(&env, &format!("kube_service_{cluster}_shop_int")).await, json!([]));
    // The in-tree layout is gone: our group on the member's port, no rule in the nodes' group
    // that names it.
    let port = scene(&env, &["port-show", &port_id]).await;
    assert!(port["security_groups"].as_array().unwrap().contains(&json!(lb_group)), "{port}");
    let groups = scene(&env, &["security-group-list"]).await;
    let nodes = groups.as_array().unwrap().iter().find(|g| g["id"] == node_group.as_str()).unwrap();
    assert!(
        nodes["rules"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["remote_group_id"] != lb_group.as_str()),
        "{nodes}"
    );
    let events = reasons(&fake);
    assert_eq!(events.iter().filter(|r| *r == "AdoptedLoadBalancer").count(), 2, "{events:?}");

    // A new Service gets a load balancer of our name.
    fake.create("v1", "services", "shop", load_balancer_service("shop", "new", &[(80, 30164)]));
    let new_name = format!("kube_service_{cluster}_shop_new");
    until("the new Service's load balancer", &process, async || {
        let svc = fake.get("v1", "services", "shop", "new")?;
        svc.pointer("/status/loadBalancer/ingress/0/ip")?;
        (lb_list(&env, &new_name).await.as_array()?.len() == 1).then_some(())
    })
    .await;

    // Deleting each Service leaves nothing: load balancer, floating IP (the in-tree provider's,
    // released as it would have released it), group.
    for name in ["ext", "int", "new"] {
        delete_service(&fake, &process, "shop", name).await;
    }
    let fips = scene(&env, &["floating-ip-list"]).await;
    assert!(
        !fips.as_array().unwrap().iter().any(|f| f["floating_ip_address"] == fip.as_str()),
        "the in-tree floating IP is left:\n{}",
        process.log()
    );
    assert_eq!(lb_list(&env, &in_tree_name(&ext_uid)).await, json!([]));
    assert_eq!(lb_list(&env, &in_tree_name(&int_uid)).await, json!([]));
    assert_eq!(lb_list(&env, &new_name).await, json!([]));
    assert_eq!(groups_named(&env, &group_name).await, Vec::<Value>::new(), "{}", process.log());
    assert_eq!(groups_named(&env, &format!("lb-sg-{int_uid}-shop-int")).await, Vec::<Value>::new());
    scene(&env, &["port-delete", &port_id]).await;
    scene(&env, &["security-group-delete", &node_group]).await;
}
