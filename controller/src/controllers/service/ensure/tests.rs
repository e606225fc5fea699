use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::controllers::service::in_memory::{self, Memory};
use crate::controllers::service::run::reconcile_and_report;

fn ready_node(name: &str, address: &str) -> CachedNode {
    serde_json::from_value(ready_node_json(name, address)).unwrap()
}

fn ready_node_json(name: &str, address: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": name},
        "status": {"addresses": [{"type": "InternalIP", "address": address}],
            "conditions": [{"type": "Ready", "status": "True"}]},
    })
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

/// A Ready node on server `server` (its providerID).
fn on_server(name: &str, address: &str, server: &str) -> CachedNode {
    let mut value = ready_node_json(name, address);
    value["spec"] = json!({"providerID": format!("openstack:///{server}")});
    serde_json::from_value(value).unwrap()
}

fn port(server: &str, subnet: &str, address: &str) -> crate::cloud::neutron::Port {
    let fixed_ips = vec![crate::cloud::neutron::FixedIp {
        subnet_id: subnet.into(),
        ip_address: address.into(),
    }];
    crate::cloud::neutron::Port { device_id: server.into(), fixed_ips, ..Default::default() }
}

/// The Warning Events the fake holds, as `reason: note`.
fn warnings(fake: &fake_kube_apiserver::FakeApiServer) -> Vec<String> {
    let events = fake.list("events.k8s.io/v1", "events");
    let warning = events.iter().filter(|e| e["type"] == "Warning");
    warning
        .map(|e| format!("{}: {}", e["reason"].as_str().unwrap(), e["note"].as_str().unwrap()))
        .collect()
}

/// Issue 41 (2): with `member-subnet-id` each member is its node's own address on that subnet,
/// from the port of the server its providerID names (here node b's address there is node a's
/// InternalIP on the other network, as with two networks of one range); a node with no port
/// there is left out, told once in a Warning, not again at the next reconcile; one list of the
/// subnet's ports answers both reconciles.
#[tokio::test]
async fn members_take_their_nodes_address_on_the_member_subnet_and_a_node_without_is_told_once() {
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let cloud = Arc::new(Memory::default());
    cloud.state().ports = vec![
        port("srv-a", "front", "10.0.0.201"),
        port("srv-a", "back", "10.0.0.50"),
        port("srv-b", "front", "10.0.0.202"),
        port("srv-b", "back", "10.0.0.201"),
        port("srv-c", "front", "10.0.0.203"),
    ];
    let nodes = [
        on_server("a", "10.0.0.201", "srv-a"),
        on_server("b", "10.0.0.202", "srv-b"),
        on_server("c", "10.0.0.203", "srv-c"),
    ];
    let ctx = in_memory::context_with(fake.client(), cloud.clone(), &nodes, false);
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "5c1f0e3a-web",
            "annotations": {"loadbalancer.openstack.org/member-subnet-id": "back"}},
        "spec": {"type": "LoadBalancer",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
    fake.create("v1", "services", "shop", service);
    let stored = || -> Arc<Service> {
        Arc::new(
            serde_json::from_value(fake.get("v1", "services", "shop", "web").unwrap()).unwrap(),
        )
    };

    reconcile_and_report(stored(), ctx.clone()).await.unwrap();
    let members: Vec<(String, Option<String>)> = {
        let state = cloud.state();
        let lb = state.lbs.values().next().expect("a load balancer");
        let all = lb.members.values().flatten();
        all.map(|m| (m.address.clone(), m.subnet_id.clone())).collect()
    };
    let back = Some("back".to_owned());
    // In node order: a, then b.
    assert_eq!(members, [("10.0.0.50".to_owned(), back.clone()), ("10.0.0.201".to_owned(), back)]);
    let told = "MembersLeftOut: Nodes c have no port on member subnet back (looked up by the \
                server of each node's providerID): they are not members";
    assert_eq!(warnings(&fake), [told]);

    reconcile_and_report(stored(), ctx.clone()).await.unwrap();
    assert_eq!(warnings(&fake), [told], "told once");
    let lists = cloud.calls().iter().filter(|c| *c == "port_list").count();
    assert_eq!(lists, 1, "one list of the subnet's ports for both reconciles");
}

/// Every eligible node without a port on the member subnet: nothing is created (pools are
/// never emptied by a wrong subnet), and the Service is told why.
#[tokio::test]
async fn no_node_on_the_member_subnet_leaves_the_service_alone() {
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let cloud = Arc::new(Memory::default());
    cloud.state().ports = vec![port("srv-a", "front", "10.0.0.201")];
    let nodes = [on_server("a", "10.0.0.201", "srv-a")];
    let ctx = in_memory::context_with(fake.client(), cloud.clone(), &nodes, false);
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "5c1f0e3a-web",
            "annotations": {"loadbalancer.openstack.org/member-subnet-id": "typo"}},
        "spec": {"type": "LoadBalancer",
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
    let service: Service =
        serde_json::from_value(fake.create("v1", "services", "shop", service)).unwrap();
    let error = reconcile_and_report(Arc::new(service), ctx).await.unwrap_err();
    assert!(
        format!("{error:#}")
            .contains("none of the 1 eligible nodes (a) has a port on member subnet typo"),
        "{error:#}"
    );
    assert!(!cloud.calls().contains(&"create".to_owned()));
    assert!(
        warnings(&fake).iter().any(|w| w.starts_with("NoMemberOnSubnet: ")),
        "{:?}",
        warnings(&fake)
    );
}
