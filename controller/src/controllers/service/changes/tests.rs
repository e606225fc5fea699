//! `Changes` against an in-memory Octavia that behaves as the real one does where the calls
//! depend on it: a change locks the load balancer (`PENDING_UPDATE`, then ACTIVE on a later
//! read), a call on a locked one is answered 409, a new listener or pool comes alone.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use super::*;
use crate::cloud;
use crate::cloud::octavia::model::IdRef;
use crate::cloud::octavia::{
    HealthMonitor, Listener, ListenerSpec, Member, MemberSpec, MonitorSpec, Pool, PoolSpec, Tree,
};
use crate::controllers::service::names;

/// One load balancer's tree as Octavia keeps it.
#[derive(Debug, Default)]
struct Stored {
    lb: LoadBalancer,
    listeners: Vec<Listener>,
    pools: Vec<Pool>,
    members: BTreeMap<String, Vec<Member>>,
    monitors: Vec<HealthMonitor>,
    /// Reads left until a `PENDING_*` load balancer is ACTIVE (or gone, after a delete).
    busy: u32,
}

#[derive(Debug, Default)]
struct State {
    lbs: BTreeMap<String, Stored>,
    /// The next change calls answered 409 as if another writer held the load balancer.
    conflicts: u32,
    /// Calls made on a load balancer that was not ACTIVE (refused with 409).
    refused: u32,
    /// Every call, in order: `get`, `tree`, `create`, `delete` or the change's label.
    calls: Vec<String>,
    next_id: u32,
}

#[derive(Debug, Default)]
struct Memory(Mutex<State>);

fn conflict() -> cloud::Error {
    cloud::Error::Call {
        operation: "change",
        source: osauth::Error::new(osauth::ErrorKind::Conflict, "409: load balancer is immutable"),
    }
}

impl State {
    fn id(&mut self, kind: &str) -> String {
        self.next_id += 1;
        format!("{kind}-{}", self.next_id)
    }

    fn listener(&mut self, spec: &ListenerSpec) -> Listener {
        Listener {
            id: self.id("listener"),
            name: spec.name.clone(),
            protocol: spec.protocol.clone(),
            protocol_port: spec.protocol_port,
            allowed_cidrs: Some(spec.allowed_cidrs.clone()),
            connection_limit: spec.connection_limit,
            tags: spec.tags.clone(),
            provisioning_status: ACTIVE.to_owned(),
            ..Listener::default()
        }
    }

    fn pool(&mut self, spec: &PoolSpec) -> Pool {
        let id = self.id("pool");
        Pool {
            id,
            name: spec.name.clone(),
            protocol: spec.protocol.clone(),
            lb_algorithm: spec.lb_algorithm.clone(),
            provisioning_status: ACTIVE.to_owned(),
            ..Pool::default()
        }
    }

    fn members(&mut self, specs: &[MemberSpec]) -> Vec<Member> {
        let member = |id, m: &MemberSpec| Member {
            id,
            name: m.name.clone(),
            address: m.address.clone(),
            protocol_port: m.protocol_port,
            subnet_id: m.subnet_id.clone(),
        };
        specs.iter().map(|m| member(self.id("member"), m)).collect()
    }

    fn monitor(&mut self, spec: &MonitorSpec) -> HealthMonitor {
        HealthMonitor {
            id: self.id("monitor"),
            name: spec.name.clone(),
            kind: spec.kind.clone(),
            delay: spec.delay,
            timeout: spec.timeout,
            max_retries: spec.max_retries,
            max_retries_down: spec.max_retries_down,
        }
    }

    /// A pool with its members and monitor under listener `listener_id` of `lb`.
    fn add_pool(&mut self, lb: &str, listener_id: &str, spec: &PoolSpec) -> String {
        let mut pool = self.pool(spec);
        let members = self.members(&spec.members);
        pool.members = members.iter().map(|m| IdRef { id: m.id.clone() }).collect();
        let monitor = spec.healthmonitor.as_ref().map(|m| self.monitor(m));
        pool.healthmonitor_id = monitor.as_ref().map(|m| m.id.clone());
        let stored = self.lbs.get_mut(lb).unwrap();
        stored.members.insert(pool.id.clone(), members);
        stored.monitors.extend(monitor);
        let listener = stored.listeners.iter_mut().find(|l| l.id == listener_id).unwrap();
        listener.default_pool_id = Some(pool.id.clone());
        let id = pool.id.clone();
        stored.pools.push(pool);
        id
    }

    /// Makes `change` on `lb`: the ID of what it created.
    fn make(&mut self, lb: &str, change: &Change) -> Option<String> {
        match change {
            Change::CreateListener(spec) => {
                let listener = self.listener(spec);
                let id = listener.id.clone();
                self.lbs.get_mut(lb).unwrap().listeners.push(listener);
                Some(id)
            }
            Change::CreatePool { listener_id, pool } => {
                let alone = PoolSpec { members: Vec::new(), healthmonitor: None, ..pool.clone() };
                Some(self.add_pool(lb, listener_id, &alone))
            }
            Change::ReplaceMembers { pool_id, members } => {
                let members = self.members(members);
                let stored = self.lbs.get_mut(lb).unwrap();
                let pool = stored.pools.iter_mut().find(|p| &p.id == pool_id).unwrap();
                pool.members = members.iter().map(|m| IdRef { id: m.id.clone() }).collect();
                stored.members.insert(pool_id.clone(), members);
                None
            }
            Change::CreateMonitor { pool_id, monitor } => {
                let monitor = self.monitor(monitor);
                let stored = self.lbs.get_mut(lb).unwrap();
                let pool = stored.pools.iter_mut().find(|p| &p.id == pool_id).unwrap();
                pool.healthmonitor_id = Some(monitor.id.clone());
                stored.monitors.push(monitor);
                None
            }
            Change::DeleteListener { listener_id } => {
                self.lbs.get_mut(lb).unwrap().listeners.retain(|l| &l.id != listener_id);
                None
            }
            Change::DeletePool { pool_id } => {
                let stored = self.lbs.get_mut(lb).unwrap();
                stored.pools.retain(|p| &p.id != pool_id);
                stored.members.remove(pool_id);
                for listener in &mut stored.listeners {
                    if listener.default_pool_id.as_ref() == Some(pool_id) {
                        listener.default_pool_id = None;
                    }
                }
                None
            }
            Change::UpdateLoadBalancer { name, description, tags } => {
                let stored = &mut self.lbs.get_mut(lb).unwrap().lb;
                (stored.name, stored.description) = (name.clone(), description.clone());
                stored.tags = tags.clone();
                None
            }
            other => panic!("the in-memory Octavia does not make {other:?}"),
        }
    }
}

impl Memory {
    fn with(&self, stored: Stored) -> LoadBalancer {
        let mut state = self.0.lock().unwrap();
        let lb = stored.lb.clone();
        state.lbs.insert(lb.id.clone(), stored);
        lb
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut self.state().calls)
    }
}

impl Octavia for Memory {
    async fn load_balancers_named(&self, name: &str) -> cloud::Result<Vec<LoadBalancer>> {
        let state = self.state();
        Ok(state.lbs.values().filter(|s| s.lb.name == name).map(|s| s.lb.clone()).collect())
    }

    async fn load_balancer(&self, id: &str) -> cloud::Result<LoadBalancer> {
        let mut state = self.state();
        state.calls.push("get".into());
        let not_found = || cloud::Error::NotFound { what: format!("load balancer {id}") };
        let stored = state.lbs.get_mut(id).ok_or_else(not_found)?;
        let seen = stored.lb.clone();
        if stored.busy > 0 {
            stored.busy -= 1;
            if stored.busy == 0 && stored.lb.provisioning_status == "PENDING_DELETE" {
                state.lbs.remove(id);
            } else if stored.busy == 0 {
                stored.lb.provisioning_status = ACTIVE.to_owned();
            }
        }
        Ok(seen)
    }

    async fn tree(&self, load_balancer: LoadBalancer) -> cloud::Result<Tree> {
        let mut state = self.state();
        state.calls.push("tree".into());
        let stored = &state.lbs[&load_balancer.id];
        Ok(Tree {
            load_balancer,
            listeners: stored.listeners.clone(),
            pools: stored.pools.clone(),
            members: stored.members.clone().into_iter().collect(),
            monitors: stored.monitors.clone(),
        })
    }

    async fn create(&self, spec: &LoadBalancerSpec) -> cloud::Result<LoadBalancer> {
        let mut state = self.state();
        state.calls.push("create".into());
        let lb = LoadBalancer {
            id: state.id("lb"),
            name: spec.name.clone(),
            description: spec.description.clone(),
            tags: spec.tags.clone(),
            provisioning_status: "PENDING_CREATE".to_owned(),
            ..LoadBalancer::default()
        };
        state.lbs.insert(lb.id.clone(), Stored { lb: lb.clone(), busy: 2, ..Stored::default() });
        for listener in &spec.listeners {
            let listener_id = state.make(&lb.id, &Change::CreateListener(listener.clone()));
            state.add_pool(&lb.id, &listener_id.unwrap(), &listener.default_pool);
        }
        Ok(lb)
    }

    async fn change(
        &self,
        load_balancer_id: &str,
        change: &Change,
    ) -> cloud::Result<Option<String>> {
        let mut state = self.state();
        state.calls.push(change.label().into());
        if state.conflicts > 0 {
            state.conflicts -= 1;
            return Err(conflict());
        }
        if state.lbs[load_balancer_id].lb.provisioning_status != ACTIVE {
            state.refused += 1;
            return Err(conflict());
        }
        let created = state.make(load_balancer_id, change);
        let stored = state.lbs.get_mut(load_balancer_id).unwrap();
        (stored.lb.provisioning_status, stored.busy) = ("PENDING_UPDATE".to_owned(), 2);
        Ok(created)
    }

    async fn delete(&self, id: &str) -> cloud::Result<()> {
        let mut state = self.state();
        state.calls.push("delete".into());
        let stored = state.lbs.get_mut(id).unwrap();
        (stored.lb.provisioning_status, stored.busy) = ("PENDING_DELETE".to_owned(), 2);
        Ok(())
    }
}

static WEB: LazyLock<ServiceId<'static>> =
    LazyLock::new(|| ServiceId::new("prod", "shop", "web", ""));

fn changes(memory: &Memory) -> Changes<'_, Memory> {
    Changes { cloud: memory, wait_limit: wait::LIMIT }
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
    let made: Vec<&str> = calls.iter().map(String::as_str).filter(|c| *c != "get").collect();
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
    let made: Vec<&str> = calls.iter().map(String::as_str).filter(|c| *c != "get").collect();
    assert_eq!(
        made,
        ["create", "listener_create", "pool_create", "members_replace", "monitor_create"]
    );
    assert_eq!(memory.state().refused, 0, "{calls:?}");
    assert_eq!(lb.provisioning_status, ACTIVE);

    changes.delete(&lb, "").await.unwrap();
    assert!(memory.state().lbs.is_empty(), "gone before delete returns");
    assert_eq!(memory.calls(), ["delete", "get", "get", "get"]);
}
