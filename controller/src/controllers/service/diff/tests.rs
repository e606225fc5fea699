use super::*;
use crate::cloud::octavia::model::IdRef;
use crate::cloud::octavia::{LoadBalancer, Member, PoolSpec};

const TAG: &str = "kube_service_kubernetes_default_web";

fn mine() -> Mine<'static> {
    static TAGS: std::sync::LazyLock<[String; 1]> = std::sync::LazyLock::new(|| [TAG.to_owned()]);
    Mine { tags: TAGS.as_slice(), named_after: &[] }
}

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
            name: l.name.clone(),
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
            name: pool.name.clone(),
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
                name: m.name.clone(),
                kind: m.kind.clone(),
                delay: m.delay,
                timeout: m.timeout,
                max_retries: m.max_retries,
                max_retries_down: m.max_retries_down,
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
    assert_eq!(plan(&desired, &applied(&desired), mine()), Ok(vec![]));
}

#[test]
fn a_new_port_is_one_create_and_a_removed_port_one_delete() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"]), listener("TCP", 443, &["10.0.0.1"])];
    let after = vec![listener("TCP", 80, &["10.0.0.1"]), listener("TCP", 8443, &["10.0.0.1"])];
    let ops = plan(&after, &applied(&before), mine()).unwrap();
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
    let ops = plan(&after, &applied(&before), mine()).unwrap();
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
    let ops = plan(&after, &applied(&before), mine()).unwrap();
    let labels: Vec<_> = ops.iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_update", "pool_update", "monitor_create"]);

    let mut slower = after.clone();
    slower[0].default_pool.healthmonitor = Some(monitor("TCP", 10));
    let labels: Vec<_> =
        plan(&slower, &applied(&after), mine()).unwrap().iter().map(Op::label).collect();
    assert_eq!(labels, ["monitor_update"]);
    let labels: Vec<_> =
        plan(&before, &applied(&after), mine()).unwrap().iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_update", "pool_update", "monitor_delete"]);
}

#[test]
fn what_octavia_cannot_update_is_replaced() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"])];
    let mut proxy = before.clone();
    proxy[0].default_pool.protocol = "PROXY".into();
    let ops = plan(&proxy, &applied(&before), mine()).unwrap();
    assert_eq!(ops[0], Op::DeletePool { pool_id: "p80".into() });
    assert!(
        matches!(&ops[1], Op::CreatePool { listener_id, .. } if listener_id == "l80"),
        "{ops:#?}"
    );

    let mut udp = before.clone();
    udp[0].protocol = "UDP".into();
    udp[0].default_pool.protocol = "UDP".into();
    let labels: Vec<_> =
        plan(&udp, &applied(&before), mine()).unwrap().iter().map(Op::label).collect();
    assert_eq!(labels, ["listener_create", "pool_delete", "listener_delete"]);
}

#[test]
fn on_a_shared_load_balancer_other_services_listeners_are_never_touched() {
    let mut theirs = listener("TCP", 8080, &["10.0.0.9"]);
    theirs.tags = vec!["kube_service_kubernetes_default_other".into()];
    let ours = listener("TCP", 80, &["10.0.0.1"]);
    let tree = applied(&[theirs.clone(), ours.clone()]);
    assert_eq!(plan(std::slice::from_ref(&ours), &tree, mine()), Ok(vec![]));
    // Its port taken by the other Service: an error, not a takeover.
    let clash = listener("TCP", 8080, &["10.0.0.1"]);
    assert_eq!(
        plan(&[clash], &tree, mine()),
        Err(PortTaken { protocol: "TCP".into(), port: 8080 })
    );
}

#[test]
fn octavias_default_timeouts_are_not_a_change_but_asked_ones_are() {
    let before = vec![listener("TCP", 80, &["10.0.0.1"])];
    let mut asked = before.clone();
    asked[0].timeout_client_data = Some(50000);
    assert_eq!(plan(&asked, &applied(&before), mine()), Ok(vec![]));
    asked[0].timeout_client_data = Some(1000);
    assert_eq!(plan(&asked, &applied(&before), mine()).unwrap().len(), 1);
}

#[test]
fn services_on_a_load_balancer_are_counted_by_their_listener_tags() {
    let mut theirs = listener("TCP", 8080, &["10.0.0.9"]);
    theirs.tags = vec!["kube_service_kubernetes_default_other".into(), "kube_managed_by_x".into()];
    let tree = applied(&[theirs, listener("TCP", 80, &[]), listener("TCP", 81, &[])]);
    let names: Vec<&str> = services_on(&tree).into_iter().collect();
    assert_eq!(names, ["kube_service_kubernetes_default_other", TAG]);
}

#[test]
fn an_adopted_trees_untagged_listeners_named_after_it_are_mine_and_get_our_names_and_tags() {
    const UPSTREAM: &str = "kube_service_c_default_web";
    let desired = vec![listener("TCP", 80, &["10.0.0.1"]), listener("TCP", 443, &["10.0.0.1"])];
    let mut theirs = applied(&desired);
    // Upstream's names on an Octavia without tags, the in-tree provider's form, a user's
    // listener named otherwise, and another Service's.
    theirs.listeners[0].name = format!("listener_0_{UPSTREAM}");
    theirs.listeners[0].tags = vec!["team-a".into()];
    theirs.listeners[1].name = format!("listener_{UPSTREAM}_1");
    theirs.listeners[1].tags = vec![];
    theirs.pools[0].name = format!("pool_0_{UPSTREAM}");
    let mut user = listener("TCP", 8080, &[]);
    user.name = format!("listener_x_{UPSTREAM}");
    user.tags = vec![];
    let mut other = listener("TCP", 9090, &[]);
    other.name = format!("listener_2_{UPSTREAM}");
    other.tags = vec!["kube_service_c_default_api".into()];
    let rest = applied(&[user, other]);
    theirs.listeners.extend(rest.listeners);
    let names = [UPSTREAM.to_owned()];
    let adopting = Mine { named_after: &names, ..mine() };
    let ops = plan(&desired, &theirs, adopting).unwrap();
    let labels: Vec<_> = ops.iter().map(Op::label).collect();
    // Relabelled in place; the user's and the other Service's listeners untouched.
    assert_eq!(labels, ["listener_update", "pool_update", "listener_update"], "{ops:#?}");
    let Op::UpdateListener { listener_id, spec } = &ops[0] else { panic!() };
    assert_eq!((listener_id.as_str(), spec.name.as_str()), ("l80", "listener_80"));
    assert_eq!(spec.tags, [TAG, "team-a"], "ours first, the user's kept");
    assert!(matches!(&ops[1], Op::UpdatePool { name, .. } if name == "pool_80"));
    // Not adopting: the same untagged listeners are someone else's, their ports taken.
    assert_eq!(
        plan(&desired, &theirs, mine()),
        Err(PortTaken { protocol: "TCP".into(), port: 80 })
    );
    // Once relabelled, nothing more to do.
    assert_eq!(plan(&desired, &applied(&desired), adopting), Ok(vec![]));
}

#[test]
fn a_renamed_cluster_tag_on_a_listener_is_replaced_by_ours() {
    let desired = vec![listener("TCP", 80, &["10.0.0.1"])];
    let mut tree = applied(&desired);
    let old = "kube_service_old_default_web".to_owned();
    tree.listeners[0].tags = vec![old.clone()];
    let tags = [TAG.to_owned(), old];
    let ops = plan(&desired, &tree, Mine { tags: &tags, named_after: &[] }).unwrap();
    let [Op::UpdateListener { spec, .. }] = ops.as_slice() else { panic!("{ops:#?}") };
    assert_eq!(spec.tags, [TAG]);
}

#[test]
fn a_member_batch_keeps_the_subnet_of_members_already_right() {
    // Upstream's members carry a subnet; ours ask for none. A node joining sends the whole
    // list: the members already there go in it with their own subnet, the new one without.
    let before = vec![listener("TCP", 80, &["10.0.0.1"])];
    let desired = vec![listener("TCP", 80, &["10.0.0.1", "10.0.0.2"])];
    let ops = plan(&desired, &applied(&before), mine()).unwrap();
    let [Op::ReplaceMembers { members, .. }] = ops.as_slice() else { panic!("{ops:?}") };
    let subnets: Vec<_> = members.iter().map(|m| (&*m.address, m.subnet_id.as_deref())).collect();
    assert_eq!(subnets, [("10.0.0.1", Some("whatever")), ("10.0.0.2", None)]);
}
