//! The calls that make a load balancer what the Service wants: planned by `diff`, made one at
//! a time with ACTIVE between, retried on a conflict.

use k8s_openapi::api::core::v1::Service;
use kube::runtime::events::EventType;

use super::desired::ServiceId;
use super::one_writer::Turn;
use super::ownership::{self, Maker};
use super::{Error, Result, ServiceContext, diff, hold, names, wait};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::{ACTIVE, Change, LoadBalancer, LoadBalancerSpec};

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
pub(super) async fn adopting_event<L: LoadBalancing>(
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
    tracing::info!(service = %super::key(service), load_balancer = %lb.id, reason, "{note}");
    ctx.event(service, EventType::Normal, reason, note).await;
}

/// Makes `change`, waiting for ACTIVE after each call. A new listener is the listener, then
/// its pool, then its members and monitor: Zed refuses a listener posted with its pool (500).
pub(super) async fn apply<L: LoadBalancing>(
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
pub(super) async fn call<L: LoadBalancing>(
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
pub(super) const CONFLICT_RETRIES: u32 = 3;
