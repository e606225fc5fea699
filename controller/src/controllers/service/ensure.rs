//! A Service that wants a load balancer: its settings and desired tree, its own load balancer
//! found (or made, or made again), converged, its floating IP, the ingress, then its security group.
//! The Octavia calls are `changes`'; what the Service is told of them (Events) is said here.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube_support::events::EventType;

use super::annotations::{self, Settings};
use super::changes::Target;
use super::desired::{self, NodeView, Port, Vip};
use super::names::ServiceId;
use super::one_writer::Turn;
use super::ownership::{self, Found, Maker};
use super::service_api::{clear_load_balancer_id, set_ingress, write_load_balancer_id};
use super::settings::LbSettings;
use super::{Error, Result, ServiceContext, converged, floating, hold, security_group, vip_port};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::{ACTIVE, Change, ERROR, LoadBalancer, LoadBalancerSpec};
use crate::controllers::addresses::AddressType;
use crate::controllers::is_ready;
use crate::controllers::projection::CachedNode;

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
        server_id: node
            .spec
            .as_ref()
            .and_then(|s| s.provider_id.as_deref())
            .and_then(|id| crate::controllers::provider_id::parse(id, None).ok()),
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

/// The Service's settings: its annotations over the config's defaults.
pub(super) fn settings(service: &Service, conf: &LbSettings) -> Result<Settings> {
    annotations::settings(service.annotations(), &conf.defaults, &conf.classes)
        .map_err(Error::Settings)
}

/// Makes the Service's load balancer what it and `conf` (the config of this reconcile) say.
pub(super) async fn ensure<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    conf: &LbSettings,
) -> Result<()> {
    let settings = settings(service, conf)?;
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let id = ServiceId::new(&ctx.cluster, &namespace, &name, &uid);
    let nodes: Vec<NodeView> = ctx.nodes.state().iter().map(|n| node_view(n)).collect();
    let backends = desired::backends(&nodes, &settings);
    let keep_members = desired::none_eligible(&nodes);
    let backends = match &settings.member_subnet_id {
        Some(subnet) if !keep_members => on_member_subnet(service, ctx, subnet, backends).await?,
        _ => backends,
    };
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
    let key = super::key(service);
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
        conf.manage_security_groups,
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
            let lb = recreate(service, ctx, lb, &id, &settings, (&spec, conf.serial)).await?;
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
            let target = conf.target(&spec, &id, Some(maker), keep_members);
            let (lb, changed) = converge(service, ctx, lb, target, &turn).await?;
            (lb, changed, true)
        }
        Found::Shared(lb) => {
            let turn = ctx.turns.take(&lb.id).await;
            let target = conf.target(&spec, &id, None, keep_members);
            let (lb, changed) = converge(service, ctx, lb, target, &turn).await?;
            (lb, changed, false)
        }
        Found::Nothing => {
            let spec = with_vip(ctx, spec.clone(), &backends).await?;
            let lb = create(service, ctx, &spec, conf.serial).await?;
            write_load_balancer_id(service, ctx, &lb.id).await?;
            (lb, true, true)
        }
    };
    let public = if own {
        floating::ensure(ctx.cloud.as_ref(), &lb, &id, &settings, requested).await?
    } else {
        None
    };
    let address = public.unwrap_or_else(|| lb.vip_address.clone());
    // Ready as soon as it is true: the load balancer is ACTIVE with its listeners and its
    // address is known; the node ports' security group follows.
    set_ingress(service, ctx, &settings, &address).await?;
    // With no eligible node, the group stays on the ports it is on (`hold`).
    if conf.manage_security_groups && !keep_members {
        let owner = security_group::Owner { service: &id, load_balancer: &spec.name };
        security_group::ensure(ctx.cloud.as_ref(), owner, Some(&lb), &ports, &ranges, &backends)
            .await?;
    }
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

/// Converges the load balancer (`changes`) and tells the Service: waiting for Octavia, the
/// members kept, an adoption, the calls about to be made. Returns whether any call was made.
/// The caller holds the load balancer's `_turn` from before its tree is read.
async fn converge<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    lb: LoadBalancer,
    target: Target<'_>,
    _turn: &Turn,
) -> Result<(LoadBalancer, bool)> {
    if lb.provisioning_status != ACTIVE {
        let note = format!(
            "Waiting for load balancer {} to leave {} (Octavia is still working on it)",
            lb.id, lb.provisioning_status
        );
        ctx.notice(service, EventType::Normal, "WaitingForLoadBalancer", note).await;
    }
    let changes = ctx.changes();
    let plan = changes.plan(lb, target).await?;
    if !plan.held.is_empty() {
        let note = hold::message(&plan.lb.id, &plan.held);
        ctx.notice(service, EventType::Warning, "KeepingMembers", note).await;
    }
    if let (Some(maker), Some(change)) = (plan.relabels, plan.changes.last()) {
        adopting_event(service, ctx, &plan.lb, maker, change).await;
    }
    if plan.changes.is_empty() {
        return Ok((plan.lb, false));
    }
    ctx.event(service, EventType::Normal, "EnsuringLoadBalancer", plan.summary()).await;
    Ok((changes.make(plan).await?, true))
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
    tracing::info!(load_balancer = %lb.id, reason, "{note}");
    ctx.event(service, EventType::Normal, reason, note).await;
}

/// `spec` with a VIP network: without `subnet-id`, `network-id` or `port-id`, the subnet of the
/// first member (only a create needs it, so a resync does not look it up).
pub(super) async fn with_vip<L: LoadBalancing>(
    ctx: &ServiceContext<L>,
    mut spec: LoadBalancerSpec,
    backends: &[desired::Backend],
) -> Result<LoadBalancerSpec> {
    if spec.vip_port_id.is_none() && spec.vip_subnet_id.is_none() && spec.vip_network_id.is_none() {
        spec.vip_subnet_id = node_subnet(ctx, backends).await?;
    }
    Ok(spec)
}

/// The members on `subnet` (`member_ports`): one Warning per change naming the nodes left out;
/// when that is every eligible node, the Service is left alone (its pools as they are: a wrong
/// `member-subnet-id` must not empty them) and told so once.
async fn on_member_subnet<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    subnet: &str,
    backends: Vec<desired::Backend>,
) -> Result<Vec<desired::Backend>> {
    let eligible = backends.len();
    let resolved = ctx.member_ports.resolve(ctx.cloud.as_ref(), subnet, backends).await?;
    let key = super::key(service);
    if resolved.left_out.is_empty() {
        ctx.left_out.forget(&key);
        return Ok(resolved.backends);
    }
    let names = resolved.left_out.join(", ");
    if resolved.backends.is_empty() {
        let message = format!(
            "none of the {eligible} eligible nodes ({names}) has a port on member subnet \
             {subnet} (looked up by the server of each node's providerID): the load balancer is \
             left as it is; check [LoadBalancer] member-subnet-id or the annotation \
             loadbalancer.openstack.org/member-subnet-id"
        );
        return Err(Error::LeftAlone { reason: "NoMemberOnSubnet", message });
    }
    let note = format!(
        "Nodes {names} have no port on member subnet {subnet} (looked up by the server of each \
         node's providerID): they are not members"
    );
    if ctx.left_out.is_news(&key, "MembersLeftOut", &note) {
        tracing::warn!(service = %key, nodes = %names, %subnet, "nodes left out of the pools");
        ctx.event(service, EventType::Warning, "MembersLeftOut", note).await;
    }
    Ok(resolved.backends)
}

/// No VIP network configured: the subnet of the first member's address on its server's own
/// port (upstream looks the address up alone, which two networks with one range confuse);
/// where no port of the server holds it (a node without a providerID, a port bound to no
/// server), the one subnet whose port holds the address, and an error when there are several.
pub(super) async fn node_subnet<L: LoadBalancing>(
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
    if let Some(server) = &first.server_id {
        let found = ctx.cloud.subnet_of_server(server, &first.address).await;
        if let Some(subnet) = found.map_err(Error::cloud(doing.clone()))? {
            return Ok(Some(subnet));
        }
    }
    let subnets = ctx.cloud.subnets_of(&first.address).await.map_err(Error::cloud(doing))?;
    match subnets.as_slice() {
        [one] => Ok(Some(one.clone())),
        [] => Err(Error::Invalid(format!(
            "no network for the VIP: no port holds {} (node {}); set [LoadBalancer] subnet-id",
            first.address, first.name
        ))),
        several => Err(Error::Invalid(format!(
            "no network for the VIP: {} (node {}) is held by ports on {} subnets ({}) and none \
             of them is its server's; set [LoadBalancer] subnet-id",
            first.address,
            first.name,
            several.len(),
            several.join(", ")
        ))),
    }
}

/// A fully-populated create (or, for providers that need it, the load balancer first and then
/// one listener at a time), waited on until ACTIVE.
pub(super) async fn create<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    spec: &LoadBalancerSpec,
    serial: bool,
) -> Result<LoadBalancer> {
    let note = format!("Creating load balancer {}", spec.name);
    ctx.event(service, EventType::Normal, "EnsuringLoadBalancer", note).await;
    ctx.changes().create(spec, serial).await
}

/// Our load balancer went to ERROR (Octavia gave up on a create or an update): nothing can
/// change it any more, so it goes (its floating IP as on delete, and its VIP port if Octavia
/// left it) and is made again.
pub(super) async fn recreate<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    lb: LoadBalancer,
    id: &ServiceId<'_>,
    settings: &Settings,
    (spec, serial): (&LoadBalancerSpec, bool),
) -> Result<LoadBalancer> {
    let note = format!("Load balancer {} is in ERROR: deleting it and creating it again", lb.id);
    ctx.event(service, EventType::Warning, "EnsuringLoadBalancer", note).await;
    floating::release_all(ctx.cloud.as_ref(), &lb, id, settings.keep_floating_ip).await?;
    ctx.changes().delete(&lb, " (in ERROR)").await?;
    vip_port::clean_left(ctx.cloud.as_ref(), &lb, id, settings.keep_floating_ip).await?;
    create(service, ctx, spec, serial).await
}

#[cfg(test)]
mod tests;
