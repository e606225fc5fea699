//! An in-memory OpenStack for the service controller's tests: an Octavia that behaves as the
//! real one does where the calls depend on it (a change locks the load balancer,
//! `PENDING_UPDATE` then ACTIVE on a later read; a call on a locked one is answered 409; a new
//! listener or pool comes alone), and Neutron as a project with no floating IPs, ports or
//! security groups. A call it does not serve panics: the test is then wider than this fake.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::runtime::reflector;
use kube_support::events::Recorder;

use super::annotations::Defaults;
use super::settings::LbSettings;
use super::{ServiceContext, converged, notice, one_writer, run, wait};

use crate::cloud;
use crate::cloud::floating_ips::{FloatingIp, FloatingIpSpec, NamedSubnet};
use crate::cloud::load_balancing::{LoadBalancing, Octavia};
use crate::cloud::neutron::{OwnedPort, Port};
use crate::cloud::octavia::model::IdRef;
use crate::cloud::octavia::{
    ACTIVE, Change, HealthMonitor, Listener, ListenerSpec, LoadBalancer, LoadBalancerSpec, Member,
    MemberSpec, MonitorSpec, Pool, PoolSpec, Tree,
};
use crate::cloud::revision::Written;
use crate::cloud::security_groups::{
    MemberPort, Rule, RuleSpec, SecurityGroup, SecurityGroups, Subnet,
};
use crate::controllers::own_writes::OwnWrites;
use crate::controllers::projection::CachedNode;
use crate::metrics::Metrics;

/// One load balancer's tree as Octavia keeps it.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    pub(crate) lb: LoadBalancer,
    pub(crate) listeners: Vec<Listener>,
    pub(crate) pools: Vec<Pool>,
    pub(crate) members: BTreeMap<String, Vec<Member>>,
    pub(crate) monitors: Vec<HealthMonitor>,
    /// Reads left until a `PENDING_*` load balancer is ACTIVE (or gone, after a delete).
    pub(crate) busy: u32,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) lbs: BTreeMap<String, Stored>,
    /// The next change calls answered 409 as if another writer held the load balancer.
    pub(crate) conflicts: u32,
    /// Calls made on a load balancer that was not ACTIVE (refused with 409).
    pub(crate) refused: u32,
    /// Every call, in order: `get`, `list_project`, `tree`, `create`, `delete` or the
    /// change's label.
    pub(crate) calls: Vec<String>,
    pub(crate) next_id: u32,
    /// Neutron's ports, for the member-subnet lookups (none unless a test adds them).
    pub(crate) ports: Vec<Port>,
}

#[derive(Debug, Default)]
pub(crate) struct Memory(Mutex<State>);

/// The project of the load balancers this Octavia creates.
pub(crate) const PROJECT: &str = "project";

fn conflict() -> cloud::Error {
    cloud::Error::Call {
        operation: "change",
        source: osauth::Error::new(osauth::ErrorKind::Conflict, "409: load balancer is immutable"),
    }
}

impl State {
    /// Load balancer `id` as a read sees it now; each read brings a `PENDING_*` one a step
    /// closer to ACTIVE (or to gone, after a delete).
    fn observe(&mut self, id: &str) -> Option<LoadBalancer> {
        let stored = self.lbs.get_mut(id)?;
        let seen = stored.lb.clone();
        if stored.busy > 0 {
            stored.busy -= 1;
            if stored.busy == 0 && stored.lb.provisioning_status == "PENDING_DELETE" {
                self.lbs.remove(id);
            } else if stored.busy == 0 {
                stored.lb.provisioning_status = ACTIVE.to_owned();
            }
        }
        Some(seen)
    }

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
    pub(crate) fn make(&mut self, lb: &str, change: &Change) -> Option<String> {
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
    pub(crate) fn with(&self, stored: Stored) -> LoadBalancer {
        let mut state = self.0.lock().unwrap();
        let lb = stored.lb.clone();
        state.lbs.insert(lb.id.clone(), stored);
        lb
    }

    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn calls(&self) -> Vec<String> {
        std::mem::take(&mut self.state().calls)
    }
}

impl Octavia for Memory {
    async fn load_balancers_named(&self, name: &str) -> cloud::Result<Vec<LoadBalancer>> {
        let mut state = self.state();
        state.calls.push("list".into());
        Ok(state.lbs.values().filter(|s| s.lb.name == name).map(|s| s.lb.clone()).collect())
    }

    async fn load_balancer(&self, id: &str) -> cloud::Result<LoadBalancer> {
        let mut state = self.state();
        state.calls.push("get".into());
        let not_found = || cloud::Error::NotFound { what: format!("load balancer {id}") };
        state.observe(id).ok_or_else(not_found)
    }

    async fn load_balancers_of(&self, project_id: &str) -> cloud::Result<Vec<LoadBalancer>> {
        let mut state = self.state();
        state.calls.push("list_project".into());
        let ids: Vec<String> = state
            .lbs
            .values()
            .filter(|s| s.lb.project_id == project_id)
            .map(|s| s.lb.id.clone())
            .collect();
        Ok(ids.iter().filter_map(|id| state.observe(id)).collect())
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
            project_id: PROJECT.to_owned(),
            provisioning_status: "PENDING_CREATE".to_owned(),
            vip_address: "10.0.0.10".to_owned(),
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

impl LoadBalancing for Memory {
    async fn has_load_balancer(&self) -> cloud::Result<bool> {
        Ok(true)
    }

    async fn floating_ips(&self, _: &[(&'static str, String)]) -> cloud::Result<Vec<FloatingIp>> {
        self.state().calls.push("floatingip_list".into());
        Ok(Vec::new())
    }

    async fn create_floating_ip(
        &self,
        _: &FloatingIpSpec,
        _: &[String],
    ) -> cloud::Result<FloatingIp> {
        unreachable!("the in-memory OpenStack allocates no floating IP")
    }

    async fn set_floating_ip_port(
        &self,
        _: &str,
        _: Option<&str>,
        _: Option<u64>,
    ) -> cloud::Result<Written<()>> {
        unreachable!("the in-memory OpenStack has no floating IP")
    }

    async fn describe_floating_ip(
        &self,
        _: &str,
        _: &str,
        _: Option<u64>,
    ) -> cloud::Result<Written<()>> {
        unreachable!("the in-memory OpenStack has no floating IP")
    }

    async fn add_floating_ip_tags(&self, _: &str, _: &[String]) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no floating IP")
    }

    async fn floating_subnets(
        &self,
        _: &str,
        _: Option<(&'static str, String)>,
    ) -> cloud::Result<Vec<NamedSubnet>> {
        unreachable!("the in-memory OpenStack has no floating network")
    }

    async fn delete_floating_ip(&self, _: &str) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no floating IP")
    }

    async fn ports_named(&self, _: &str) -> cloud::Result<Vec<OwnedPort>> {
        self.state().calls.push("port_list".into());
        Ok(Vec::new())
    }

    async fn delete_port(&self, _: &str) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no port")
    }

    async fn subnets_of(&self, _: &str) -> cloud::Result<Vec<String>> {
        unreachable!("the in-memory OpenStack has no port")
    }

    async fn subnet_of_server(&self, server: &str, address: &str) -> cloud::Result<Option<String>> {
        let mut state = self.state();
        state.calls.push("port_list".into());
        let fixed = state.ports.iter().filter(|p| p.device_id == server).flat_map(|p| &p.fixed_ips);
        Ok(fixed.filter(|f| f.ip_address == address).map(|f| f.subnet_id.clone()).next())
    }

    async fn ports_on_subnet(&self, subnet: &str) -> cloud::Result<Vec<Port>> {
        let mut state = self.state();
        state.calls.push("port_list".into());
        let on = |p: &&Port| p.fixed_ips.iter().any(|f| f.subnet_id == subnet);
        Ok(state.ports.iter().filter(on).cloned().collect())
    }
}

impl SecurityGroups for Memory {
    async fn security_groups_named(&self, _: &str) -> cloud::Result<Vec<SecurityGroup>> {
        self.state().calls.push("security_group_list".into());
        Ok(Vec::new())
    }

    async fn create_security_group(
        &self,
        _: &str,
        _: &str,
        _: &[String],
    ) -> cloud::Result<SecurityGroup> {
        self.state().calls.push("security_group_create".into());
        let refused = "403: the in-memory OpenStack makes no security group";
        let source = osauth::Error::new(osauth::ErrorKind::AccessDenied, refused);
        Err(cloud::Error::Call { operation: "security_group_create", source })
    }

    async fn add_security_group_tags(&self, _: &str, _: &[String]) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no security group")
    }

    async fn delete_security_group(&self, _: &str) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no security group")
    }

    async fn create_rule(&self, _: &str, _: &RuleSpec) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no security group")
    }

    async fn delete_rule(&self, _: &str) -> cloud::Result<()> {
        unreachable!("the in-memory OpenStack has no security group")
    }

    async fn rules_naming_group(&self, _: &str) -> cloud::Result<Vec<Rule>> {
        unreachable!("the in-memory OpenStack has no security group")
    }

    async fn ports_with_ips(&self, _: &[String]) -> cloud::Result<Vec<MemberPort>> {
        self.state().calls.push("port_list".into());
        Ok(Vec::new())
    }

    async fn ports_in_group(&self, _: &str) -> cloud::Result<Vec<MemberPort>> {
        unreachable!("the in-memory OpenStack has no port")
    }

    async fn member_port(&self, _: &str) -> cloud::Result<MemberPort> {
        unreachable!("the in-memory OpenStack has no port")
    }

    async fn set_port_groups(
        &self,
        _: &str,
        _: &[String],
        _: Option<u64>,
    ) -> cloud::Result<Written<()>> {
        unreachable!("the in-memory OpenStack has no port")
    }

    async fn subnets(&self, _: &[String]) -> cloud::Result<Vec<Subnet>> {
        unreachable!("the in-memory OpenStack has no subnet")
    }
}

/// A service controller context on `client` and `cloud`, as the controller's own but for the
/// settings: internal load balancers on subnet `subnet-1`, no security groups, no nodes.
pub(crate) fn context(client: kube::Client, cloud: Arc<Memory>) -> Arc<ServiceContext<Memory>> {
    context_with(client, cloud, &[], false)
}

/// [`context`] with `nodes` in its node cache, and security groups managed when asked.
pub(crate) fn context_with(
    client: kube::Client,
    cloud: Arc<Memory>,
    nodes: &[CachedNode],
    manage_security_groups: bool,
) -> Arc<ServiceContext<Memory>> {
    let (store, mut writer) = reflector::store::<CachedNode>();
    for node in nodes {
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(node.clone()));
    }
    let nodes = store;
    let defaults = Defaults {
        internal: true,
        lb_method: "ROUND_ROBIN".into(),
        subnet_id: Some("subnet-1".into()),
        ingress_hostname_suffix: "nip.io".into(),
        ..Defaults::default()
    };
    let settings = LbSettings {
        defaults,
        classes: BTreeMap::new(),
        serial: false,
        manage_security_groups,
        max_shared_lb: 2,
    };
    Arc::new(ServiceContext {
        recorder: Recorder::new(client.clone(), ServiceContext::<Memory>::reporter()),
        client,
        cloud,
        metrics: Metrics::shared(),
        nodes,
        cluster: "prod".into(),
        settings: tokio::sync::watch::channel(Some(Arc::new(settings))).1,
        waits: wait::Waits::default(),
        failures: run::Failures::default(),
        resync: Duration::from_secs(60),
        converged: converged::Converged::default(),
        notices: notice::Notices::default(),
        member_ports: super::member_ports::MemberPorts::default(),
        left_out: notice::Notices::default(),
        turns: one_writer::Turns::default(),
        own_writes: OwnWrites::default(),
        services: std::sync::OnceLock::new(),
    })
}
