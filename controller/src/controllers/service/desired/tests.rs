use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::LazyLock;

use super::*;
use crate::controllers::service::annotations::Monitor;

fn settings() -> Settings {
    Settings { lb_method: "ROUND_ROBIN".into(), connection_limit: -1, ..Settings::default() }
}

fn node(name: &str, ip: &str) -> NodeView {
    NodeView { name: name.into(), ready: true, internal_ip: Some(ip.into()), ..NodeView::default() }
}

static WEB: LazyLock<ServiceId<'static>> =
    LazyLock::new(|| ServiceId::new("kubernetes", "default", "web", ""));

fn ports() -> Vec<Port> {
    vec![
        Port { protocol: "TCP".into(), port: 80, node_port: 30080 },
        Port { protocol: "UDP".into(), port: 53, node_port: 30053 },
    ]
}

#[test]
fn only_ready_included_nodes_with_an_internal_ip_become_members_sorted_by_name() {
    let mut excluded = node("c-excluded", "10.0.0.3");
    excluded.labels.insert(EXCLUDE_LABEL.into(), String::new());
    let nodes = vec![
        node("b", "10.0.0.2"),
        node("a", "10.0.0.1"),
        excluded,
        NodeView { ready: false, ..node("d-not-ready", "10.0.0.4") },
        NodeView { deleting: true, ..node("e-deleting", "10.0.0.5") },
        NodeView { internal_ip: None, ..node("f-no-ip", "") },
    ];
    let names: Vec<String> = backends(&nodes, &settings()).into_iter().map(|b| b.name).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn the_node_selector_keeps_only_matching_nodes() {
    let mut web = node("web-0", "10.0.0.1");
    web.labels.insert("pool".into(), "web".into());
    let nodes = vec![web, node("other", "10.0.0.2")];
    let selected =
        Settings { node_selector: BTreeMap::from([("pool".into(), "web".into())]), ..settings() };
    assert_eq!(backends(&nodes, &selected).len(), 1);
}

#[test]
fn every_port_gets_a_listener_pool_and_members_on_its_node_port() {
    let backends = backends(&[node("a", "10.0.0.1"), node("b", "10.0.0.2")], &settings());
    let vip = Vip { subnet_id: Some("sub".into()), ..Vip::default() };
    let spec = load_balancer(&WEB, &ports(), &backends, &[], &settings(), &vip).unwrap();
    assert_eq!(spec.name, "kube_service_kubernetes_default_web");
    assert_eq!(spec.tags, [spec.name.as_str(), names::OWNER_TAG]);
    assert_eq!(spec.vip_subnet_id.as_deref(), Some("sub"));
    let [tcp, udp] = spec.listeners.as_slice() else { panic!("{spec:#?}") };
    assert_eq!((tcp.protocol.as_str(), tcp.protocol_port), ("TCP", 80));
    assert_eq!(tcp.name, "listener_0_kube_service_kubernetes_default_web");
    assert_eq!(tcp.default_pool.members[1].address, "10.0.0.2");
    assert_eq!(udp.default_pool.members[0].protocol_port, 30053);
    assert!(tcp.default_pool.healthmonitor.is_none());
}

#[test]
fn a_long_cluster_name_keeps_every_name_and_description_within_octavias_255_bytes() {
    let cluster = "c".repeat(250);
    let long = ServiceId::new(&cluster, WEB.namespace, WEB.name, WEB.uid);
    let vip = Vip { subnet_id: Some("sub".into()), ..Vip::default() };
    let backends = backends(&[node("a", "10.0.0.1")], &settings());
    let spec = load_balancer(&long, &ports(), &backends, &[], &settings(), &vip).unwrap();
    let mut texts = vec![&spec.name, &spec.description];
    texts.extend(spec.tags.iter());
    texts.extend(spec.listeners.iter().flat_map(|l| [&l.name, &l.default_pool.name]));
    for text in texts {
        assert!(text.len() <= names::MAX, "{} bytes: {text}", text.len());
    }
}

#[test]
fn a_monitor_matches_the_protocol_and_proxy_protocol_changes_the_pool_only() {
    let monitor = Monitor {
        delay: Duration::from_secs(5),
        timeout: Duration::from_secs(3),
        max_retries: 1,
        max_retries_down: 3,
    };
    let s = Settings { monitor: Some(monitor), proxy_protocol: Some("PROXY"), ..settings() };
    let spec = load_balancer(&WEB, &ports(), &[], &[], &s, &Vip::default()).unwrap();
    let udp = &spec.listeners[1];
    assert_eq!(udp.default_pool.healthmonitor.as_ref().unwrap().kind, "UDP-CONNECT");
    assert_eq!(
        (spec.listeners[0].protocol.as_str(), spec.listeners[0].default_pool.protocol.as_str()),
        ("TCP", "PROXY")
    );
}

#[test]
fn a_users_port_wins_over_subnet_and_network() {
    let vip = Vip {
        port_id: Some("p".into()),
        subnet_id: Some("s".into()),
        network_id: Some("n".into()),
        address: None,
    };
    let spec = load_balancer(&WEB, &ports(), &[], &[], &settings(), &vip).unwrap();
    assert_eq!(
        (spec.vip_port_id.as_deref(), spec.vip_subnet_id, spec.vip_network_id),
        (Some("p"), None, None)
    );
}

#[test]
fn ports_without_node_port_or_with_an_unknown_protocol_are_errors_naming_the_port() {
    let pending = [Port { protocol: "TCP".into(), port: 443, node_port: 0 }];
    let err = load_balancer(&WEB, &pending, &[], &[], &settings(), &Vip::default()).unwrap_err();
    assert_eq!(err, "port 443/TCP has no nodePort yet");
    let odd = [Port { protocol: "ICMP".into(), port: 1, node_port: 30001 }];
    let err = load_balancer(&WEB, &odd, &[], &[], &settings(), &Vip::default()).unwrap_err();
    assert!(err.contains("\"ICMP\""), "{err}");
}

#[test]
fn source_ranges_are_sorted_and_every_source_is_the_empty_list() {
    let ranges = ["10.0.0.0/8".to_owned(), "192.168.0.0/16".into(), "10.0.0.0/8".into()];
    assert_eq!(allowed_cidrs(&ranges), ["10.0.0.0/8", "192.168.0.0/16"]);
    assert!(allowed_cidrs(&["0.0.0.0/0".to_owned(), "::/0".into()]).is_empty());
}
