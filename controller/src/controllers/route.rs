//! `route`: each node's pod CIDRs routed through the `[Route] router-id` router (next hop: the
//! node's InternalIP of the same family) and allowed on the node's port, as upstream's route
//! controller does with the OpenStack provider, with the node condition `NetworkUnavailable`.
//!
//! ```text
//!  every --route-reconciliation-period:
//!  nodes (cache) ─ plan ─┐
//!  router (one GET) ─────┴─ diff ─ pairs of stale routes off their ports ─ one remove_extraroutes
//!                                 ─ one add_extraroutes (node by node if Neutron refuses the batch)
//!                                 ─ pairs of new or unconfirmed nodes (one port list per 100)
//!                                 ─ NetworkUnavailable patched where it changes (+ Event)
//! ```
//!
//! A resync with nothing to change is the router GET alone: nodes whose routes and pairs were
//! confirmed are not read again until every [`VERIFY_EVERY`]th resync, which lists their
//! ports once more (a pair removed by hand comes back within that many periods). See: issue 27.

mod condition;
mod pairs;
pub mod plan;
mod write;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use kube::runtime::reflector::Store;
use kube_support::events::{EventType, Recorder, Reporter};

use super::ControllerName;
use crate::cloud::routes::{Routes, Support};
use crate::cloud::{self, OpenStack, session::chain};
use crate::controllers::projection::CachedNode;
use crate::metrics::Metrics;
use pairs::Checked;
use plan::NodeRoutes;

/// Resyncs between two checks of every confirmed node's pairs.
pub const VERIFY_EVERY: u32 = 10;
/// Longest wait between two attempts after failures (router-wide or one node's).
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// `NetworkUnavailable` reasons (`RouteCreated` and `NoRouteCreated` are upstream's).
pub(crate) mod reason {
    /// `False`: every route of the node exists, and its pairs.
    pub(crate) const CREATED: &str = "RouteCreated";
    /// `True`: Neutron did not answer while the route was made (retried).
    pub(crate) const NO_ROUTE: &str = "NoRouteCreated";
    /// `True`: no InternalIP of the pod CIDR's family.
    pub(crate) const NO_INTERNAL_IP: &str = "NoInternalIP";
    /// `True`: the pod CIDR lies outside `--cluster-cidr`.
    pub(crate) const OUTSIDE_CLUSTER: &str = "PodCIDROutsideClusterCIDR";
    /// `True`: Neutron refused the node's route (quota, next hop not on the router's subnets).
    pub(crate) const REFUSED: &str = "RouteRefused";
    /// `True`: no port (or no single port) holds the node's InternalIP.
    pub(crate) const NO_PORT: &str = "NoPort";
    /// `True`: Neutron refused the allowed address pair on the node's port.
    pub(crate) const PAIR_REFUSED: &str = "AddressPairRefused";
}

/// A resync that could not serve any node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The router cannot be read or written (not found, forbidden, Neutron down).
    #[error("the router of [Route] router-id")]
    Router {
        /// Why.
        #[source]
        source: cloud::Error,
    },
    /// A guarded write of the router kept finding it changed.
    #[error("{what} kept changing under guarded writes (If-Match)")]
    Busy {
        /// The router.
        what: String,
    },
}

impl Error {
    /// A fixed label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Router { source } => source.kind().as_str(),
            Error::Busy { .. } => "busy",
        }
    }
}

/// Why one node's routes or pairs could not be made this time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Failure {
    fn transient(message: String) -> Failure {
        Failure { reason: reason::NO_ROUTE, message }
    }

    fn refused(message: String, hops: &[plan::Hop]) -> Failure {
        let routes: Vec<String> =
            hops.iter().map(|h| format!("{} via {}", h.destination, h.nexthop)).collect();
        Failure { reason: reason::REFUSED, message: format!("{}: {message}", routes.join(", ")) }
    }
}

/// The route controller's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `[Route] router-id`.
    pub router_id: String,
    /// `--cluster-cidr`: only routes inside them are ever removed.
    pub cluster: Vec<IpNet>,
    /// `--route-reconciliation-period`.
    pub period: Duration,
}

impl Settings {
    /// `None` (logged) unless `--controllers` has `route`, `--configure-cloud-routes` is true
    /// and cloud.conf names a router.
    pub(crate) fn from_flags(
        enabled: bool,
        configure_cloud_routes: bool,
        router_id: Option<String>,
        cluster: Vec<IpNet>,
        period: Duration,
    ) -> Option<Settings> {
        if !enabled {
            return None;
        }
        if !configure_cloud_routes {
            tracing::info!("--configure-cloud-routes=false: the route controller stays off");
            return None;
        }
        let Some(router_id) = router_id else {
            tracing::warn!(
                "--configure-cloud-routes is true but cloud.conf has no [Route] router-id: the \
                 route controller stays off (set router-id, or --configure-cloud-routes=false)"
            );
            return None;
        };
        if cluster.is_empty() {
            tracing::warn!(
                "no --cluster-cidr: the route controller adds routes and never removes one"
            );
        }
        Some(Settings { router_id, cluster, period })
    }
}

/// What every resync shares.
pub struct RouteContext<R> {
    pub(crate) client: kube::Client,
    pub(crate) cloud: Arc<R>,
    pub(crate) metrics: Arc<Metrics>,
    /// The node controller's cache.
    pub(crate) nodes: Store<CachedNode>,
    pub(crate) recorder: Recorder,
    pub(crate) settings: Settings,
}

impl<R> std::fmt::Debug for RouteContext<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteContext").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl<R: Routes> RouteContext<R> {
    /// A context whose Events come from upstream's `route_controller`.
    pub fn new(
        client: kube::Client,
        cloud: Arc<R>,
        metrics: Arc<Metrics>,
        nodes: Store<CachedNode>,
        settings: Settings,
    ) -> Self {
        let reporter = Reporter { controller: "route_controller".into(), instance: None };
        let recorder = Recorder::new(client.clone(), reporter);
        RouteContext { client, cloud, metrics, nodes, recorder, settings }
    }
}

/// What one resync keeps for the next.
#[derive(Debug, Default)]
pub struct Memory {
    /// Fingerprints of the nodes whose routes and pairs were confirmed (pruned every resync).
    confirmed: HashSet<u64>,
    /// Resyncs since the last check of every node's pairs.
    since_verify: u32,
    /// Nodes backing off after failures: how many in a row, and when to try again.
    backoff: HashMap<String, (u32, tokio::time::Instant)>,
}

impl Memory {
    /// One more failure of the node: it waits `period` doubling before its next try.
    fn failed(&mut self, name: &str, period: Duration, now: tokio::time::Instant) {
        let count = self.backoff.get(name).map_or(0, |(count, _)| *count) + 1;
        self.backoff.insert(name.to_owned(), (count, now + backoff(period, count)));
    }
}

/// What one resync did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Nodes with pod CIDRs.
    pub nodes: usize,
    /// Routes added.
    pub added: usize,
    /// Routes removed.
    pub removed: usize,
    /// Nodes whose pairs were checked (their ports listed).
    pub verified: usize,
    /// Nodes whose routes or pairs failed this time.
    pub failed: usize,
    /// `NetworkUnavailable` conditions written.
    pub conditions: usize,
}

/// The delay before the `n`th retry (n ≥ 1): `period` doubling, at most [`MAX_BACKOFF`].
fn backoff(period: Duration, n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
    period.saturating_mul(factor).min(MAX_BACKOFF).max(period)
}

/// One resync over `nodes`: the router read once, its stale routes removed and the missing
/// ones added in one call each, pairs where they are new or due a check, conditions written
/// where they change.
pub async fn resync<R: Routes>(
    ctx: &RouteContext<R>,
    support: Support,
    nodes: &[Arc<CachedNode>],
    memory: &mut Memory,
) -> Result<Report, Error> {
    let settings = &ctx.settings;
    let plan = plan::nodes(nodes, &settings.cluster);
    let now = tokio::time::Instant::now();
    memory.backoff.retain(|name, _| plan.iter().any(|n| &n.name == name));
    let waiting: HashSet<usize> = plan
        .iter()
        .enumerate()
        .filter(|(_, n)| memory.backoff.get(&n.name).is_some_and(|(_, until)| *until > now))
        .map(|(i, _)| i)
        .collect();
    let mut router =
        ctx.cloud.router(&settings.router_id).await.map_err(|source| Error::Router { source })?;
    let diff = plan::diff(&plan, &router.routes, &settings.cluster, &waiting);
    let mut report = Report { nodes: plan.len(), ..Report::default() };

    let removable = pairs::clean(ctx.cloud.as_ref(), support, &plan, &diff.stale).await;
    match write::remove(ctx.cloud.as_ref(), support, &mut router, &removable).await {
        Ok(()) => report.removed = removable.len(),
        Err(error) if error.class() == write::Class::Router => return Err(error.into_router()),
        Err(error) => {
            tracing::warn!(error = %error.message(), routes = removable.len(), "cannot remove stale routes; next resync")
        }
    }
    if !removable.is_empty() {
        tracing::info!(routes = ?removable, "stale routes removed");
    }
    let mut failed: BTreeMap<usize, Failure> =
        write::add(ctx.cloud.as_ref(), support, &mut router, &diff.missing).await?;
    let added: HashSet<usize> = diff.missing.iter().map(|(i, _)| *i).collect();
    report.added = diff.missing.iter().filter(|(i, _)| !failed.contains_key(i)).count();

    // Pairs: new routes, nodes not confirmed at their fingerprint, or everyone when due.
    let due = memory.since_verify == 0;
    let verify: Vec<usize> = (0..plan.len())
        .filter(|i| !failed.contains_key(i) && !waiting.contains(i))
        .filter(|i| due || added.contains(i) || !memory.confirmed.contains(&plan[*i].fingerprint))
        .filter(|i| !plan[*i].hops.is_empty())
        .collect();
    report.verified = verify.len();
    let checked = pairs::ensure(ctx.cloud.as_ref(), support, &plan, &verify).await;
    let mut unknown: HashSet<usize> = HashSet::new();
    for (i, outcome) in checked {
        match outcome {
            Checked::Done => {}
            Checked::Failed(failure) => {
                failed.insert(i, failure);
            }
            Checked::Unknown(message) => {
                tracing::warn!(node = %plan[i].name, %message, "pairs not checked; next resync");
                unknown.insert(i);
            }
        }
    }
    report.failed = failed.len() + unknown.len();

    // What each node's condition says now, and what is remembered for the next resync.
    let mut confirmed = HashSet::new();
    for (i, node) in plan.iter().enumerate() {
        let verdict = if let Some(problem) = &node.problem {
            Some(Failure { reason: problem.reason, message: problem.message.clone() })
        } else if let Some(failure) = failed.get(&i) {
            Some(failure.clone())
        } else if waiting.contains(&i) || unknown.contains(&i) {
            continue;
        } else {
            None
        };
        match &verdict {
            None => {
                confirmed.insert(node.fingerprint);
                memory.backoff.remove(&node.name);
            }
            Some(_) if node.problem.is_none() => memory.failed(&node.name, settings.period, now),
            Some(_) => {}
        }
        if condition::set(ctx, node, verdict.as_ref()).await {
            report.conditions += 1;
        }
    }
    for i in &unknown {
        memory.failed(&plan[*i].name, settings.period, now);
    }
    memory.confirmed = confirmed;
    memory.since_verify = (memory.since_verify + 1) % VERIFY_EVERY;
    Ok(report)
}

/// Waits for the node cache, reads the extensions once, then resyncs every period (backing off
/// after router-wide failures) until the process ends.
pub(crate) async fn run<R: Routes>(ctx: Arc<RouteContext<R>>) {
    // An empty cache would make every route in the cluster CIDRs look stale.
    if !super::synced::node_cache(&ctx.nodes, ControllerName::Route).await {
        return std::future::pending().await;
    }
    let support = supported(&ctx).await;
    if !support.extraroute {
        tracing::error!(
            "Neutron has no \"extraroute\" extension: routers take no extra routes, the route \
             controller stays off"
        );
        return std::future::pending().await;
    }
    if !support.atomic {
        tracing::warn!(
            "Neutron has no \"extraroute-atomic\" extension: routes are written as the router's \
             whole list, guarded by its revision"
        );
    }
    if !support.if_match {
        tracing::warn!(
            "Neutron has no \"revision-if-match\" extension: another writer of the router's routes \
             or of a node port's pairs may lose a change"
        );
    }
    let settings = &ctx.settings;
    tracing::info!(router = %settings.router_id, cluster_cidrs = ?settings.cluster,
        period = %crate::duration::format(settings.period), "starting the route controller");
    let mut memory = Memory::default();
    let (mut failures, mut told) = (0u32, None::<String>);
    loop {
        let nodes = ctx.nodes.state();
        match resync(&ctx, support, &nodes, &mut memory).await {
            Ok(report) => {
                ctx.metrics.reconcile(ControllerName::Route, "ok");
                tracing::debug!(?report, "routes resynced");
                (failures, told) = (0, None);
            }
            Err(error) => {
                ctx.metrics.reconcile(ControllerName::Route, error.kind());
                failures += 1;
                let message = chain(&error);
                let delay = backoff(settings.period, failures);
                match &error {
                    Error::Router { source } if write::class(source) == write::Class::Router => {
                        tracing::error!(router = %settings.router_id, error = %message, retry_in = ?delay, "the route controller cannot use the router");
                    }
                    _ => {
                        tracing::warn!(error = %message, retry_in = ?delay, "route resync failed")
                    }
                }
                // Told once per new reason, on the nodes still waiting for their routes.
                if told.as_deref() != Some(message.as_str()) {
                    condition::tell_waiting(&ctx, &nodes, &message).await;
                    told = Some(message);
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        }
        tokio::time::sleep(settings.period).await;
    }
}

/// `GET /extensions`, retried with backoff until Neutron answers.
async fn supported<R: Routes>(ctx: &RouteContext<R>) -> Support {
    let mut wait = Duration::from_secs(1);
    loop {
        match ctx.cloud.route_support().await {
            Ok(support) => return support,
            Err(error) => {
                tracing::warn!(error = %chain(&error), retry_in = ?wait, "cannot read Neutron's extensions");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(60));
            }
        }
    }
}

/// The context on the real cloud, for `spawn_controllers`.
pub(crate) fn context(
    settings: Settings,
    client: kube::Client,
    cloud: Arc<OpenStack>,
    metrics: Arc<Metrics>,
    nodes: Store<CachedNode>,
) -> Arc<RouteContext<OpenStack>> {
    Arc::new(RouteContext::new(client, cloud, metrics, nodes, settings))
}

/// Records an Event on a node; failures are logged, never fatal.
async fn event<R>(
    ctx: &RouteContext<R>,
    node: &NodeRoutes,
    type_: EventType,
    reason: &str,
    note: String,
) {
    use kube::Resource;
    let object = node.node.object_ref(&());
    if let Err(error) = super::publish(&ctx.recorder, &object, type_, reason, note).await {
        tracing::warn!(node = %node.name, %error, "cannot record event");
    }
}

#[cfg(test)]
mod tests;
