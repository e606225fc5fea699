//! The service controller end to end (ignored by default; scripts/test.sh runs it): the
//! controller binary against the `fake-kube-apiserver` binary, Nodes and Services created,
//! patched and deleted with real kubectl (testkit's `Cluster`), and the real Octavia (no-op
//! drivers), Neutron and Keystone of scripts/openstack-up.sh.

use std::time::Duration;

use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::{NodeFixture, is_tainted, load_balancer_service};
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::proxy::OctaviaFront;
use crate::support::{Process, requests, scene, start_ccm};

/// Long enough for a few of the controller's retries (its backoff starts at 5 s) on a loaded stack.
pub(crate) const WAIT: Duration = Duration::from_secs(180);
pub(crate) const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";
pub(crate) const OWNER_TAG: &str = "kube_managed_by_openstack-cloud-controller-manager";

pub(crate) fn node(name: &str, ip: &str) -> Value {
    let mut node = NodeFixture::initialized(name).build();
    node["status"]["addresses"] = json!([{"type": "InternalIP", "address": ip}]);
    node
}

/// Polls `check` every half second until it returns `Some`, or fails after [`WAIT`] saying
/// what it waited for.
pub(crate) async fn until<T>(
    what: &str,
    process: &Process,
    mut check: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        let log = || process.log();
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {what} within {WAIT:?}; log:\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A cloud config authenticating as `cloud` of the stack's clouds.yaml, with `lb` as the
/// `[LoadBalancer]` section's keys.
pub(crate) fn clouds_conf(env: &StackEnv, cloud: &str, lb: &str) -> String {
    format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = {cloud}\n\n[LoadBalancer]\n{lb}",
        env["OPENSTACK_CLOUDS_YAML"]
    )
}

/// The controller binary with only the service controller, for `cloud` of the stack, against
/// `fake`; `tag` makes the cluster name (and so every load-balancer name) this test's own.
pub(crate) fn start(
    env: &StackEnv,
    fake: &Cluster,
    cloud: &str,
    tag: &str,
) -> (Process, String, tempfile::TempDir) {
    start_with(
        env,
        fake,
        cloud,
        tag,
        &format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]),
    )
}

/// [`start`] with `lb` as the `[LoadBalancer]` section's keys.
pub(crate) fn start_with(
    env: &StackEnv,
    fake: &Cluster,
    cloud: &str,
    tag: &str,
    lb: &str,
) -> (Process, String, tempfile::TempDir) {
    let (process, cluster, _port, dir) = start_with_flags(env, fake, cloud, tag, lb, &[]);
    (process, cluster, dir)
}

/// [`start_with`] with `extra` flags: also the port of /metrics.
pub(crate) fn start_with_flags(
    env: &StackEnv,
    fake: &Cluster,
    cloud: &str,
    tag: &str,
    lb: &str,
    extra: &[&str],
) -> (Process, String, u16, tempfile::TempDir) {
    assert!(
        env.get("OPENSTACK_LOADBALANCER_URL").is_some(),
        "the stack runs no Octavia: start it with scripts/openstack-up.sh (not OPENSTACK_OCTAVIA=0)"
    );
    let cluster = format!("{tag}{}", std::process::id());
    let conf = clouds_conf(env, cloud, lb);
    let cluster_flag = format!("--cluster-name={cluster}");
    testkit::sweep::watch(&cluster); // what its CCM makes carries the cluster name
    let mut flags = vec!["--controllers=service", &cluster_flag, "--leader-elect=false"];
    flags.extend(extra);
    let (process, port, dir) = start_ccm(&fake.url(), &conf, &flags);
    (process, cluster, port, dir)
}

/// A cloud config authenticating with the stack's application credential in `region` (whose
/// catalog a test points at its fronts), with `lb` as the `[LoadBalancer]` section's keys.
pub(crate) fn region_conf(env: &StackEnv, region: &str, lb: &str) -> String {
    format!(
        "[Global]\nauth-url = {}\napplication-credential-id = {}\napplication-credential-secret = \
         {}\nregion = {region}\n\n[LoadBalancer]\n{lb}",
        env["OPENSTACK_AUTH_URL"], env["OPENSTACK_APPCRED_ID"], env["OPENSTACK_APPCRED_SECRET"],
    )
}

/// The controller binary with only the service controller, as cluster `cluster`, in `region`
/// (see [`region_conf`]).
pub(crate) fn start_in_region(
    env: &StackEnv,
    fake: &Cluster,
    region: &str,
    cluster: &str,
    lb: &str,
) -> (Process, tempfile::TempDir) {
    let conf = region_conf(env, region, lb);
    let cluster_flag = format!("--cluster-name={cluster}");
    let flags = ["--controllers=service", &cluster_flag, "--leader-elect=false"];
    let (process, _port, dir) = start_ccm(&fake.url(), &conf, &flags);
    (process, dir)
}

/// The controller binary with only the service controller, as cluster `<tag><pid>`, in region
/// `region` made here, whose catalog sends Octavia calls to `octavia` (a test's front before the
/// real one): the process, the cluster name and its directory. The caller deletes the region.
pub(crate) async fn start_behind(
    env: &StackEnv,
    fake: &Cluster,
    octavia: &str,
    region: &str,
    tag: &str,
) -> (Process, String, tempfile::TempDir) {
    scene(env, &["region-create", "--name", region, "--load-balancer", octavia]).await;
    let cluster = format!("{tag}{}", std::process::id());
    testkit::sweep::watch(&cluster); // what its CCM makes carries the cluster name
    let lb = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let (process, dir) = start_in_region(env, fake, region, &cluster, &lb);
    (process, cluster, dir)
}

pub(crate) async fn lb_list(env: &StackEnv, name: &str) -> Value {
    scene(env, &["loadbalancer-list", "--name", name]).await
}

/// Waits for the Service's `status.loadBalancer.ingress[0].ip`.
pub(crate) async fn ingress_ip(
    fake: &Cluster,
    process: &Process,
    namespace: &str,
    name: &str,
) -> String {
    until(&format!("ingress on Service {namespace}/{name}"), process, async || {
        let svc = fake.get("v1", "services", namespace, name)?;
        svc.pointer("/status/loadBalancer/ingress/0/ip").and_then(Value::as_str).map(str::to_owned)
    })
    .await
}

/// Deletes the Service and waits until the controller let it go (its finalizer removed).
pub(crate) async fn delete_service(fake: &Cluster, process: &Process, namespace: &str, name: &str) {
    fake.delete("v1", "services", namespace, name);
    until(&format!("Service {namespace}/{name} gone"), process, async || {
        fake.get("v1", "services", namespace, name).is_none().then_some(())
    })
    .await;
}

pub(crate) fn reasons(fake: &Cluster) -> Vec<String> {
    let events = fake.list("events.k8s.io/v1", "events");
    events.iter().filter_map(|e| e["reason"].as_str().map(str::to_owned)).collect()
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_service_gets_a_load_balancer_that_follows_its_nodes_and_goes_with_it() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    // The first node's address is a real port: with no subnet-id configured the VIP subnet is
    // taken from it, as upstream does.
    let port = scene(&env, &["port-create", "--fixed-ip", "10.0.0.51"]).await;
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("lb-node-a", "10.0.0.51"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "web", &[(80, 30080)]));
    let (process, cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "e2e", "");
    let name = format!("kube_service_{cluster}_shop_web");
    let lb_list = || lb_list(&env, &name);

    let ingress = ingress_ip(&fake, &process, "shop", "web").await;
    let svc = fake.get("v1", "services", "shop", "web").unwrap();
    assert_eq!(svc["metadata"]["finalizers"], json!([FINALIZER]));
    let lbs = lb_list().await;
    let [lb] = lbs.as_array().unwrap().as_slice() else { panic!("one load balancer: {lbs}") };
    assert_eq!(lb["provisioning_status"], "ACTIVE");
    assert_eq!(lb["vip_address"], ingress.as_str());
    assert!(lb["tags"].as_array().unwrap().contains(&json!(name)), "{lb}");
    assert_eq!(
        lb["listeners"],
        json!([{"protocol": "TCP", "protocol_port": 80, "allowed_cidrs": null}])
    );
    assert_eq!(lb["pools"][0]["members"], json!(["10.0.0.51:30080"]));

    // A second Ready node joins every pool.
    fake.create("v1", "nodes", "", node("lb-node-b", "10.0.0.52"));
    until("the second node as a member", &process, async || {
        let lbs = lb_list().await;
        (lbs[0]["pools"][0]["members"] == json!(["10.0.0.51:30080", "10.0.0.52:30080"]))
            .then_some(())
    })
    .await;

    // Deleting the Service deletes the load balancer, then the finalizer lets it go.
    delete_service(&fake, &process, "shop", "web").await;
    assert_eq!(lb_list().await, json!([]), "the load balancer is left behind");
    let reasons = reasons(&fake);
    let wanted = [
        "EnsuringLoadBalancer",
        "EnsuredLoadBalancer",
        "DeletingLoadBalancer",
        "DeletedLoadBalancer",
    ];
    for reason in wanted {
        assert!(reasons.iter().any(|r| r == reason), "no {reason}: {reasons:?}\n{}", process.log());
    }
    assert!(!process.log().contains(&env["OPENSTACK_APPCRED_SECRET"]), "a secret reached the log");
    scene(&env, &["port-delete", port["id"].as_str().unwrap()]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_service_made_cluster_ip_gives_its_load_balancer_back_without_a_failed_sync() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("away-a", "10.0.0.63"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "away", &[(80, 30063)]));
    let (process, cluster, _dir) = start(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "away");
    let name = format!("kube_service_{cluster}_shop_away");
    ingress_ip(&fake, &process, "shop", "away").await;

    // Away from LoadBalancer: the load balancer goes, the ingress is cleared (a status write)
    // and the finalizer is removed, in one reconcile.
    fake.patch("v1", "services", "shop", "away", json!({"spec": {"type": "ClusterIP"}}));
    until("the finalizer and the ingress gone", &process, async || {
        let svc = fake.get("v1", "services", "shop", "away")?;
        let finalizers = svc["metadata"]["finalizers"].as_array().map_or(0, Vec::len);
        let ingress = svc.pointer("/status/loadBalancer/ingress/0");
        (finalizers == 0 && ingress.is_none()).then_some(())
    })
    .await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
    let log = process.log();
    assert!(!log.contains("load balancer sync failed"), "{log}");
    assert!(!reasons(&fake).iter().any(|r| r == "SyncLoadBalancerFailed"), "{log}");
    fake.delete("v1", "services", "shop", "away");
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn ports_source_ranges_and_node_readiness_are_followed() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("rn-a", "10.0.0.61"));
    let mut not_ready = node("rn-b", "10.0.0.62");
    not_ready["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    fake.create("v1", "nodes", "", not_ready);
    let mut svc = load_balancer_service("shop", "api", &[(80, 30081)]);
    svc["spec"]["loadBalancerSourceRanges"] = json!(["10.1.0.0/16"]);
    fake.create("v1", "services", "shop", svc);
    let (process, cluster, _dir) = start(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "rng");
    let name = format!("kube_service_{cluster}_shop_api");

    let lb = until("the load balancer", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["provisioning_status"] == "ACTIVE"
            && fake
                .get("v1", "services", "shop", "api")?
                .pointer("/status/loadBalancer/ingress/0/ip")
                .is_some())
        .then(|| lbs[0].clone())
    })
    .await;
    assert_eq!(lb["listeners"][0]["allowed_cidrs"], json!(["10.1.0.0/16"]), "{lb}");
    assert_eq!(
        lb["pools"][0]["members"],
        json!(["10.0.0.61:30081"]),
        "the NotReady node is a member: {lb}"
    );

    // A second port becomes a second listener; the NotReady node, once Ready, a member of both.
    let ports = json!({"spec": {"ports": [
        {"name": "p80", "protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30081},
        {"name": "p443", "protocol": "TCP", "port": 443, "targetPort": 443, "nodePort": 30443}]}});
    fake.patch("v1", "services", "shop", "api", ports);
    fake.patch(
        "v1",
        "nodes",
        "",
        "rn-b",
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    until("two listeners of two members each", &process, async || {
        let lb = lb_list(&env, &name).await[0].clone();
        let pools = lb["pools"].as_array()?.clone();
        let both = json!(["10.0.0.61:30081", "10.0.0.62:30081"]);
        (lb["listeners"].as_array()?.len() == 2
            && pools.len() == 2
            && pools.iter().any(|p| p["members"] == both)
            && pools.iter().any(|p| p["members"] == json!(["10.0.0.61:30443", "10.0.0.62:30443"])))
        .then_some(())
    })
    .await;

    delete_service(&fake, &process, "shop", "api").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "{}", process.log());
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_load_balancer_made_by_hand_with_the_services_name_is_never_touched() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("hand-a", "10.0.0.71"));
    let cluster_tag = "hand";
    let name = format!("kube_service_{cluster_tag}{}_shop_db", std::process::id());
    let theirs = scene(&env, &["loadbalancer-create", "--name", &name]).await;
    let id = theirs["id"].as_str().unwrap().to_owned();
    fake.create("v1", "services", "shop", load_balancer_service("shop", "db", &[(5432, 30432)]));
    // Another controller's class: left to it, and said so.
    let mut other = load_balancer_service("shop", "metal", &[(80, 30433)]);
    other["spec"]["loadBalancerClass"] = json!("example.com/metal");
    fake.create("v1", "services", "shop", other);
    let lb = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let (process, _cluster, port, _dir) =
        start_with_flags(&env, &fake, cloud, cluster_tag, &lb, &[]);

    until("a LoadBalancerNotOurs event", &process, async || {
        reasons(&fake).iter().any(|r| r == "LoadBalancerNotOurs").then_some(())
    })
    .await;
    let why = "carries no mark of a load balancer made for this Service";
    // Told once, not once per retry (the backoff retries after 5 s, then 10 s).
    let lookups = requests(port, "load-balancer", "loadbalancer_list").await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let retries = requests(port, "load-balancer", "loadbalancer_list").await - lookups;
    assert!(retries >= 1, "no retry in 12 s:\n{}", process.log());
    assert_eq!(process.log().matches(why).count(), 1, "{}", process.log());
    let svc = fake.get("v1", "services", "shop", "db").unwrap();
    assert!(svc.pointer("/status/loadBalancer/ingress").is_none(), "{svc}");
    let events = reasons(&fake);
    assert!(events.iter().any(|r| r == "LoadBalancerClassNotOurs"), "{events:?}");
    assert!(!events.iter().any(|r| r == "SyncLoadBalancerFailed"), "{events:?}");
    let metal = fake.get("v1", "services", "shop", "metal").unwrap();
    assert!(metal["metadata"].get("finalizers").is_none(), "{metal}");

    // The Service goes (nothing of ours to clean up); the user's load balancer stays as it was.
    delete_service(&fake, &process, "shop", "db").await;
    let lbs = lb_list(&env, &name).await;
    assert_eq!(lbs.as_array().unwrap().len(), 1, "{lbs}");
    assert_eq!(
        (lbs[0]["id"].as_str(), lbs[0]["listeners"].clone(), lbs[0]["tags"].clone()),
        (Some(id.as_str()), json!([]), json!([]))
    );
    scene(&env, &["loadbalancer-delete", &id]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn without_octavia_in_the_catalog_the_service_controller_warns_once_and_stays_off() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    // A real server for the node controller, which must keep working.
    let name = format!("occm-nolb-{}", std::process::id());
    let server = scene(&env, &["server-create", "--name", &name, "--wait-active"]).await;
    let fake = Cluster::start();
    fake.create("v1", "services", "shop", load_balancer_service("shop", "off", &[(80, 30082)]));
    fake.create("v1", "nodes", "", NodeFixture::tainted(&name).build());
    let conf = format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = {}\n",
        env["OPENSTACK_CLOUDS_YAML"], env["OPENSTACK_CLOUD_APPCRED_NO_LB"]
    );
    let flags = ["--controllers=cloud-node,service", "--leader-elect=false"];
    let (process, _port, _dir) = start_ccm(&fake.url(), &conf, &flags);
    let warning = "no load-balancer (Octavia) endpoint in the catalog";
    process.wait_line(warning, WAIT).await;
    until("the node initialized", &process, async || {
        let node = fake.get("v1", "nodes", "", &name)?;
        (!is_tainted(&node) && node["spec"]["providerID"].is_string()).then_some(())
    })
    .await;
    // A node change and a Service change later, still the one warning and an untouched Service.
    let label = json!({"metadata": {"labels": {"tier": "web"}}});
    fake.patch("v1", "services", "shop", "off", label.clone());
    fake.patch("v1", "nodes", "", &name, label);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(process.log().matches(warning).count(), 1, "{}", process.log());
    let svc = fake.get("v1", "services", "shop", "off").unwrap();
    assert!(svc["metadata"].get("finalizers").is_none(), "the Service was touched: {svc}");
    assert!(svc.pointer("/status/loadBalancer/ingress").is_none(), "{svc}");
    scene(&env, &["server-delete", server["id"].as_str().unwrap(), "--wait"]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_service_deleted_while_its_load_balancer_is_being_created_leaves_nothing() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("early-a", "10.0.0.91"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "gone", &[(80, 30083)]));
    let (process, cluster, _dir) = start(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "early");
    let name = format!("kube_service_{cluster}_shop_gone");
    // Deleted as soon as the controller has claimed it (finalizer), before it is ACTIVE.
    until("the finalizer", &process, async || {
        let svc = fake.get("v1", "services", "shop", "gone")?;
        (svc["metadata"]["finalizers"] == json!([FINALIZER])).then_some(())
    })
    .await;
    delete_service(&fake, &process, "shop", "gone").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "left behind:\n{}", process.log());
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_floating_ip_is_allocated_then_released_and_a_users_one_is_kept() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("fip-a", "10.0.0.95"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "ours", &[(80, 30084)]));
    let theirs = scene(&env, &["floating-ip-create"]).await;
    let address = theirs["floating_ip_address"].as_str().unwrap().to_owned();
    let mut kept = load_balancer_service("shop", "kept", &[(80, 30085)]);
    kept["spec"]["loadBalancerIP"] = json!(address);
    fake.create("v1", "services", "shop", kept);
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let (process, _cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "fip", &lb);
    let ingress = |name: &'static str| {
        let fake = fake.clone();
        async move || {
            let svc = fake.get("v1", "services", "shop", name)?;
            svc.pointer("/status/loadBalancer/ingress/0/ip")
                .and_then(Value::as_str)
                .map(str::to_owned)
        }
    };
    let allocated =
        until("the allocated floating IP on the Service", &process, ingress("ours")).await;
    assert!(allocated.starts_with("203.0.113."), "not a floating IP: {allocated}");
    assert_eq!(
        until("the user's floating IP on the Service", &process, ingress("kept")).await,
        address
    );

    for name in ["ours", "kept"] {
        fake.delete("v1", "services", "shop", name);
    }
    until("both Services gone", &process, async || {
        let gone = |n| fake.get("v1", "services", "shop", n).is_none();
        (gone("ours") && gone("kept")).then_some(())
    })
    .await;
    let fips = scene(&env, &["floating-ip-list"]).await;
    let addresses: Vec<&str> =
        fips.as_array().unwrap().iter().filter_map(|f| f["floating_ip_address"].as_str()).collect();
    assert!(
        !addresses.contains(&allocated.as_str()),
        "ours not released: {addresses:?}\n{}",
        process.log()
    );
    let user =
        fips.as_array().unwrap().iter().find(|f| f["floating_ip_address"] == address.as_str());
    let user = user.unwrap_or_else(|| panic!("the user's floating IP was released: {addresses:?}"));
    assert!(user["port_id"].is_null(), "the user's floating IP is still attached: {user}");
    scene(&env, &["floating-ip-delete", theirs["id"].as_str().unwrap()]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn services_share_a_load_balancer_up_to_max_shared_lb_and_it_goes_with_the_last() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("share-a", "10.0.0.97"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "first", &[(80, 30086)]));
    let (process, cluster, _dir) = start(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "share");
    let name = format!("kube_service_{cluster}_shop_first");
    let lb = until("the first Service's load balancer", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["provisioning_status"] == "ACTIVE").then(|| lbs[0].clone())
    })
    .await;
    let id = lb["id"].as_str().unwrap().to_owned();
    let annotation = "loadbalancer.openstack.org/load-balancer-id";
    let shared = |svc: &str, port: u16| {
        let mut shared = load_balancer_service("shop", svc, &[(port, port + 22000)]);
        shared["metadata"]["annotations"] = json!({annotation: id});
        shared
    };
    // The default max-shared-lb is 2: a second Service joins (one at a time, so the order is
    // known), a third is refused.
    fake.create("v1", "services", "shop", shared("second", 8080));
    until("the shared VIP on the second Service", &process, async || {
        let second = fake.get("v1", "services", "shop", "second")?;
        (second["status"]["loadBalancer"]["ingress"][0]["ip"] == lb["vip_address"]).then_some(())
    })
    .await;
    assert_eq!(lb_list(&env, &name).await[0]["listeners"].as_array().unwrap().len(), 2);
    fake.create("v1", "services", "shop", shared("third", 9090));
    until("the third Service refused", &process, async || {
        process.log().contains("already serves 2 Services").then_some(())
    })
    .await;

    // The first Service goes: the load balancer stays for the second, without the first's port.
    delete_service(&fake, &process, "shop", "first").await;
    let left = lb_list(&env, &name).await[0].clone();
    let ports: Vec<u64> = left["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["protocol_port"].as_u64())
        .collect();
    assert_eq!(ports, [8080], "{left}");
    // The last Service on it goes: so does the load balancer.
    for svc in ["second", "third"] {
        fake.delete("v1", "services", "shop", svc);
    }
    until("the shared load balancer gone", &process, async || {
        let gone = |n| fake.get("v1", "services", "shop", n).is_none();
        let lbs = lb_list(&env, &name).await;
        (gone("second") && gone("third") && lbs == json!([])).then_some(())
    })
    .await;
}

/// The security groups named `name` (ours or not), with their rules, from the real Neutron.
async fn security_groups(env: &StackEnv, name: &str) -> Vec<Value> {
    let groups = scene(env, &["security-group-list", "--name", name]).await;
    groups.as_array().cloned().unwrap_or_default()
}

/// `(protocol, port, remote prefix)` of each ingress rule, sorted.
pub(crate) fn ingress(group: &Value) -> Vec<(String, u64, String)> {
    let rules = group["rules"].as_array().unwrap();
    let mut out: Vec<(String, u64, String)> = rules
        .iter()
        .filter(|r| r["direction"] == "ingress")
        .map(|r| {
            assert_eq!(r["port_range_min"], r["port_range_max"], "{r}");
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (text("protocol"), r["port_range_min"].as_u64().unwrap(), text("remote_ip_prefix"))
        })
        .collect();
    out.sort();
    out
}

async fn port_groups(env: &StackEnv, id: &str) -> Vec<String> {
    let port = scene(env, &["port-show", id]).await;
    let groups = port["security_groups"].as_array().unwrap();
    let mut out: Vec<String> = groups.iter().map(|g| g.as_str().unwrap().to_owned()).collect();
    out.sort();
    out
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn manage_security_groups_guards_the_members_ports_and_leaves_nothing_behind() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let (a, b) = ("10.0.0.111", "10.0.0.112");
    let port_a = scene(&env, &["port-create", "--fixed-ip", a]).await;
    let port_b = scene(&env, &["port-create", "--fixed-ip", b]).await;
    let (id_a, id_b) = (port_a["id"].as_str().unwrap(), port_b["id"].as_str().unwrap());
    let before_a = port_groups(&env, id_a).await;
    let before_b = port_groups(&env, id_b).await;
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("sg-a", a));
    fake.create("v1", "nodes", "", node("sg-b", b));
    let mut service = load_balancer_service("guarded", "web", &[(80, 30090), (53, 30091)]);
    service["spec"]["ports"][1]["protocol"] = json!("UDP");
    service["spec"]["loadBalancerSourceRanges"] = json!(["192.0.2.0/24"]);
    let service = fake.create("v1", "services", "guarded", service);
    let uid = service["metadata"]["uid"].as_str().unwrap().to_owned();
    let lb = format!(
        "subnet-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"]
    );
    let (process, _cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "sg", &lb);
    let name = format!("lb-sg-{uid}-guarded-web");
    let ours = || {
        let (env, name) = (&env, &name);
        async move {
            let groups = security_groups(env, name).await;
            assert!(groups.len() <= 1, "more than one group named {name}: {groups:?}");
            groups.into_iter().next()
        }
    };

    // Both members' ports carry the group (beside what they had).
    let cidr = env["OPENSTACK_INTERNAL_CIDR"].to_owned();
    let group = until("the security group on both member ports", &process, async || {
        let group = ours().await?;
        let id = group["id"].as_str()?.to_owned();
        let on = |groups: &[String]| groups.contains(&id);
        (on(&port_groups(&env, id_a).await) && on(&port_groups(&env, id_b).await)).then_some(group)
    })
    .await;
    let id = group["id"].as_str().unwrap().to_owned();
    // Read again: the rules are made before the ports get the group, so they are all there now.
    let group = ours().await.unwrap();
    assert!(group["tags"].as_array().unwrap().contains(&json!(OWNER_TAG)), "{group}");
    // Behind the amphora the load balancer is the members' only client (the source range is
    // its listener's): each NodePort is open to the member subnet alone.
    let expected =
        vec![("tcp".to_owned(), 30090, cidr.clone()), ("udp".to_owned(), 30091, cidr.clone())];
    assert_eq!(ingress(&group), expected);
    let mut with_ours = before_a.clone();
    with_ours.push(id.clone());
    with_ours.sort();
    assert_eq!(port_groups(&env, id_a).await, with_ours, "port A lost a group of its own");

    // A node that leaves takes the group off its port; without source ranges the rules stay.
    fake.delete("v1", "nodes", "", "sg-b");
    fake.patch(
        "v1",
        "services",
        "guarded",
        "web",
        json!({"spec": {"loadBalancerSourceRanges": null}}),
    );
    until("the group off the departed node's port, rules kept", &process, async || {
        let group = ours().await?;
        (port_groups(&env, id_b).await == before_b && ingress(&group) == expected).then_some(())
    })
    .await;

    // The Service goes: the group is off every port and deleted; the ports keep their own.
    delete_service(&fake, &process, "guarded", "web").await;
    assert_eq!(ours().await, None, "the security group is left behind:\n{}", process.log());
    assert_eq!(port_groups(&env, id_a).await, before_a);
    for port in [id_a, id_b] {
        scene(&env, &["port-delete", port]).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn octavia_gone_mid_reconcile_and_back_converges_without_a_duplicate() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    // A region of its own whose catalog sends Octavia calls through the front.
    let front = OctaviaFront::start(env["OPENSTACK_LOADBALANCER_URL"].to_owned()).await;
    let region = format!("OctaviaFront{}", std::process::id());
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("flaky-a", "10.0.0.121"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "flaky", &[(80, 30095)]));
    let (process, cluster, _dir) = start_behind(&env, &fake, &front.url, &region, "flaky").await;
    let name = format!("kube_service_{cluster}_shop_flaky");

    // The create goes through, then Octavia is gone while the controller waits for ACTIVE.
    until("the create through the front", &process, async || front.is_down().then_some(())).await;
    process.wait_line("load balancer sync failed", WAIT).await;
    front.resume();
    let ingress = ingress_ip(&fake, &process, "shop", "flaky").await;
    let lbs = lb_list(&env, &name).await;
    let [lb] = lbs.as_array().unwrap().as_slice() else {
        panic!("exactly one load balancer named {name}: {lbs}\n{}", process.log())
    };
    assert_eq!(lb["vip_address"], ingress.as_str());
    assert_eq!(lb["pools"][0]["members"], json!(["10.0.0.121:30095"]));

    delete_service(&fake, &process, "shop", "flaky").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "left behind:\n{}", process.log());
    scene(&env, &["region-delete", "--name", &region]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn an_unchanged_service_costs_one_read_per_resync_and_a_hand_edit_is_still_undone() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("rs-a", "10.0.0.131"));
    fake.create("v1", "nodes", "", node("rs-b", "10.0.0.132"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "steady", &[(80, 30096)]));
    let lb = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let flags = ["--load-balancer-resync-period=2s"];
    let (process, cluster, port, _dir) =
        start_with_flags(&env, &fake, cloud, "steady", &lb, &flags);
    let name = format!("kube_service_{cluster}_shop_steady");
    ingress_ip(&fake, &process, "shop", "steady").await;
    let count = async |operation: &str| requests(port, "load-balancer", operation).await;

    // Resyncs of a Service where nothing changed: each is one lookup, by the ID of the
    // load-balancer-id annotation, and no tree read. A tree read starts with its listener list.
    let svc = fake.get("v1", "services", "shop", "steady").unwrap();
    let id = &svc["metadata"]["annotations"]["loadbalancer.openstack.org/load-balancer-id"];
    assert_eq!(id, &lb_list(&env, &name).await[0]["id"], "{svc}");
    // Every sixth reconcile reads everything anyway (converged::FULL_EVERY), and the reconciles
    // the Service's own writes start count too: the window opens right after such a full one.
    let first = count("listener_list").await;
    until("a full reconcile", &process, async || {
        (count("listener_list").await > first).then_some(())
    })
    .await;
    let (by_name, trees) = (count("loadbalancer_list").await, count("listener_list").await);
    let lookups = count("loadbalancer_get").await;
    tokio::time::sleep(Duration::from_secs(7)).await;
    let resyncs = count("loadbalancer_get").await - lookups;
    assert!(resyncs >= 2, "{resyncs} resyncs in 7 s at a 2 s period:\n{}", process.log());
    assert_eq!(count("loadbalancer_list").await, by_name, "a resync looked it up by name");
    assert_eq!(count("listener_list").await, trees, "a resync read the whole tree");

    // A member deleted by hand moves the load balancer's updated_at: the next resync reads the
    // tree and puts it back.
    let lbs = lb_list(&env, &name).await;
    let pool = lbs[0]["pools"][0]["id"].as_str().unwrap().to_owned();
    scene(&env, &["member-delete", "--pool", &pool, "--address", "10.0.0.132"]).await;
    until("the member put back", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["pools"][0]["members"] == json!(["10.0.0.131:30096", "10.0.0.132:30096"]))
            .then_some(())
    })
    .await;
    assert!(count("listener_list").await > trees);
    delete_service(&fake, &process, "shop", "steady").await;
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_floating_subnet_pattern_picks_the_subnet_or_says_that_none_matches() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("fsub-a", "10.0.0.141"));
    let mut service = load_balancer_service("shop", "fsub", &[(80, 30097)]);
    service["metadata"]["annotations"] =
        json!({"loadbalancer.openstack.org/floating-subnet": "no-such-*"});
    fake.create("v1", "services", "shop", service);
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    let (process, _cluster, _dir) =
        start_with(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "fsub", &lb);
    process.wait_line("no subnet of floating network", WAIT).await;
    let failed = |pattern: &'static str| {
        let fake = fake.clone();
        async move || {
            let events = fake.list("events.k8s.io/v1", "events");
            events
                .iter()
                .any(|e| {
                    e["reason"] == "SyncLoadBalancerFailed"
                        && e["note"].as_str().is_some_and(|n| n.contains(&format!("{pattern:?}")))
                })
                .then_some(())
        }
    };
    until("the SyncLoadBalancerFailed event", &process, failed("no-such-*")).await;
    // Another error under the same reason is read as it is, not counted into the first.
    let other = json!({"metadata": {"annotations": {
        "loadbalancer.openstack.org/floating-subnet": "nor-this-*"}}});
    fake.patch("v1", "services", "shop", "fsub", other);
    until("the second error's own Event", &process, failed("nor-this-*")).await;

    // Neutron shows an external network's subnets to a project only when the network is
    // shared with it; then a regular expression matches the stack's ccm-external-subnet.
    let external = &env["OPENSTACK_EXTERNAL_NETWORK_ID"];
    let shared = scene(&env, &["network-share", "--network", external]).await;
    let fix = json!({"metadata": {"annotations": {
        "loadbalancer.openstack.org/floating-subnet": "~ccm-ext.*-subnet"}}});
    fake.patch("v1", "services", "shop", "fsub", fix);
    let address = ingress_ip(&fake, &process, "shop", "fsub").await;
    assert!(address.starts_with("203.0.113."), "not from the external subnet: {address}");
    delete_service(&fake, &process, "shop", "fsub").await;
    let fips = scene(&env, &["floating-ip-list"]).await;
    assert!(
        !fips.as_array().unwrap().iter().any(|f| f["floating_ip_address"] == address.as_str()),
        "the floating IP was not released"
    );
    scene(&env, &["rbac-delete", shared["id"].as_str().unwrap()]).await;
}
