use super::*;
use crate::cloud::octavia::model::IdRef;
use crate::cloud::octavia::{LoadBalancer, Member, PoolSpec};

const TAG: &str = "kube_service_kubernetes_default_web";

fn member(address: &str, port: u16) -> MemberSpec {
    MemberSpec {
        address: address.into(),
        protocol_port: port,
        name: address.into(),
        subnet_id: None,
    }
}

fn monitor(kind: &str, delay: u64) -> MonitorSpec {
    MonitorSpec {
        name: "m".into(),
        kind: kind.into(),
        delay,
        timeout: 3,
        max_retries: 1,
        max_retries_down: 3,
    }
}

fn listener(protocol: &str, port: u16, members: &[&str]) -> ListenerSpec {
    ListenerSpec {
        name: format!("listener_{port}"),
        protocol: protocol.into(),
        protocol_port: port,
        connection_limit: -1,
        tags: vec![TAG.into()],
        default_pool: PoolSpec {
            name: format!("pool_{port}"),
            protocol: protocol.into(),
            lb_algorithm: "ROUND_ROBIN".into(),
            members: members.iter().map(|a| member(a, 30000 + port)).collect(),
            healthmonitor: None,
        },
        ..ListenerSpec::default()
    }
}

/// What Octavia holds after creating `listeners` (IDs derived from the port).
fn applied(listeners: &[ListenerSpec]) -> Tree {
    let mut tree = Tree {
        load_balancer: LoadBalancer { id: "lb".into(), ..LoadBalancer::default() },
        ..Tree::default()
    };
    for l in listeners {
        let (lid, pid) = (format!("l{}", l.protocol_port), format!("p{}", l.protocol_port));
        let pool = &l.default_pool;
        let monitor_id = pool.healthmonitor.as_ref().map(|_| format!("m{}", l.protocol_port));
        tree.listeners.push(Listener {
            id: lid,
            protocol: l.protocol.clone(),
            protocol_port: l.protocol_port,
            default_pool_id: Some(pid.clone()),
            allowed_cidrs: (!l.allowed_cidrs.is_empty()).then(|| l.allowed_cidrs.clone()),
            connection_limit: l.connection_limit,
            timeout_client_data: Some(50000),
            tags: l.tags.clone(),
            ..Listener::default()
        });
        tree.pools.push(Pool {
            id: pid.clone(),
            protocol: pool.protocol.clone(),
            lb_algorithm: pool.lb_algorithm.clone(),
            healthmonitor_id: monitor_id.clone(),
            members: pool.members.iter().map(|m| IdRef { id: m.address.clone() }).collect(),
            ..Pool::default()
        });
        let members = pool.members.iter().map(|m| Member {
            id: m.address.clone(),
            address: m.address.clone(),
            protocol_port: m.protocol_port,
            subnet_id: Some("whatever".into()),
            ..Member::default()
        });
        tree.members.push((pid, members.collect()));
        if let (Some(id), Some(m)) = (monitor_id, &pool.healthmonitor) {
            tree.monitors.push(HealthMonitor {
                id,
                kind: m.kind.clone(),
                delay: m.delay,
                timeout: m.timeout,
                max_retries: m.max_retries,
                max_retries_down: m.max_retries_down,
                ..HealthMonitor::default()
            });
        }
    }
    tree
}

#[test]
fn nothing_changed_means_no_call_at_all() {
    let mut with_monitor = listener("UDP", 53, &["10.0.0.1"]);
    with_monitor.default_pool.healthmonitor = Some(monitor("UDP-CONNECT", 5));
    with_monitor.allowed_cidrs = vec!["10.0.0.0/8".into()];
    let desired = vec![listener("TCP", 80, &["10.0.0.1", "10.0.0.2"]), with_monitor];
    assert_eq!(plan(&desired, &applied(&desired), TAG), Ok(vec![]));
}

#[test]
fn a_new_port_is_one_create_and_a_removed_port_one_delete() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"]), listener("TCP", 443, &["10.0.0.1"])];
    let after = vec![listener("TCP", 80, &["10.0.0.1"]), listener("TCP", 8443, &["10.0.0.1"])];
    let ops = plan(&after, &applied(&before), TAG).unwrap();
    let labels: Vec<_> = ops.iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_create", "pool_delete", "listener_delete"]);
    assert_eq!(ops[1], Op::DeletePool { pool_id: "p443".into() });
    assert_eq!(ops[2], Op::DeleteListener { listener_id: "l443".into() });
}

#[test]
fn a_node_added_or_removed_is_one_batch_member_call_per_pool() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"]), listener("UDP", 53, &["10.0.0.1"])];
    let after =
        vec![listener("TCP", 80, &["10.0.0.2"]), listener("UDP", 53, &["10.0.0.1", "10.0.0.2"])];
    let ops = plan(&after, &applied(&before), TAG).unwrap();
    assert_eq!(ops.len(), 2, "{ops:#?}");
    assert!(
        matches!(&ops[0], Op::ReplaceMembers { pool_id, members } if pool_id == "p80" && members.len() == 1)
    );
}

#[test]
fn settings_that_octavia_updates_in_place_are_updates() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"])];
    let mut after = before.clone();
    after[0].allowed_cidrs = vec!["192.0.2.0/24".into()];
    after[0].default_pool.lb_algorithm = "LEAST_CONNECTIONS".into();
    after[0].default_pool.healthmonitor = Some(monitor("TCP", 5));
    let ops = plan(&after, &applied(&before), TAG).unwrap();
    let labels: Vec<_> = ops.iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_update", "pool_update", "monitor_create"]);

    let mut slower = after.clone();
    slower[0].default_pool.healthmonitor = Some(monitor("TCP", 10));
    let labels: Vec<_> =
        plan(&slower, &applied(&after), TAG).unwrap().iter().map(Op::label).collect();
    assert_eq!(labels, ["monitor_update"]);
    let labels: Vec<_> =
        plan(&before, &applied(&after), TAG).unwrap().iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_update", "pool_update", "monitor_delete"]);
}

#[test]
fn what_octavia_cannot_update_is_replaced() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"])];
    let mut proxy = before.clone();
    proxy[0].default_pool.protocol = "PROXY".into();
    let ops = plan(&proxy, &applied(&before), TAG).unwrap();
    assert_eq!(ops[0], Op::DeletePool { pool_id: "p80".into() });
    assert!(
        matches!(&ops[1], Op::CreatePool { listener_id, .. } if listener_id == "l80"),
        "{ops:#?}"
    );

    let mut udp = before.clone();
    udp[0].protocol = "UDP".into();
    udp[0].default_pool.protocol = "UDP".into();
    let labels: Vec<_> =
        plan(&udp, &applied(&before), TAG).unwrap().iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_create", "pool_delete", "listener_delete"]);
}

#[test]
fn on_a_shared_load_balancer_other_services_listeners_are_never_touched() {
    let mut theirs = listener("TCP", 8080, &["10.0.0.9"]);
    theirs.tags = vec!["kube_service_kubernetes_default_other".into()];
    let mine = listener("TCP", 80, &["10.0.0.1"]);
    let tree = applied(&[theirs.clone(), mine.clone()]);
    assert_eq!(plan(std::slice::from_ref(&mine), &tree, TAG), Ok(vec![]));
    // Its port taken by the other Service: an error, not a takeover.
    let clash = listener("TCP", 8080, &["10.0.0.1"]);
    assert_eq!(plan(&[clash], &tree, TAG), Err(PortTaken { protocol: "TCP".into(), port: 8080 }));
}

#[test]
fn octavias_default_timeouts_are_not_a_change_but_asked_ones_are() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"])];
    let mut asked = before.clone();
    asked[0].timeout_client_data = Some(50000);
    assert_eq!(plan(&asked, &applied(&before), TAG), Ok(vec![]));
    asked[0].timeout_client_data = Some(1000);
    assert_eq!(plan(&asked, &applied(&before), TAG).unwrap().len(), 1);
}

#[test]
fn services_on_a_load_balancer_are_counted_by_their_listener_tags() {
    let mut theirs = listener("TCP", 8080, &["10.0.0.9"]);
    theirs.tags = vec!["kube_service_kubernetes_default_other".into(), "kube_managed_by_x".into()];
    let tree = applied(&[theirs, listener("TCP", 80, &[]), listener("TCP", 81, &[])]);
    let names: Vec<&str> = services_on(&tree).into_iter().collect();
    assert_eq!(names, ["kube_service_kubernetes_default_other", TAG]);
}
