//! The service controller end to end (ignored by default; scripts/test.sh runs it): the
//! controller binary, Services and Nodes posted to the fake API server over HTTP, the real
//! Octavia (no-op drivers) and Keystone of scripts/openstack-up.sh.

use std::time::Duration;

use fake_kube_apiserver::FakeApiServer;
use serde_json::{Value, json};
use testkit::kube::{NodeFixture, kubeconfig, load_balancer_service};
use testkit::stack::StackEnv;

use crate::support::{Process, free_port, scene};

const WAIT: Duration = Duration::from_secs(90);
const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

fn node(name: &str, ip: &str) -> Value {
    let mut node = NodeFixture::initialized(name).build();
    node["status"]["addresses"] = json!([{"type": "InternalIP", "address": ip}]);
    node
}

/// Polls `check` every half second until it returns `Some`, or fails after [`WAIT`] saying
/// what it waited for.
async fn until<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "no {what} within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_service_gets_a_load_balancer_that_follows_its_nodes_and_goes_with_it() {
    let env = StackEnv::load();
    assert!(
        env.get("OPENSTACK_LOADBALANCER_URL").is_some(),
        "the stack runs no Octavia: start it with scripts/openstack-up.sh (not OPENSTACK_OCTAVIA=0)"
    );
    let cluster = format!("e2e{}", std::process::id());
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", node("lb-node-a", "10.0.0.51"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "web", &[(80, 30080)]));

    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("cloud.conf");
    let text = format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = {}\n\n[LoadBalancer]\nsubnet-id = {}\n",
        env["OPENSTACK_CLOUDS_YAML"],
        env["OPENSTACK_CLOUD_APPCRED"],
        env["OPENSTACK_INTERNAL_SUBNET_ID"]
    );
    std::fs::write(&conf, text).unwrap();
    let process = Process::start(&[
        "--cloud-provider=openstack".into(),
        format!("--cloud-config={}", conf.display()),
        format!("--kubeconfig={}", kubeconfig(dir.path(), &fake.url()).display()),
        "--controllers=service".into(),
        format!("--cluster-name={cluster}"),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={}", free_port()),
        "--leader-elect=false".into(),
    ]);
    let name = format!("kube_service_{cluster}_shop_web");
    let lb_list = || {
        let (env, name) = (env.clone(), name.clone());
        async move { scene(&env, &["loadbalancer-list", "--name", &name]).await }
    };

    let ingress = until("ingress on the Service", async || {
        let svc = fake.get("v1", "services", "shop", "web")?;
        svc.pointer("/status/loadBalancer/ingress/0/ip").and_then(Value::as_str).map(str::to_owned)
    })
    .await;
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
    until("the second node as a member", async || {
        let lbs = lb_list().await;
        (lbs[0]["pools"][0]["members"] == json!(["10.0.0.51:30080", "10.0.0.52:30080"]))
            .then_some(())
    })
    .await;

    // Deleting the Service deletes the load balancer, then the finalizer lets it go.
    fake.delete("v1", "services", "shop", "web");
    until("the Service gone", async || {
        fake.get("v1", "services", "shop", "web").is_none().then_some(())
    })
    .await;
    assert_eq!(lb_list().await, json!([]), "the load balancer is left behind");
    let events = fake.list("events.k8s.io/v1", "events");
    let reasons: Vec<&str> = events.iter().filter_map(|e| e["reason"].as_str()).collect();
    for reason in [
        "EnsuringLoadBalancer",
        "EnsuredLoadBalancer",
        "DeletingLoadBalancer",
        "DeletedLoadBalancer",
    ] {
        assert!(reasons.contains(&reason), "no {reason} event: {reasons:?}\n{}", process.log());
    }
    assert!(!process.log().contains(&env["OPENSTACK_APPCRED_SECRET"]), "a secret reached the log");
}
