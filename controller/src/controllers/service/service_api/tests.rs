use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::controllers::service::annotations::Settings;
use crate::controllers::service::in_memory::{self, Memory};
use crate::controllers::service::run::reconcile_and_report;

#[test]
fn the_ingress_is_upstreams_ip_with_its_mode_or_a_hostname() {
    let plain = Settings::default();
    assert_eq!(ingress(&plain, "192.0.2.7"), json!([{"ip": "192.0.2.7", "ipMode": "VIP"}]));
    let proxy = Settings { proxy_protocol: Some("PROXY"), ..Settings::default() };
    assert_eq!(ingress(&proxy, "192.0.2.7"), json!([{"ip": "192.0.2.7", "ipMode": "Proxy"}]));
    let suffix = Some("nip.io".to_owned());
    let named = Settings { ingress_hostname_suffix: suffix.clone(), ..proxy.clone() };
    assert_eq!(ingress(&named, "192.0.2.7"), json!([{"hostname": "192.0.2.7.nip.io"}]));
    // Without the PROXY protocol the suffix changes nothing.
    let tcp = Settings { ingress_hostname_suffix: suffix, ..plain };
    assert_eq!(ingress(&tcp, "192.0.2.7")[0]["ip"], "192.0.2.7");
    let annotated = Settings { hostname: Some("lb.example.com".into()), ..named };
    assert_eq!(ingress(&annotated, "192.0.2.7"), json!([{"hostname": "lb.example.com"}]));
}

/// A Service `shop/web` of `type: LoadBalancer` as the fake API server stores it.
fn web(fake: &fake_kube_apiserver::FakeApiServer) -> Arc<Service> {
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "5c1f0e3a-web"},
        "spec": {"type": "LoadBalancer",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
    Arc::new(serde_json::from_value(fake.create("v1", "services", "shop", service)).unwrap())
}

fn stored(fake: &fake_kube_apiserver::FakeApiServer) -> Option<Arc<Service>> {
    let service = fake.get("v1", "services", "shop", "web")?;
    Some(Arc::new(serde_json::from_value(service).unwrap()))
}

/// The reconcile that the watch event of our own write queues runs on the cached copy, which
/// need not hold the write yet (on the fake API server the cache is the test's: the copy is
/// handed in as it was). That copy is skipped, with no call to OpenStack and no write; the
/// newer one is reconciled. Before: the copy without the finalizer failed its guarded add with
/// 409 (a Warning Event, the backoff), and the copy still being deleted ran the clean-up again.
#[tokio::test]
async fn a_reconcile_on_a_copy_older_than_our_own_writes_is_skipped_and_the_newer_one_runs() {
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let cloud = Arc::new(Memory::default());
    let ctx = in_memory::context(fake.client(), cloud.clone());
    let first = web(&fake);

    reconcile_and_report(first.clone(), ctx.clone()).await.unwrap();
    let now = stored(&fake).unwrap();
    assert_eq!(now.finalizers(), [FINALIZER]);
    assert!(now.annotations().contains_key(annotations::LOAD_BALANCER_ID));
    assert_eq!(ingress_of(&now), json!([{"ip": "10.0.0.10", "ipMode": "VIP"}]));
    let (writes, _) = (fake.writes().len(), cloud.calls());

    reconcile_and_report(first, ctx.clone()).await.expect("a stale copy is no failure");
    assert_eq!(cloud.calls(), Vec::<String>::new(), "no call for a stale copy");
    assert_eq!(fake.writes().len(), writes, "no write for a stale copy");
    // The newest copy, as the watch brings it, is reconciled (in full: with no node, nothing
    // is recorded as converged), and nothing is written.
    reconcile_and_report(now, ctx.clone()).await.unwrap();
    assert_eq!(cloud.calls(), ["get", "tree", "floatingip_list"]);
    assert_eq!(fake.writes().len(), writes);

    fake.delete("v1", "services", "shop", "web");
    let deleting = stored(&fake).expect("held by the finalizer");
    reconcile_and_report(deleting.clone(), ctx.clone()).await.unwrap();
    assert!(stored(&fake).is_none(), "the finalizer went last");
    assert!(cloud.state().lbs.is_empty(), "its load balancer went first");
    let (writes, _) = (fake.writes().len(), cloud.calls());
    reconcile_and_report(deleting, ctx.clone()).await.unwrap();
    assert_eq!(cloud.calls(), Vec::<String>::new(), "no second clean-up");
    assert_eq!(fake.writes().len(), writes);
}

/// Issue 41 (4): `enable-ingress-hostname` on one Service (the global key off) turns its ingress
/// into `<address>.<suffix>` and back at the next reconcile, with only reads of the load
/// balancer and one status write each way.
#[tokio::test]
async fn the_ingress_hostname_annotation_flips_the_status_without_touching_the_load_balancer() {
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let cloud = Arc::new(Memory::default());
    let ctx = in_memory::context(fake.client(), cloud.clone());
    let proxied = json!({"metadata": {"annotations": {
        "loadbalancer.openstack.org/proxy-protocol": "true"}}});
    fake.patch("v1", "services", "shop", web(&fake).name_any().as_str(), proxied);
    reconcile_and_report(stored(&fake).unwrap(), ctx.clone()).await.unwrap();
    let plain = json!([{"ip": "10.0.0.10", "ipMode": "Proxy"}]);
    assert_eq!(ingress_of(&stored(&fake).unwrap()), plain);

    let named = json!([{"hostname": "10.0.0.10.nip.io"}]);
    for (value, want) in [("true", &named), ("false", &plain), ("true", &named)] {
        let toggle = json!({"metadata": {"annotations": {
            "loadbalancer.openstack.org/enable-ingress-hostname": value}}});
        fake.patch("v1", "services", "shop", "web", toggle);
        let (_, service_writes) = (cloud.calls(), service_writes(&fake));
        reconcile_and_report(stored(&fake).unwrap(), ctx.clone()).await.unwrap();
        assert_eq!(ingress_of(&stored(&fake).unwrap()), *want, "annotation {value}");
        assert_eq!(cloud.calls(), ["get", "tree", "floatingip_list"], "only reads ({value})");
        let written = &service_writes_since(&fake, service_writes);
        assert_eq!(written, &["/api/v1/namespaces/shop/services/web/status"], "{value}");
    }
}

/// How many writes to Services the controller has made.
fn service_writes(fake: &fake_kube_apiserver::FakeApiServer) -> usize {
    fake.writes().iter().filter(|r| r.path.contains("/services/")).count()
}

/// The paths of the controller's writes to Services after the first `skip`.
fn service_writes_since(fake: &fake_kube_apiserver::FakeApiServer, skip: usize) -> Vec<String> {
    let writes = fake.writes().into_iter().filter(|r| r.path.contains("/services/"));
    writes.skip(skip).map(|r| r.path).collect()
}

fn ingress_of(service: &Service) -> Value {
    let status = service.status.as_ref().and_then(|s| s.load_balancer.as_ref());
    serde_json::to_value(status.and_then(|l| l.ingress.as_ref())).unwrap()
}
