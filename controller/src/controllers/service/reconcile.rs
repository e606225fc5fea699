//! One Service's reconcile: ensure (finalizer first, then the load balancer, its floating IP and
//! the Service's status) or clean up (everything ours gone, then the finalizer).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use serde_json::{Value, json};

use super::annotations::{self, Settings};
use super::desired::{self, NodeView, Port, ServiceId, Vip};
use super::one_writer::Turn;
use super::ownership::{self, Found, Maker};
use super::{
    Error, FINALIZER, Result, ServiceContext, converged, diff, floating, hold, names,
    security_group, vip_port, wait,
};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::{ACTIVE, Change, ERROR, LoadBalancer, LoadBalancerSpec};
use crate::controllers::addresses::AddressType;
use crate::controllers::is_ready;
use crate::controllers::projection::CachedNode;

/// The `spec.loadBalancerClass` this controller serves besides "unset".
pub(crate) const LOAD_BALANCER_CLASS: &str = "openstack.org/octavia";

/// Ensures or cleans up `service`'s load balancer.
pub(crate) async fn reconcile<L: LoadBalancing>(
    service: Arc<Service>,
    ctx: Arc<ServiceContext<L>>,
) -> Result<Action> {
    if wants_load_balancer(&service) {
        add_finalizer(&service, &ctx).await?;
        ensure(&service, &ctx).await?;
        return Ok(Action::requeue(ctx.resync));
    }
    if let Some(class) = other_class(&service) {
        let note = format!(
            "spec.loadBalancerClass is {class:?}, not {LOAD_BALANCER_CLASS:?} or unset: this \
             controller leaves the Service to the controller of that class"
        );
        ctx.notice(&service, EventType::Normal, "LoadBalancerClassNotOurs", note).await;
    }
    if service.finalizers().iter().any(|f| f == FINALIZER) {
        ctx.converged.forget(&super::run::key(&service));
        super::cleanup::cleanup(&service, &ctx).await?;
        remove_finalizer(&service, &ctx).await?;
        ctx.notices.forget(&super::run::key(&service));
    }
    Ok(Action::await_change())
}

/// The class of a live `type: LoadBalancer` Service that another controller serves.
fn other_class(service: &Service) -> Option<&str> {
    let spec = service.spec.as_ref()?;
    let class = spec.load_balancer_class.as_deref().filter(|c| *c != LOAD_BALANCER_CLASS)?;
    let live = service.metadata.deletion_timestamp.is_none();
    (live && spec.type_.as_deref() == Some("LoadBalancer")).then_some(class)
}

/// `type: LoadBalancer`, not being deleted, and of no other controller's class.
pub(crate) fn wants_load_balancer(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    service.metadata.deletion_timestamp.is_none()
        && spec.and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
        && spec
            .and_then(|s| s.load_balancer_class.as_deref())
            .is_none_or(|class| class == LOAD_BALANCER_CLASS)
}

fn api(service: &Service, ctx: &ServiceContext<impl LoadBalancing>) -> Api<Service> {
    Api::namespaced(ctx.client.clone(), &service.namespace().unwrap_or_default())
}

/// Adds the finalizer before the first Octavia call (guarded by the resourceVersion).
async fn add_finalizer<L: LoadBalancing>(service: &Service, ctx: &ServiceContext<L>) -> Result<()> {
    let mut finalizers = service.finalizers().to_vec();
    if finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(());
    }
    finalizers.push(FINALIZER.to_owned());
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": service.resource_version(),
    }});
    patch_service(service, ctx, &Patch::Merge(patch), "adding the load-balancer finalizer").await
}

/// Removes the finalizer, guarded by the finalizer list as it was read (a JSON patch that tests
/// it first), not by the resourceVersion: the clean-up's own status write (the ingress cleared
/// when the Service stops being `type: LoadBalancer`) moves that, and a guard on it failed every
/// such removal once (a retry and a Warning Event for nothing). A failed test (422) or a
/// Service gone (404) means this copy from the cache is older than the server's: our own
/// removal already went through, or someone changed the list; either change's watch event
/// brings the Service back here if anything is left to do, so neither is a failure.
async fn remove_finalizer<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
) -> Result<()> {
    let read = service.finalizers();
    let kept: Vec<&String> = read.iter().filter(|f| *f != FINALIZER).collect();
    let path = "/metadata/finalizers";
    let ops = json!([{"op": "test", "path": path, "value": read},
                     {"op": "replace", "path": path, "value": kept}]);
    let doing = "removing the load-balancer finalizer";
    match patch_service(service, ctx, &json_patch(ops)?, doing).await {
        Err(Error::Kube { source: kube::Error::Api(status), .. })
            if status.code == 404 || status.code == 422 =>
        {
            tracing::debug!(service = %super::run::key(service), code = status.code,
                "finalizer list moved since this copy was read; its watch event follows");
            Ok(())
        }
        done => done,
    }
}

/// A JSON patch (RFC 6902) from its operations written as JSON.
fn json_patch(ops: Value) -> Result<Patch<Value>> {
    let ops = serde_json::from_value(ops).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(Patch::Json(ops))
}

async fn patch_service<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    patch: &Patch<Value>,
    doing: &'static str,
) -> Result<()> {
    api(service, ctx)
        .patch(&service.name_any(), &PatchParams::default(), patch)
        .await
        .map_err(|source| Error::Kube { doing, source })?;
    Ok(())
}

/// What the nodes say, as the member rule reads it.
pub(crate) fn node_view(node: &CachedNode) -> NodeView {
    let internal_ip = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == AddressType::InternalIP.as_str()))
        .map(|a| a.address.clone());
    NodeView {
        name: node.name_any(),
        ready: is_ready(node),
        deleting: node.metadata.deletion_timestamp.is_some(),
        labels: node.labels().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
        internal_ip,
    }
}

pub(super) fn ports(service: &Service) -> Vec<Port> {
    let ports = service.spec.as_ref().and_then(|s| s.ports.clone()).unwrap_or_default();
    ports
        .into_iter()
        .map(|p| Port {
            protocol: p.protocol.unwrap_or_else(|| "TCP".to_owned()),
            port: u16::try_from(p.port).unwrap_or_default(),
            node_port: p.node_port.and_then(|n| u16::try_from(n).ok()).unwrap_or_default(),
        })
        .collect()
}

fn settings<L: LoadBalancing>(service: &Service, ctx: &ServiceContext<L>) -> Result<Settings> {
    annotations::settings(service.annotations(), &ctx.defaults, &ctx.classes)
        .map_err(Error::Settings)
}

/// Writes `load-balancer-id` on the Service: the ID of its own load balancer.
async fn write_load_balancer_id<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    id: &str,
) -> Result<()> {
    let patch = json!({"metadata": {"annotations": {annotations::LOAD_BALANCER_ID: id}}});
    patch_service(service, ctx, &Patch::Merge(patch), "writing the load-balancer-id annotation")
        .await
}

/// Drops `load-balancer-id`, which names load balancer `gone`, no longer there: only while it
/// still names that one (a JSON patch that tests it first), so that a user's new value is
/// never lost.
async fn clear_load_balancer_id<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    gone: &str,
) -> Result<()> {
    let path =
        format!("/metadata/annotations/{}", annotations::LOAD_BALANCER_ID.replace('/', "~1"));
    let ops = json!([{"op": "test", "path": path, "value": gone}, {"op": "remove", "path": path}]);
    patch_service(service, ctx, &json_patch(ops)?, "clearing the load-balancer-id annotation")
        .await?;
    let note = format!(
        "Load balancer {gone} of the annotation {} no longer exists: annotation cleared",
        annotations::LOAD_BALANCER_ID
    );
    ctx.event(service, EventType::Normal, "ClearedLoadBalancerId", note).await;
    Ok(())
}

async fn ensure<L: LoadBalancing>(service: &Service, ctx: &ServiceContext<L>) -> Result<()> {
    let settings = settings(service, ctx)?;
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let id = ServiceId { cluster: &ctx.cluster, namespace: &namespace, name: &name, uid: &uid };
    let nodes: Vec<NodeView> = ctx.nodes.state().iter().map(|n| node_view(n)).collect();
    let backends = desired::backends(&nodes, &settings);
    let keep_members = desired::none_eligible(&nodes);
    let spec_k8s = service.spec.clone().unwrap_or_default();
    let vip = Vip {
        port_id: settings.port_id.clone(),
        subnet_id: settings.subnet_id.clone(),
        network_id: settings.network_id.clone(),
        address: spec_k8s.load_balancer_ip.clone().filter(|_| settings.internal),
    };
    let ranges = spec_k8s.load_balancer_source_ranges.clone().unwrap_or_default();
    let ports = ports(service);
    let spec = desired::load_balancer(&id, &ports, &backends, &ranges, &settings, &vip)
        .map_err(Error::Invalid)?;
    let requested = spec_k8s.load_balancer_ip.as_deref().filter(|_| !settings.internal);
    let key = super::run::key(service);
    // Not `load-balancer-id`: the cache compares the load balancer found itself, and the
    // annotation written at an in-tree adoption must not cost a second full reconcile.
    let fingerprint = converged::fingerprint(&(
        &spec,
        &Settings { load_balancer_id: None, ..settings.clone() },
        requested,
        &ranges,
        &ports,
        &backends,
        &uid,
        ctx.manage_security_groups,
    ));
    let annotated = settings.load_balancer_id.as_deref();
    let (found, stale) = ownership::find(ctx.cloud.as_ref(), &id, annotated).await?;
    if stale && let Some(gone) = annotated {
        clear_load_balancer_id(service, ctx, gone).await?;
    }
    let annotated = annotated.filter(|_| !stale);
    if let Found::Own(lb, _) = &found
        && annotated != Some(lb.id.as_str())
    {
        // Found by its ID from now on, as upstream does: through any rename (the in-tree
        // name, migrate-load-balancers), and by migrate-load-balancers for our tags' cluster.
        write_load_balancer_id(service, ctx, &lb.id).await?;
    }
    if let Found::Own(lb, _) | Found::Shared(lb) = &found
        && let Some(address) = ctx.converged.unchanged(&key, fingerprint, lb)
    {
        // Nothing changed on either side since the last full reconcile: one read was enough.
        return set_ingress(service, ctx, &settings, &address).await;
    }
    let (lb, changed, own) = match found {
        Found::Foreign(lb) => {
            let message = ownership::foreign_message(&lb);
            return Err(Error::LeftAlone { reason: "LoadBalancerNotOurs", message });
        }
        Found::Own(lb, Maker::Us) if lb.provisioning_status == ERROR => {
            let spec = with_vip(ctx, spec.clone(), &backends).await?;
            let lb = recreate(service, ctx, lb, &id, &settings, &spec).await?;
            write_load_balancer_id(service, ctx, &lb.id).await?;
            (lb, true, true)
        }
        Found::Own(lb, maker) => {
            let turn = ctx.turns.take(&lb.id).await;
            if maker != Maker::Us {
                // Adopting: its floating IP is marked ours before the load balancer is.
                // See: issue 36 (an in-tree floating IP orphaned by a rename).
                floating::adopt(ctx.cloud.as_ref(), &lb, &id).await?;
            }
            let target = Target { spec: &spec, id: &id, maker: Some(maker), keep_members };
            let (lb, changed) = converge(service, ctx, lb, target, &turn).await?;
            (lb, changed, true)
        }
        Found::Shared(lb) => {
            let turn = ctx.turns.take(&lb.id).await;
            let target = Target { spec: &spec, id: &id, maker: None, keep_members };
            let (lb, changed) = converge(service, ctx, lb, target, &turn).await?;
            (lb, changed, false)
        }
        Found::Nothing => {
            let spec = with_vip(ctx, spec.clone(), &backends).await?;
            let lb = create(service, ctx, &spec).await?;
            write_load_balancer_id(service, ctx, &lb.id).await?;
            (lb, true, true)
        }
    };
    // With no eligible node, the group stays on the ports it is on (`hold`).
    if ctx.manage_security_groups && !keep_members {
        let owner = security_group::Owner { service: &id, load_balancer: &spec.name };
        security_group::ensure(ctx.cloud.as_ref(), owner, Some(&lb), &ports, &ranges, &backends)
            .await?;
    }
    let public = if own {
        floating::ensure(ctx.cloud.as_ref(), &lb, &id, &settings, requested).await?
    } else {
        None
    };
    let address = public.unwrap_or_else(|| lb.vip_address.clone());
    set_ingress(service, ctx, &settings, &address).await?;
    if changed {
        let note = format!("Ensured load balancer {} ({address})", lb.id);
        ctx.event(service, EventType::Normal, "EnsuredLoadBalancer", note).await;
    }
    for (key, why) in &settings.ignored {
        tracing::warn!(service = %name, annotation = %key, reason = why, "annotation ignored");
    }
    if keep_members {
        // Held back (`hold`): not converged, so the next resync looks again, and what the
        // Service was told stays told.
        return Ok(());
    }
    ctx.notices.forget(&key);
    ctx.converged.record(key, fingerprint, &lb, &address);
    Ok(())
}

/// `spec` with a VIP network: without `subnet-id`, `network-id` or `port-id`, the subnet of the
/// first member (only a create needs it, so a resync does not look it up).
async fn with_vip<L: LoadBalancing>(
    ctx: &ServiceContext<L>,
    mut spec: LoadBalancerSpec,
    backends: &[desired::Backend],
) -> Result<LoadBalancerSpec> {
    if spec.vip_port_id.is_none() && spec.vip_subnet_id.is_none() && spec.vip_network_id.is_none() {
        spec.vip_subnet_id = node_subnet(ctx, backends).await?;
    }
    Ok(spec)
}

/// No VIP network configured: the subnet of the first member's InternalIP, as upstream finds it.
async fn node_subnet<L: LoadBalancing>(
    ctx: &ServiceContext<L>,
    backends: &[desired::Backend],
) -> Result<Option<String>> {
    let Some(first) = backends.first() else {
        return Err(Error::Invalid(
            "no network for the VIP: set [LoadBalancer] subnet-id or network-id in the cloud \
             config, or the annotation loadbalancer.openstack.org/subnet-id (no eligible node to \
             take the subnet from)"
                .to_owned(),
        ));
    };
    let doing = format!("looking up the subnet of node {} ({})", first.name, first.address);
    let subnet = ctx.cloud.subnet_of(&first.address).await.map_err(Error::cloud(doing))?;
    match subnet {
        Some(subnet) => Ok(Some(subnet)),
        None => Err(Error::Invalid(format!(
            "no network for the VIP: no port holds {} (node {}); set [LoadBalancer] subnet-id",
            first.address, first.name
        ))),
    }
}

/// A fully-populated create (or, for providers that need it, the load balancer first and then
/// one listener at a time), waited on until ACTIVE.
async fn create<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    spec: &LoadBalancerSpec,
) -> Result<LoadBalancer> {
    let note = format!("Creating load balancer {}", spec.name);
    ctx.event(service, EventType::Normal, "EnsuringLoadBalancer", note).await;
    let first = if ctx.serial {
        LoadBalancerSpec { listeners: Vec::new(), ..spec.clone() }
    } else {
        spec.clone()
    };
    let doing = format!("creating load balancer {:?}", spec.name);
    let lb = ctx.cloud.create(&first).await.map_err(Error::cloud(doing))?;
    tracing::info!(service = %service.name_any(), load_balancer = %lb.id, "load balancer created");
    let mut lb = wait::active(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?;
    if ctx.serial {
        for listener in &spec.listeners {
            lb = apply(ctx, &lb, &Change::CreateListener(listener.clone())).await?;
        }
    }
    Ok(lb)
}

/// Our load balancer went to ERROR (Octavia gave up on a create or an update): nothing can
/// change it any more, so it goes (its floating IP as on delete, and its VIP port if Octavia
/// left it) and is made again.
async fn recreate<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    lb: LoadBalancer,
    id: &ServiceId<'_>,
    settings: &Settings,
    spec: &LoadBalancerSpec,
) -> Result<LoadBalancer> {
    let note = format!("Load balancer {} is in ERROR: deleting it and creating it again", lb.id);
    ctx.event(service, EventType::Warning, "EnsuringLoadBalancer", note).await;
    floating::release_all(ctx.cloud.as_ref(), &lb, id, settings.keep_floating_ip).await?;
    let doing = format!("deleting load balancer {} (in ERROR)", lb.id);
    ctx.cloud.delete(&lb.id).await.map_err(Error::cloud(doing))?;
    wait::gone(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?;
    vip_port::clean_left(ctx.cloud.as_ref(), &lb, id, settings.keep_floating_ip).await?;
    create(service, ctx, spec).await
}

/// What [`converge`] makes of a load balancer, for which Service.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'a> {
    /// The Service's listeners, pools and members (the load balancer's own fields are not
    /// compared).
    pub(super) spec: &'a LoadBalancerSpec,
    pub(super) id: &'a ServiceId<'a>,
    /// Set for the Service's own load balancer: one another controller made is adopted (its
    /// untagged listeners are the Service's; our names and tags, the load balancer's last).
    pub(super) maker: Option<Maker>,
    /// No node is eligible: no pool that has members is emptied (`hold`).
    pub(super) keep_members: bool,
}

/// The calls the diff plans, one at a time with ACTIVE between; returns whether any was made.
/// The caller holds the load balancer's `_turn` from before its tree is read.
pub(super) async fn converge<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    lb: LoadBalancer,
    target: Target<'_>,
    _turn: &Turn,
) -> Result<(LoadBalancer, bool)> {
    let Target { spec, id, maker, keep_members } = target;
    let mut lb = lb;
    if lb.provisioning_status != ACTIVE {
        let note = format!(
            "Waiting for load balancer {} to leave {} (Octavia is still working on it)",
            lb.id, lb.provisioning_status
        );
        ctx.notice(service, EventType::Normal, "WaitingForLoadBalancer", note).await;
        lb = wait::active(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?;
    }
    let doing = format!("reading load balancer {}", lb.id);
    let tree = ctx.cloud.tree(lb.clone()).await.map_err(Error::cloud(doing))?;
    let tags = ownership::service_tags(id);
    let sharing = diff::services_on(&tree);
    let others = sharing.iter().filter(|s| !tags.iter().any(|t| t == *s)).count();
    if maker.is_none()
        && !spec.listeners.is_empty()
        && others == sharing.len()
        && others >= ctx.max_shared_lb
    {
        let message = format!(
            "load balancer {} already serves {others} Services ([LoadBalancer] max-shared-lb = \
             {}): the Service waits until one leaves it, or until its load-balancer-id \
             annotation names another one",
            lb.id, ctx.max_shared_lb
        );
        return Err(Error::LeftAlone { reason: "SharedLoadBalancerFull", message });
    }
    let mut named_after = Vec::new();
    if !id.uid.is_empty() {
        named_after.push(names::in_tree(id.uid));
    }
    if maker.is_some_and(|m| m != Maker::Us) {
        named_after.push(lb.name.clone());
    }
    let mine = diff::Mine { tags: &tags, named_after: &named_after };
    let mut changes = diff::plan(&spec.listeners, &tree, mine).map_err(|taken| {
        let message = format!(
            "port {}/{} is already used by another Service on load balancer {}",
            taken.port, taken.protocol, lb.id
        );
        Error::LeftAlone { reason: "ListenerPortTaken", message }
    })?;
    if keep_members {
        let held = hold::keep_members(&mut changes, &tree);
        if !held.is_empty() {
            let note = hold::message(&lb.id, &held);
            ctx.notice(service, EventType::Warning, "KeepingMembers", note).await;
        }
    }
    let relabel = maker.and_then(|maker| ownership::relabel(&lb, id, maker));
    if let (Some(maker), Some(change)) = (maker, relabel) {
        adopting_event(service, ctx, &lb, maker, &change).await;
        changes.push(change);
    }
    if changes.is_empty() {
        return Ok((lb, false));
    }
    let labels: Vec<&str> = changes.iter().map(Change::label).collect();
    let note = format!("Updating load balancer {}: {}", lb.id, labels.join(", "));
    ctx.event(service, EventType::Normal, "EnsuringLoadBalancer", note).await;
    for change in &changes {
        lb = apply(ctx, &lb, change).await?;
    }
    Ok((lb, true))
}

/// A Normal Event (and a log line) for the Service's own load balancer taken over from another
/// controller, or renamed from upstream's default cluster name.
async fn adopting_event<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    lb: &LoadBalancer,
    maker: Maker,
    change: &Change,
) {
    let (reason, note) = match (maker, change) {
        (Maker::DefaultCluster, Change::UpdateLoadBalancer { name, .. }) => (
            "RenamedLoadBalancer",
            format!(
                "Renaming load balancer {} from {:?} to {name:?} (the cluster name is now {:?}); \
                 same VIP, floating IP and listeners",
                lb.id, lb.name, ctx.cluster
            ),
        ),
        (Maker::Upstream | Maker::InTree, _) => {
            let by = if maker == Maker::InTree { "the in-tree provider" } else { "upstream's CCM" };
            let note = format!(
                "Adopting load balancer {} ({:?}) made by {by} for this Service: our tags added, \
                 same VIP, floating IP and listeners",
                lb.id, lb.name
            );
            ("AdoptedLoadBalancer", note)
        }
        _ => return,
    };
    tracing::info!(service = %super::run::key(service), load_balancer = %lb.id, reason, "{note}");
    ctx.event(service, EventType::Normal, reason, note).await;
}

/// Makes `change`, waiting for ACTIVE after each call. A new listener is the listener, then
/// its pool, then its members and monitor: Zed refuses a listener posted with its pool (500).
async fn apply<L: LoadBalancing>(
    ctx: &ServiceContext<L>,
    lb: &LoadBalancer,
    change: &Change,
) -> Result<LoadBalancer> {
    match change {
        Change::CreateListener(spec) => {
            let (listener_id, lb) = call(ctx, lb, change).await?;
            let pool = Change::CreatePool { listener_id, pool: spec.default_pool.clone() };
            Box::pin(apply(ctx, &lb, &pool)).await
        }
        Change::CreatePool { pool, .. } => {
            let (pool_id, mut lb) = call(ctx, lb, change).await?;
            if !pool.members.is_empty() {
                let members = pool.members.clone();
                let change = Change::ReplaceMembers { pool_id: pool_id.clone(), members };
                lb = call(ctx, &lb, &change).await?.1;
            }
            if let Some(monitor) = &pool.healthmonitor {
                let change = Change::CreateMonitor { pool_id, monitor: monitor.clone() };
                lb = call(ctx, &lb, &change).await?.1;
            }
            Ok(lb)
        }
        _ => Ok(call(ctx, lb, change).await?.1),
    }
}

/// One call, then the wait for ACTIVE: the created object's ID (empty if none) and the LB.
/// A 409 (the load balancer locked by a writer outside this process, or left `PENDING_*` by one
/// of ours that failed half-way) is waited out and the call made again, at most
/// [`CONFLICT_RETRIES`] times, rather than failing the reconcile into its backoff.
async fn call<L: LoadBalancing>(
    ctx: &ServiceContext<L>,
    lb: &LoadBalancer,
    change: &Change,
) -> Result<(String, LoadBalancer)> {
    let mut conflicts = 0;
    let created = loop {
        match ctx.cloud.change(&lb.id, change).await {
            Ok(created) => break created,
            Err(error) if error.is_conflict() && conflicts < CONFLICT_RETRIES => {
                conflicts += 1;
                tracing::info!(
                    load_balancer = %lb.id,
                    change = change.label(),
                    "Octavia answered 409 (load balancer busy): waiting for ACTIVE to try again"
                );
                wait::active(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?;
            }
            Err(error) => {
                let doing = format!("{} on load balancer {}", change.label(), lb.id);
                return Err(Error::cloud(doing)(error));
            }
        }
    };
    let lb = wait::active(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?;
    Ok((created.unwrap_or_default(), lb))
}

/// How often one call is made again after a 409: a conflict that outlasts this many waits for
/// ACTIVE is not a lock (a listener port taken, say) and fails the reconcile.
const CONFLICT_RETRIES: u32 = 3;

/// `status.loadBalancer.ingress` as upstream writes it: the `hostname` annotation; for a
/// PROXY-protocol Service with `enable-ingress-hostname`, `<address>.<suffix>` (a hostname keeps
/// kube-proxy from short-cutting the load balancer); else the address with `ipMode` `Proxy`
/// (PROXY protocol) or `VIP`.
pub(crate) fn ingress(settings: &Settings, address: &str) -> Value {
    let proxy = settings.proxy_protocol.is_some();
    match (&settings.hostname, &settings.ingress_hostname_suffix) {
        (Some(hostname), _) => json!([{"hostname": hostname}]),
        (None, Some(suffix)) if proxy => json!([{"hostname": format!("{address}.{suffix}")}]),
        (None, _) => json!([{"ip": address, "ipMode": if proxy { "Proxy" } else { "VIP" }}]),
    }
}

async fn set_ingress<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    settings: &Settings,
    address: &str,
) -> Result<()> {
    write_ingress(service, ctx, ingress(settings, address)).await
}

pub(super) async fn write_ingress<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    ingress: Value,
) -> Result<()> {
    let current = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref());
    let current = serde_json::to_value(current).unwrap_or(Value::Null);
    let empty = ingress.as_array().is_some_and(Vec::is_empty);
    if current == ingress || (empty && current.is_null()) {
        return Ok(());
    }
    let patch = json!({"status": {"loadBalancer": {"ingress": ingress}}});
    let name = service.name_any();
    api(service, ctx)
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::Kube { doing: "writing the load balancer status", source })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
