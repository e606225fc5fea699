//! The service controller end to end, continued: names beyond Octavia's limit, internal load
//! balancers and annotation changes, ingress hostnames, a load balancer that goes to ERROR and
//! one Octavia keeps PENDING (helpers in load_balancer.rs; ignored by default, scripts/test.sh runs them).

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{
    OWNER_TAG, delete_service, ingress_ip, lb_list, node, reasons, start, start_with,
    start_with_flags, until,
};
use crate::support::{scene, writes};

/// The load-balancer name the controller documents: upstream's when it fits Octavia's 255
/// bytes, else its first 246 bytes, `_` and the first 8 hex digits of its SHA-256.
fn expected_name(full: &str) -> String {
    if full.len() <= 255 {
        return full.to_owned();
    }
    let hash: String =
        Sha256::digest(full.as_bytes())[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}_{hash}", &full[..246])
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn names_beyond_octavias_limit_stay_apart_and_are_cleaned_up() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("long-a", "10.0.0.151"));
    // Two Services whose full names differ only beyond byte 255.
    for (name, node_port) in [("web-a", 30151), ("web-b", 30152)] {
        fake.create(
            "v1",
            "services",
            "shop",
            load_balancer_service("shop", name, &[(80, node_port)]),
        );
    }
    let tag = format!("long{}", "x".repeat(240));
    let (process, cluster, _dir) = start(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], &tag);
    let a = ingress_ip(&fake, &process, "shop", "web-a").await;
    let b = ingress_ip(&fake, &process, "shop", "web-b").await;
    assert_ne!(a, b, "two Services, one load balancer");
    for (service, node_port, address) in [("web-a", 30151, &a), ("web-b", 30152, &b)] {
        let name = expected_name(&format!("kube_service_{cluster}_shop_{service}"));
        assert_eq!(name.len(), 255);
        let lbs = lb_list(&env, &name).await;
        let [lb] = lbs.as_array().unwrap().as_slice() else {
            panic!("one load balancer named {name}: {lbs}\n{}", process.log())
        };
        assert_eq!(lb["vip_address"], address.as_str());
        let tags = lb["tags"].as_array().unwrap();
        assert!(tags.contains(&json!(name)) && tags.contains(&json!(OWNER_TAG)), "{lb}");
        assert_eq!(lb["pools"][0]["members"], json!([format!("10.0.0.151:{node_port}")]));
    }
    for service in ["web-a", "web-b"] {
        delete_service(&fake, &process, "shop", service).await;
        let name = expected_name(&format!("kube_service_{cluster}_shop_{service}"));
        assert_eq!(lb_list(&env, &name).await, json!([]), "{name} left behind");
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn an_internal_service_gets_no_floating_ip_until_its_annotations_change() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("int-a", "10.0.0.161"));
    let mut service = load_balancer_service("shop", "inside", &[(80, 30161)]);
    service["metadata"]["annotations"] =
        json!({"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"});
    fake.create("v1", "services", "shop", service);
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let (process, cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "int", &lb);
    let name = format!("kube_service_{cluster}_shop_inside");
    // Other tests allocate floating IPs at the same time: only those on this VIP count.
    let floating_ips_on = async |vip: &str| -> Vec<String> {
        let fips = scene(&env, &["floating-ip-list"]).await;
        let fips = fips.as_array().unwrap().iter().filter(|f| f["fixed_ip_address"] == vip);
        fips.filter_map(|f| f["floating_ip_address"].as_str().map(str::to_owned)).collect()
    };

    let internal = ingress_ip(&fake, &process, "shop", "inside").await;
    let lbs = lb_list(&env, &name).await;
    assert_eq!(lbs[0]["vip_address"], internal.as_str(), "internal: the VIP is the ingress");
    assert_eq!(lbs[0]["pools"][0]["lb_algorithm"], "ROUND_ROBIN");
    let none: Vec<String> = vec![];
    assert_eq!(floating_ips_on(&internal).await, none, "an internal load balancer got one");

    // Made external, with another balancing method: a floating IP, the pool updated in place.
    let change = json!({"metadata": {"annotations": {
        "service.beta.kubernetes.io/openstack-internal-load-balancer": "false",
        "loadbalancer.openstack.org/lb-method": "SOURCE_IP"}}});
    fake.patch("v1", "services", "shop", "inside", change);
    let external = until("a floating IP as the ingress", &process, async || {
        let svc = fake.get("v1", "services", "shop", "inside")?;
        let ip = svc.pointer("/status/loadBalancer/ingress/0/ip")?.as_str()?.to_owned();
        ip.starts_with("203.0.113.").then_some(ip)
    })
    .await;
    let pool = until("the pool's new method", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["pools"][0]["lb_algorithm"] == "SOURCE_IP").then(|| lbs[0].clone())
    })
    .await;
    assert_eq!(pool["vip_address"], internal.as_str(), "the load balancer was replaced: {pool}");
    assert_eq!(floating_ips_on(&internal).await, std::slice::from_ref(&external));

    delete_service(&fake, &process, "shop", "inside").await;
    assert_eq!(lb_list(&env, &name).await, json!([]));
    let fips = scene(&env, &["floating-ip-list"]).await;
    let left =
        fips.as_array().unwrap().iter().any(|f| f["floating_ip_address"] == external.as_str());
    assert!(!left, "the floating IP {external} was not released");
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_proxy_protocol_service_gets_an_ingress_hostname_and_the_hostname_annotation_wins() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("host-a", "10.0.0.171"));
    let mut service = load_balancer_service("shop", "proxied", &[(80, 30171)]);
    service["metadata"]["annotations"] =
        json!({"loadbalancer.openstack.org/proxy-protocol": "true"});
    fake.create("v1", "services", "shop", service);
    let lb = format!(
        "subnet-id = {}\nenable-ingress-hostname = true\ningress-hostname-suffix = nip.io\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"]
    );
    let (process, cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "host", &lb);
    let ingress = || async {
        let svc = fake.get("v1", "services", "shop", "proxied")?;
        svc.pointer("/status/loadBalancer/ingress").cloned()
    };
    let first = until("an ingress", &process, ingress).await;
    let lbs = lb_list(&env, &format!("kube_service_{cluster}_shop_proxied")).await;
    let vip = lbs[0]["vip_address"].as_str().unwrap();
    assert_eq!(first, json!([{"hostname": format!("{vip}.nip.io")}]));

    let named = json!({"metadata": {"annotations": {"loadbalancer.openstack.org/hostname": "shop.example.com"}}});
    fake.patch("v1", "services", "shop", "proxied", named);
    until("the annotation's hostname", &process, async || {
        (ingress().await? == json!([{"hostname": "shop.example.com"}])).then_some(())
    })
    .await;
    delete_service(&fake, &process, "shop", "proxied").await;
}

/// Issue 41 (4): with the global `enable-ingress-hostname` off, the annotation gives one
/// PROXY-protocol Service `<VIP>.<ingress-hostname-suffix>` and takes it back, each time at the
/// next reconcile with no change sent to Octavia; another Service keeps its address.
#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn the_enable_ingress_hostname_annotation_flips_one_services_status_and_nothing_else() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("name-a", "10.0.0.173"));
    let proxied = json!({"loadbalancer.openstack.org/proxy-protocol": "true"});
    for (name, node_port) in [("asked", 30173), ("other", 30174)] {
        let mut service = load_balancer_service("shop", name, &[(80, node_port)]);
        service["metadata"]["annotations"] = proxied.clone();
        fake.create("v1", "services", "shop", service);
    }
    let lb = format!(
        "subnet-id = {}\ningress-hostname-suffix = example.test\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"]
    );
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (process, cluster, port, _dir) = start_with_flags(&env, &fake, cloud, "name", &lb, &[]);
    let ingress = |name: &'static str| {
        let fake = fake.clone();
        async move || {
            fake.get("v1", "services", "shop", name)?
                .pointer("/status/loadBalancer/ingress")
                .cloned()
        }
    };
    let stack = &env;
    let vip = |name: &str| {
        let name = format!("kube_service_{cluster}_shop_{name}");
        async move || {
            let lbs = lb_list(stack, &name).await;
            let [lb] = lbs.as_array()?.as_slice() else { return None };
            Some((lb["id"].as_str()?.to_owned(), lb["vip_address"].as_str()?.to_owned()))
        }
    };
    let (id, address) = until("the load balancer of shop/asked", &process, vip("asked")).await;
    let plain = json!([{"ip": address, "ipMode": "Proxy"}]);
    let named = json!([{"hostname": format!("{address}.example.test")}]);
    until("the address as the ingress", &process, async || {
        (ingress("asked")().await? == plain).then_some(())
    })
    .await;
    let (_, other) = until("the load balancer of shop/other", &process, vip("other")).await;
    let other_ingress = json!([{"ip": other, "ipMode": "Proxy"}]);
    until("the other's ingress", &process, async || {
        (ingress("other")().await? == other_ingress).then_some(())
    })
    .await;

    let before = writes(port, "load-balancer").await;
    for (value, want) in [("true", &named), ("false", &plain), ("true", &named)] {
        let toggle = json!({"metadata": {"annotations": {
            "loadbalancer.openstack.org/enable-ingress-hostname": value}}});
        fake.patch("v1", "services", "shop", "asked", toggle);
        until(&format!("the ingress with the annotation {value}"), &process, async || {
            (ingress("asked")().await? == *want).then_some(())
        })
        .await;
    }
    assert_eq!(writes(port, "load-balancer").await, before, "a change went to Octavia");
    assert_eq!(vip("asked")().await.map(|(id, _)| id), Some(id), "the load balancer was replaced");
    assert_eq!(ingress("other")().await, Some(other_ingress), "the other Service changed");
    for name in ["asked", "other"] {
        delete_service(&fake, &process, "shop", name).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_load_balancer_in_error_is_replaced_and_the_service_follows() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("err-a", "10.0.0.181"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "broken", &[(80, 30181)]));
    let lb = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let flags = ["--load-balancer-resync-period=2s"];
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (process, cluster, _port, _dir) = start_with_flags(&env, &fake, cloud, "err", &lb, &flags);
    let name = format!("kube_service_{cluster}_shop_broken");
    ingress_ip(&fake, &process, "shop", "broken").await;
    let lbs = lb_list(&env, &name).await;
    let broken = lbs[0]["id"].as_str().unwrap().to_owned();
    let marked = scene(&env, &["loadbalancer-break", &broken]).await;
    assert_eq!(marked["provisioning_status"], "ERROR");

    // The next resync sees ERROR: ours, so deleted and made again; the ingress follows.
    let replaced: Value = until("a new ACTIVE load balancer", &process, async || {
        let lbs = lb_list(&env, &name).await;
        let [lb] = lbs.as_array()?.as_slice() else { return None };
        (lb["id"] != broken.as_str() && lb["provisioning_status"] == "ACTIVE").then(|| lb.clone())
    })
    .await;
    until("the new VIP as the ingress", &process, async || {
        let svc = fake.get("v1", "services", "shop", "broken")?;
        (svc.pointer("/status/loadBalancer/ingress/0/ip")? == &replaced["vip_address"])
            .then_some(())
    })
    .await;
    assert_eq!(replaced["pools"][0]["members"], json!(["10.0.0.181:30181"]));
    delete_service(&fake, &process, "shop", "broken").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_load_balancer_octavia_keeps_pending_is_waited_for_and_said_so() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("slow-a", "10.0.0.185"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "slow", &[(80, 30185)]));
    let lb = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let (process, cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "slow", &lb);
    let name = format!("kube_service_{cluster}_shop_slow");
    ingress_ip(&fake, &process, "shop", "slow").await;
    let id = lb_list(&env, &name).await[0]["id"].as_str().unwrap().to_owned();
    let pending = ["loadbalancer-break", &id, "--status", "PENDING_UPDATE"];
    assert_eq!(scene(&env, &pending).await["provisioning_status"], "PENDING_UPDATE");

    // A change to make while Octavia is busy: the controller says it waits, once.
    let ranges = json!({"spec": {"loadBalancerSourceRanges": ["192.0.2.0/24"]}});
    fake.patch("v1", "services", "shop", "slow", ranges);
    let said = "to leave PENDING_UPDATE";
    process.wait_line(said, crate::load_balancer::WAIT).await;
    until("the WaitingForLoadBalancer event", &process, async || {
        reasons(&fake).iter().any(|r| r == "WaitingForLoadBalancer").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(process.log().matches(said).count(), 1, "{}", process.log());
    scene(&env, &["loadbalancer-break", &id, "--status", "ACTIVE"]).await;
    until("the change made once Octavia is done", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["listeners"][0]["allowed_cidrs"] == json!(["192.0.2.0/24"])).then_some(())
    })
    .await;
    delete_service(&fake, &process, "shop", "slow").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
}
