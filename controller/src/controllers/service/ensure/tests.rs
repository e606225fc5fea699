use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::controllers::service::in_memory::{self, Memory};
use crate::controllers::service::run::reconcile_and_report;

fn ready_node(name: &str, address: &str) -> CachedNode {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {"addresses": [{"type": "InternalIP", "address": address}],
            "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap()
}

#[test]
fn a_node_view_carries_every_label_of_the_cached_node() {
    let node: CachedNode = serde_json::from_value(json!({
        "metadata": {"name": "w", "labels": {"node.kubernetes.io/exclude-from-external-load-balancers": "",
            "disk": "ssd"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap();
    let view = node_view(&node);
    let labels: Vec<(&str, &str)> =
        view.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(labels, [("disk", "ssd"), (desired::EXCLUDE_LABEL, "")]);
    assert!(view.ready && !view.deleting);
    assert_eq!(view.internal_ip.as_deref(), Some("10.0.0.5"));
}

/// Ready as soon as it is true (issue 40): the ingress is written once the load balancer is
/// ACTIVE with its listeners, before the node ports' security group, whose failure (here: the
/// group refused) fails the reconcile into its retry without taking the address back.
#[tokio::test]
async fn the_ingress_is_written_before_the_security_group_is_made() {
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let cloud = Arc::new(Memory::default());
    let nodes = [ready_node("w-1", "10.0.0.5")];
    let ctx = in_memory::context_with(fake.client(), cloud.clone(), &nodes, true);
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "5c1f0e3a-web"},
        "spec": {"type": "LoadBalancer",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
    let service: Service =
        serde_json::from_value(fake.create("v1", "services", "shop", service)).unwrap();

    let error = reconcile_and_report(Arc::new(service), ctx).await.unwrap_err();

    assert!(format!("{error:#}").contains("security group"), "{error:#}");
    let calls = cloud.calls();
    let create = calls.iter().position(|c| c == "create").expect("a load balancer made");
    let group = calls.iter().position(|c| c == "security_group_create").expect("a group asked");
    assert!(create < group, "{calls:?}");
    let stored = fake.get("v1", "services", "shop", "web").unwrap();
    assert_eq!(
        stored["status"]["loadBalancer"]["ingress"],
        json!([{"ip": "10.0.0.10", "ipMode": "VIP"}]),
        "{stored}"
    );
}
