//! `Changes` against the in-memory Octavia (`in_memory`).

use std::sync::LazyLock;

use super::*;
use crate::cloud::octavia::{ListenerSpec, MemberSpec, MonitorSpec, PoolSpec};
use crate::controllers::service::in_memory::{Memory, Stored};
use crate::controllers::service::names;

static WEB: LazyLock<ServiceId<'static>> =
    LazyLock::new(|| ServiceId::new("prod", "shop", "web", ""));

fn changes(memory: &Memory) -> Changes<'_, Memory> {
    Changes { cloud: memory, waits: Box::leak(Box::default()) }
}

/// Our load balancer for [`WEB`], ACTIVE, with nothing under it.
fn ours() -> Stored {
    let name = names::load_balancer(WEB.cluster, WEB.namespace, WEB.name);
    let tags = vec![name.clone(), names::OWNER_TAG.to_owned()];
    let provisioning_status = ACTIVE.to_owned();
    Stored {
        lb: LoadBalancer {
            id: "lb-web".into(),
            name,
            tags,
            provisioning_status,
            ..Default::default()
        },
        ..Stored::default()
    }
}

/// `WEB`'s spec: TCP 80 to NodePort 30080 on `addresses`, with a TCP monitor.
fn spec(addresses: &[&str]) -> LoadBalancerSpec {
    let member = |a: &&str| MemberSpec {
        address: (*a).to_owned(),
        protocol_port: 30080,
        name: format!("node-{a}"),
        subnet_id: None,
    };
    let monitor = MonitorSpec {
        name: "monitor".into(),
        kind: "TCP".into(),
        delay: 5,
        timeout: 3,
        max_retries: 1,
        max_retries_down: 3,
    };
    let pool = PoolSpec {
        name: "pool".into(),
        protocol: "TCP".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members: addresses.iter().map(member).collect(),
        healthmonitor: Some(monitor),
    };
    let listener = ListenerSpec {
        name: "listener".into(),
        protocol: "TCP".into(),
        protocol_port: 80,
        connection_limit: -1,
        tags: listener_tags(&WEB),
        default_pool: pool,
        ..ListenerSpec::default()
    };
    LoadBalancerSpec { listeners: vec![listener], ..LoadBalancerSpec::default() }
}

/// A listener's tags as `desired` makes them: the Service's load-balancer name, the owner tag.
fn listener_tags(id: &ServiceId<'_>) -> Vec<String> {
    let name = names::load_balancer(id.cluster, id.namespace, id.name);
    vec![name, names::OWNER_TAG.to_owned()]
}

/// A read the waits make.
fn is_wait(call: &str) -> bool {
    call == "get" || call == "list_project"
}

fn target<'a>(spec: &'a LoadBalancerSpec, maker: Option<Maker>) -> Target<'a> {
    Target { spec, id: &WEB, maker, keep_members: false, max_shared_lb: 2 }
}

#[tokio::test(start_paused = true)]
async fn a_new_port_is_made_call_by_call_with_active_between_and_then_nothing_is_left_to_do() {
    let memory = Memory::default();
    let lb = memory.with(ours());
    let spec = spec(&["10.0.0.5", "10.0.0.6"]);
    let changes = changes(&memory);

    let plan = changes.plan(lb, target(&spec, Some(Maker::Us))).await.unwrap();
    assert_eq!(plan.changes.iter().map(Change::label).collect::<Vec<_>>(), ["listener_create"]);
    assert_eq!(plan.summary(), "Updating load balancer lb-web: listener_create");
    memory.calls();
    let lb = changes.make(plan).await.unwrap();

    assert_eq!(lb.provisioning_status, ACTIVE);
    let calls = memory.calls();
    let made: Vec<&str> = calls.iter().map(String::as_str).filter(|c| !is_wait(c)).collect();
    assert_eq!(made, ["listener_create", "pool_create", "members_replace", "monitor_create"]);
    assert_eq!(memory.state().refused, 0, "every call waited for ACTIVE: {calls:?}");
    let plan = changes.plan(lb, target(&spec, Some(Maker::Us))).await.unwrap();
    assert_eq!(plan.changes, [], "converged");
    assert!(plan.held.is_empty() && plan.relabels.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_pending_load_balancer_is_waited_for_before_its_tree_is_read() {
    let memory = Memory::default();
    let mut stored = ours();
    (stored.lb.provisioning_status, stored.busy) = ("PENDING_UPDATE".into(), 3);
    let lb = memory.with(stored);
    let spec = spec(&["10.0.0.5"]);

    let plan = changes(&memory).plan(lb, target(&spec, Some(Maker::Us))).await.unwrap();

    assert_eq!(plan.lb.provisioning_status, ACTIVE);
    assert_eq!(memory.calls(), ["get", "get", "get", "get", "tree"]);
}

#[tokio::test(start_paused = true)]
async fn a_409_is_waited_out_up_to_three_times_and_a_fourth_fails_the_reconcile() {
    let memory = Memory::default();
    let lb = memory.with(ours());
    let spec = spec(&["10.0.0.5"]);
    let changes = changes(&memory);
    let listener = Change::CreateListener(spec.listeners[0].clone());

    memory.state().conflicts = CONFLICT_RETRIES;
    let lb = changes.apply(&lb, &Change::DeleteListener { listener_id: "none".into() }).await;
    let lb = lb.expect("three 409s are waited out");
    let tries = memory.calls().iter().filter(|c| *c == "listener_delete").count();
    assert_eq!(tries, 4);

    memory.state().conflicts = CONFLICT_RETRIES + 1;
    let error = changes.apply(&lb, &listener).await.unwrap_err();
    assert!(
        matches!(&error, Error::Cloud { doing, source } if source.is_conflict()
            && doing == "listener_create on load balancer lb-web"),
        "{error:?}"
    );
    assert!(memory.state().lbs["lb-web"].listeners.is_empty(), "nothing made");
}

#[tokio::test(start_paused = true)]
async fn with_no_eligible_node_a_pool_that_has_members_keeps_them() {
    let memory = Memory::default();
    let lb = memory.with(ours());
    let changes = changes(&memory);
    let full = spec(&["10.0.0.5", "10.0.0.6"]);
    let lb = changes.make(changes.plan(lb, target(&full, None)).await.unwrap()).await.unwrap();
    let empty = spec(&[]);

    let keep = Target { keep_members: true, ..target(&empty, None) };
    let plan = changes.plan(lb.clone(), keep).await.unwrap();
    assert_eq!(plan.changes, []);
    let pool_id = memory.state().lbs["lb-web"].pools[0].id.clone();
    assert_eq!(plan.held, [Held { pool_id: pool_id.clone(), members: 2 }]);

    let plan = changes.plan(lb, target(&empty, None)).await.unwrap();
    assert_eq!(plan.changes, [Change::ReplaceMembers { pool_id, members: Vec::new() }]);
}

#[tokio::test(start_paused = true)]
async fn a_full_shared_load_balancer_and_a_port_another_service_holds_leave_the_service_alone() {
    let memory = Memory::default();
    let mut shared = ours();
    shared.lb.id = "lb-shared".into();
    let other = ServiceId::new(WEB.cluster, WEB.namespace, "api", WEB.uid);
    let mut taken = spec(&["10.0.0.5"]).listeners.remove(0);
    taken.tags = listener_tags(&other);
    let lb = memory.with(shared);
    let listener_id = memory.state().make(&lb.id, &Change::CreateListener(taken));
    assert!(listener_id.is_some());
    let spec = spec(&["10.0.0.5"]);
    let changes = changes(&memory);

    let full = Target { max_shared_lb: 1, ..target(&spec, None) };
    let error = changes.plan(lb.clone(), full).await.unwrap_err();
    assert!(
        matches!(&error, Error::LeftAlone { reason: "SharedLoadBalancerFull", message }
            if message.contains("already serves 1 Services ([LoadBalancer] max-shared-lb = 1)")),
        "{error}"
    );
    let error = changes.plan(lb, target(&spec, None)).await.unwrap_err();
    assert!(
        matches!(&error, Error::LeftAlone { reason: "ListenerPortTaken", message }
            if message == "port 80/TCP is already used by another Service on load balancer lb-shared"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_adopted_load_balancer_gets_our_tags_last_after_its_listeners() {
    let memory = Memory::default();
    let mut upstream = ours();
    upstream.lb.tags = vec![upstream.lb.name.clone()];
    let lb = memory.with(upstream);
    let spec = spec(&["10.0.0.5"]);
    let changes = changes(&memory);

    let plan = changes.plan(lb, target(&spec, Some(Maker::Upstream))).await.unwrap();

    assert_eq!(plan.relabels, Some(Maker::Upstream));
    let labels: Vec<&str> = plan.changes.iter().map(Change::label).collect();
    assert_eq!(labels, ["listener_create", "loadbalancer_update"]);
    let lb = changes.make(plan).await.unwrap();
    assert!(lb.tags.contains(&names::OWNER_TAG.to_owned()), "{:?}", lb.tags);
}

#[tokio::test(start_paused = true)]
async fn a_serial_create_is_the_load_balancer_then_each_listener_and_a_delete_waits_for_gone() {
    let memory = Memory::default();
    let mut spec = spec(&["10.0.0.5"]);
    spec.name = "kube_service_prod_shop_web".into();
    let changes = changes(&memory);

    let lb = changes.create(&spec, true).await.unwrap();
    let calls = memory.calls();
    let made: Vec<&str> = calls.iter().map(String::as_str).filter(|c| !is_wait(c)).collect();
    assert_eq!(
        made,
        ["create", "listener_create", "pool_create", "members_replace", "monitor_create"]
    );
    assert_eq!(memory.state().refused, 0, "{calls:?}");
    assert_eq!(lb.provisioning_status, ACTIVE);

    changes.delete(&lb, "").await.unwrap();
    assert!(memory.state().lbs.is_empty(), "gone before delete returns");
    // Created by this Octavia, in its project: the waits read the project's list.
    assert_eq!(memory.calls(), ["delete", "list_project", "list_project", "list_project"]);
}
