//! Taking over from upstream's CCM (ignored by default; scripts/test.sh runs it): the test scene
//! makes in the real Octavia and Neutron exactly what cloud-provider-openstack's CCM makes for a
//! Service (`openstack_scene.py made-lb-create`), the Service carries what it writes (the
//! `load-balancer-id` annotation, the finalizer, the status), then our controller starts.

use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{
    FINALIZER, OWNER_TAG, delete_service, ingress, lb_list, node, reasons, start_with, until,
};
use crate::support::{Process, scene};

const ANNOTATION: &str = "loadbalancer.openstack.org/load-balancer-id";

/// The Service `shop/<name>` on `fake`, as upstream's CCM leaves it: its finalizer, the
/// annotation naming `lb` (when `annotated`) and the status with `address`.
fn as_upstream_left_it(fake: &Cluster, name: &str, lb: &Value, address: &str, annotated: bool) {
    let mut meta = json!({"finalizers": [FINALIZER]});
    if annotated {
        meta["annotations"] = json!({ANNOTATION: lb["id"]});
    }
    let status = json!({"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}});
    fake.patch("v1", "services", "shop", name, json!({"metadata": meta, "status": status}));
}

/// The one load balancer named `name`, once `check` holds for it.
async fn the_load_balancer(
    env: &StackEnv,
    process: &Process,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    until(what, process, async || {
        let lbs = lb_list(env, name).await;
        let all = lbs.as_array()?;
        assert!(all.len() <= 1, "a second load balancer named {name}: {lbs}\n{}", process.log());
        all.first().filter(|lb| check(lb)).cloned()
    })
    .await
}

fn tags(object: &Value) -> Vec<&str> {
    object["tags"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn floating_ip<'a>(fips: &'a Value, address: &str) -> Option<&'a Value> {
    fips.as_array()?.iter().find(|f| f["floating_ip_address"] == address)
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn upstreams_load_balancers_are_taken_over_as_they_are_and_go_with_their_services() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let (a, b) = ("10.0.0.151", "10.0.0.152");
    let port_a = scene(&env, &["port-create", "--fixed-ip", a]).await;
    let port_b = scene(&env, &["port-create", "--fixed-ip", b]).await;
    let (id_a, id_b) = (port_a["id"].as_str().unwrap(), port_b["id"].as_str().unwrap());
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("up-a", a));
    let tag = "up";
    let cluster = format!("{tag}{}", std::process::id());
    // "tagged": upstream on an Octavia with tags, with the annotation it writes; "plain": on one
    // without (descriptions only), a Service without the annotation.
    let mut made = Vec::new();
    for (name, by, node_port, annotated) in
        [("tagged", "upstream", 30150, true), ("plain", "upstream-untagged", 30151, false)]
    {
        let svc = fake.create(
            "v1",
            "services",
            "shop",
            load_balancer_service("shop", name, &[(80, node_port)]),
        );
        let uid = svc["metadata"]["uid"].as_str().unwrap().to_owned();
        let ports = format!("80:{node_port}");
        let lb = scene(
            &env,
            &[
                "made-lb-create",
                "--by",
                by,
                "--cluster",
                &cluster,
                "--namespace",
                "shop",
                "--service",
                name,
                "--uid",
                &uid,
                "--port",
                &ports,
                "--member",
                a,
                "--floating-ip",
                "--security-group",
                "--member-port",
                id_a,
            ],
        )
        .await;
        let address = lb["floating_ip"]["floating_ip_address"].as_str().unwrap().to_owned();
        as_upstream_left_it(&fake, name, &lb, &address, annotated);
        // Upstream's member, with its ID and subnet: both must outlive the take-over.
        let listed = lb_list(&env, lb["name"].as_str().unwrap()).await;
        let member = listed[0]["pools"][0]["member_details"][0].clone();
        assert_eq!(member["subnet_id"], env["OPENSTACK_INTERNAL_SUBNET_ID"].as_str(), "{listed}");
        made.push((name, lb, address, uid, member));
    }
    let fips_before = scene(&env, &["floating-ip-list"]).await;
    let conf = format!(
        "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let (process, started, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], tag, &conf);
    assert_eq!(started, cluster);

    for (name, lb, address, uid, member) in &made {
        let lb_name = format!("kube_service_{cluster}_shop_{name}");
        let taken = the_load_balancer(&env, &process, &lb_name, "our tags on upstream's", |lb| {
            tags(lb).contains(&OWNER_TAG)
        })
        .await;
        // The same load balancer, VIP, listener and pool; our tags beside upstream's name tag.
        assert_eq!((&taken["id"], &taken["vip_address"]), (&lb["id"], &lb["vip_address"]));
        assert_eq!(tags(&taken), [OWNER_TAG, lb_name.as_str()], "{taken}");
        let listener = &taken["listener_details"][0];
        assert_eq!(listener["id"], lb["listeners"][0]["id"], "{taken}");
        assert_eq!(listener["name"], format!("listener_0_{lb_name}"));
        assert_eq!(tags(listener), [OWNER_TAG, lb_name.as_str()]);
        assert_eq!(taken["pools"][0]["id"], lb["listeners"][0]["pool_id"]);
        // The member that was right stays as it was: same ID, upstream's subnet.
        assert_eq!(taken["pools"][0]["member_details"], json!([member]), "{taken}");
        // The floating IP stays on the VIP, and so does the Service's status.
        let fip = floating_ip(&fips_before, address).unwrap();
        let svc = until("the Service reconciled", &process, async || {
            let svc = fake.get("v1", "services", "shop", name)?;
            (svc["status"]["loadBalancer"]["ingress"][0]["ip"] == address.as_str()).then_some(svc)
        })
        .await;
        assert_eq!(svc["metadata"]["finalizers"], json!([FINALIZER]));
        let now = scene(&env, &["floating-ip-list"]).await;
        assert_eq!(floating_ip(&now, address).unwrap()["port_id"], fip["port_id"]);
        // Upstream's security group, taken over: tagged as ours (last, once it is all done:
        // the status, which upstream had already written, says nothing of it), still on the
        // member's port.
        let group_name = format!("lb-sg-{uid}-shop-{name}");
        let group = until("upstream's group tagged as ours", &process, async || {
            let groups = scene(&env, &["security-group-list", "--name", &group_name]).await;
            let [group] = groups.as_array()?.as_slice() else { panic!("one group: {groups}") };
            tags(group).contains(&OWNER_TAG).then(|| group.clone())
        })
        .await;
        let group = &group;
        let port = scene(&env, &["port-show", id_a]).await;
        assert!(port["security_groups"].as_array().unwrap().contains(&group["id"]), "{port}");
        // Its rule as upstream made it, the NodePort from the member subnet only: behind the
        // amphora the load balancer is the NodePort's only client, so a take-over must not
        // open it to everyone (it did: `0.0.0.0/0`).
        let node_port = if *name == "tagged" { 30150 } else { 30151 };
        let subnet = env["OPENSTACK_INTERNAL_CIDR"].to_owned();
        assert_eq!(ingress(group), [("tcp".to_owned(), node_port, subnet)], "{group}");
    }
    let events = reasons(&fake);
    assert_eq!(events.iter().filter(|r| *r == "AdoptedLoadBalancer").count(), 2, "{events:?}");
    assert!(!events.iter().any(|r| r == "SyncLoadBalancerFailed"), "{events:?}\n{}", process.log());
    // Nothing new: no second load balancer or group (checked above), nor floating IP on a VIP
    // (counted per object, not per project: other tests run beside this one).
    let fips = scene(&env, &["floating-ip-list"]).await;
    for (_, lb, address, _, _) in &made {
        let on = fips.as_array().unwrap().iter().filter(|f| f["port_id"] == lb["vip_port_id"]);
        let on: Vec<&Value> = on.map(|f| &f["floating_ip_address"]).collect();
        assert_eq!(on, [&json!(address)]);
    }

    // A node joins: a member of the same pools, the group on its port too.
    fake.create("v1", "nodes", "", node("up-b", b));
    for (name, lb, _, uid, member) in &made {
        let lb_name = format!("kube_service_{cluster}_shop_{name}");
        let node_port = if *name == "tagged" { 30150 } else { 30151 };
        let both = json!([format!("{a}:{node_port}"), format!("{b}:{node_port}")]);
        let joined = the_load_balancer(&env, &process, &lb_name, "the second member", |lb| {
            lb["pools"][0]["members"] == both
        })
        .await;
        assert_eq!(joined["pools"][0]["id"], lb["listeners"][0]["pool_id"]);
        // The batch update that added it kept upstream's member as it was.
        assert_eq!(joined["pools"][0]["member_details"][0], *member, "{joined}");
        let group_name = format!("lb-sg-{uid}-shop-{name}");
        until("the group on the new member's port", &process, async || {
            let groups = scene(&env, &["security-group-list", "--name", &group_name]).await;
            let port = scene(&env, &["port-show", id_b]).await;
            port["security_groups"].as_array()?.contains(&groups[0]["id"]).then_some(())
        })
        .await;
    }

    // Deleting the Services removes all of it: load balancers, floating IPs (upstream's, by
    // their description), groups; upstream itself leaves nothing less.
    for (name, _, address, uid, _) in &made {
        delete_service(&fake, &process, "shop", name).await;
        let lb_name = format!("kube_service_{cluster}_shop_{name}");
        assert_eq!(lb_list(&env, &lb_name).await, json!([]), "{}", process.log());
        let fips = scene(&env, &["floating-ip-list"]).await;
        assert!(floating_ip(&fips, address).is_none(), "floating IP {address} left behind");
        let group_name = format!("lb-sg-{uid}-shop-{name}");
        let groups = scene(&env, &["security-group-list", "--name", &group_name]).await;
        assert_eq!(groups, json!([]), "{}", process.log());
    }
    for port in [id_a, id_b] {
        scene(&env, &["port-delete", port]).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_load_balancer_of_upstreams_default_cluster_name_is_renamed_in_place() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    let member = "10.0.0.155";
    fake.create("v1", "nodes", "", node("rename-a", member));
    let name = format!("old{}", std::process::id());
    let svc =
        fake.create("v1", "services", "shop", load_balancer_service("shop", &name, &[(80, 30155)]));
    let uid = svc["metadata"]["uid"].as_str().unwrap().to_owned();
    let lb = scene(
        &env,
        &[
            "made-lb-create",
            "--by",
            "upstream",
            "--namespace",
            "shop",
            "--service",
            &name,
            "--uid",
            &uid,
            "--port",
            "80:30155",
            "--member",
            member,
        ],
    )
    .await;
    let old = format!("kube_service_kubernetes_shop_{name}");
    assert_eq!(lb["name"], old.as_str());
    as_upstream_left_it(&fake, &name, &lb, lb["vip_address"].as_str().unwrap(), true);
    let (process, cluster, _dir) = start_with(
        &env,
        &fake,
        &env["OPENSTACK_CLOUD_APPCRED"],
        "renamed",
        &format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]),
    );
    let new = format!("kube_service_{cluster}_shop_{name}");
    let renamed =
        the_load_balancer(&env, &process, &new, "the renamed load balancer", |_| true).await;
    assert_eq!((&renamed["id"], &renamed["vip_address"]), (&lb["id"], &lb["vip_address"]));
    assert_eq!(
        renamed["description"],
        format!("Kubernetes external service shop/{name} from cluster {cluster}")
    );
    assert_eq!(tags(&renamed), [OWNER_TAG, new.as_str()]);
    let listener = &renamed["listener_details"][0];
    assert_eq!(
        (&listener["id"], listener["name"].as_str()),
        (&lb["listeners"][0]["id"], Some(format!("listener_0_{new}").as_str()))
    );
    assert_eq!(tags(listener), [OWNER_TAG, new.as_str()]);
    assert_eq!(renamed["pools"][0]["name"], format!("pool_0_{new}"));
    assert_eq!(lb_list(&env, &old).await, json!([]));
    assert!(reasons(&fake).iter().any(|r| r == "RenamedLoadBalancer"), "{}", process.log());
    delete_service(&fake, &process, "shop", &name).await;
    assert_eq!(lb_list(&env, &new).await, json!([]), "{}", process.log());
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn an_annotation_naming_a_deleted_load_balancer_is_cleared_and_the_service_gets_its_own() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("stale-a", "10.0.0.156"));
    let gone = scene(&env, &["loadbalancer-create", "--name", "stale-annotation"]).await;
    let gone_id = gone["id"].as_str().unwrap();
    scene(&env, &["loadbalancer-delete", gone_id]).await;
    let mut svc = load_balancer_service("shop", "stale", &[(80, 30156)]);
    svc["metadata"]["annotations"] = json!({ANNOTATION: gone_id});
    fake.create("v1", "services", "shop", svc);
    let (process, cluster, _dir) = start_with(
        &env,
        &fake,
        &env["OPENSTACK_CLOUD_APPCRED"],
        "stale",
        &format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]),
    );
    let name = format!("kube_service_{cluster}_shop_stale");
    let lb = the_load_balancer(&env, &process, &name, "the Service's own load balancer", |lb| {
        lb["provisioning_status"] == "ACTIVE"
    })
    .await;
    assert_ne!(lb["id"], gone_id);
    let svc = until("the ingress", &process, async || {
        let svc = fake.get("v1", "services", "shop", "stale")?;
        svc.pointer("/status/loadBalancer/ingress/0/ip").is_some().then_some(svc)
    })
    .await;
    assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ip"], lb["vip_address"]);
    // Cleared, then the new load balancer's ID written, as on every Service of ours.
    assert_eq!(svc["metadata"]["annotations"][ANNOTATION], lb["id"], "{svc}");
    assert!(reasons(&fake).iter().any(|r| r == "ClearedLoadBalancerId"));
    delete_service(&fake, &process, "shop", "stale").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
}
