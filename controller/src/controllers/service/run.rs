//! The service controller's loop: Services watched, every one re-checked when the set of
//! eligible nodes changes, failures retried per Service with backoff and reported as Events.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::Store;
use kube::runtime::{Controller, watcher};
use kube_support::events::{EventType, Recorder};
use tokio::sync::watch;

use super::desired::NodeView;
use super::ensure::node_view;
use super::reconcile::reconcile;
use super::settings::LbSettings;
use super::{Error, ServiceContext};
use crate::cloud::OpenStack;
use crate::cloud::load_balancing::LoadBalancing;
use crate::controllers::name::ControllerName;
use crate::controllers::projection::CachedNode;
use crate::metrics::Metrics;

/// How often the node cache is checked for a change of members (no extra watch: the node
/// controller's cache is read).
const NODE_CHECK: Duration = Duration::from_secs(5);
/// First and longest retry delay after a failure.
const BACKOFF: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(300));

/// Failures in a row per Service (namespace/name), for the backoff.
#[derive(Debug, Default)]
pub(crate) struct Failures(Mutex<HashMap<String, u32>>);

impl Failures {
    fn record(&self, key: String, failed: bool) -> u32 {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if failed {
            let count = map.entry(key).or_default();
            *count = count.saturating_add(1);
            *count
        } else {
            map.remove(&key);
            0
        }
    }
}

/// The delay before the `n`th retry (n ≥ 1): doubling from 5 s, at most 5 min.
pub(crate) fn backoff(n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
    (BACKOFF.0 * factor).min(BACKOFF.1)
}

/// Runs until the Service watch ends.
pub(crate) async fn run<L: LoadBalancing>(ctx: Arc<ServiceContext<L>>, concurrency: u16) {
    let services: Api<Service> = Api::all(ctx.client.clone());
    let nodes = ctx.nodes.clone();
    let settings = ctx.settings.clone();
    let controller = Controller::new(services, watcher::Config::default());
    // For `own_writes` to forget the Services gone (set once: run is called once).
    let _ = ctx.services.set(controller.store());
    controller
        .with_config(controller::Config::default().concurrency(concurrency))
        // Every Service at once when the members may have changed, or the config did: a
        // changed default reaches each one now, not at its next resync.
        .reconcile_all_on(futures::stream::select(members_changed(nodes), changed(settings)))
        .run(reconcile_and_report, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// One reconcile of the controller: skipped on a cached copy older than our own write; else
/// counted, its failures counted per Service for the backoff and told as Events.
pub(super) async fn reconcile_and_report<L: LoadBalancing>(
    service: Arc<Service>,
    ctx: Arc<ServiceContext<L>>,
) -> Result<Action, Error> {
    let key = super::key(&service);
    // The watch brings the newer copy, reconciled then; nothing counts for or against the
    // Service meanwhile (its backoff stays).
    if ctx.own_writes.is_stale(&key, service.resource_version()) {
        tracing::debug!(service = %key, "a cached copy older than our own write: skipped");
        ctx.metrics.reconcile(ControllerName::Service, "stale_copy");
        return Ok(Action::await_change());
    }
    let result = reconcile(service.clone(), ctx.clone()).await;
    if result.is_err() {
        ctx.converged.forget(&key);
    }
    let failures = ctx.failures.record(key, result.is_err());
    match &result {
        Ok(_) => ctx.metrics.reconcile(ControllerName::Service, "ok"),
        Err(Error::LeftAlone { reason, message }) => {
            ctx.metrics.reconcile(ControllerName::Service, "left_alone");
            ctx.notice(&service, EventType::Warning, reason, message.clone()).await;
        }
        Err(error) => {
            ctx.metrics.reconcile(ControllerName::Service, error.kind());
            let message = crate::cloud::session::chain(error);
            tracing::warn!(service = %service.name_any(), failures, %message, "load balancer sync failed");
            ctx.event(&service, EventType::Warning, "SyncLoadBalancerFailed", message).await;
        }
    }
    result
}

fn error_policy<L: LoadBalancing>(
    service: Arc<Service>,
    _: &Error,
    ctx: Arc<ServiceContext<L>>,
) -> Action {
    let key = super::key(&service);
    let count = ctx.failures.0.lock().unwrap_or_else(PoisonError::into_inner).get(&key).copied();
    Action::requeue(backoff(count.unwrap_or(1)))
}

/// Emits when the controller's settings change (a new config generation that changed them).
fn changed(settings: Live) -> impl futures::Stream<Item = ()> + Send {
    futures::stream::unfold(settings, |mut settings| async move {
        settings.changed().await.ok()?;
        tracing::info!("load balancer settings changed: every Service is reconciled");
        Some(((), settings))
    })
}

/// Emits when the nodes that could be members change (readiness, labels, address, deletion),
/// never for heartbeats.
fn members_changed(nodes: Store<CachedNode>) -> impl futures::Stream<Item = ()> + Send {
    let ticks = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(NODE_CHECK));
    ticks
        .scan(None, move |last: &mut Option<u64>, _| {
            let now = fingerprint(&nodes.state().iter().map(|n| node_view(n)).collect::<Vec<_>>());
            let changed = last.is_some_and(|l| l != now);
            *last = Some(now);
            std::future::ready(Some(changed))
        })
        .filter(|changed| std::future::ready(*changed))
        .map(|_| ())
}

fn fingerprint(views: &[NodeView]) -> u64 {
    let mut sorted: Vec<_> = views
        .iter()
        .map(|v| (&v.name, v.ready, v.deleting, &v.labels, &v.internal_ip, &v.server_id))
        .collect();
    sorted.sort();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    sorted.hash(&mut hasher);
    hasher.finish()
}

/// What the service controller takes from the flags; its share of the cloud config comes
/// live (`settings`).
#[derive(Debug)]
pub(crate) struct Plan {
    cluster: String,
    concurrency: u16,
    resync: Duration,
}

/// The controller's settings as they are now: `None` while `[LoadBalancer] enabled = false`.
pub(crate) type Live = watch::Receiver<Option<Arc<LbSettings>>>;

impl Plan {
    /// `None` when `--controllers` leaves the controller out.
    pub(crate) fn new(
        enabled: bool,
        cluster: String,
        concurrency: u32,
        resync: Duration,
    ) -> Option<Plan> {
        enabled.then(|| Plan {
            cluster,
            concurrency: u16::try_from(concurrency).unwrap_or(u16::MAX),
            resync,
        })
    }

    /// The shared context (the node cache is the node controller's) and the concurrency.
    pub(crate) fn context(
        &self,
        client: kube::Client,
        (cloud, metrics): (Arc<OpenStack>, Arc<Metrics>),
        nodes: Store<CachedNode>,
        settings: Live,
    ) -> (Arc<ServiceContext<OpenStack>>, u16) {
        let recorder = Recorder::new(client.clone(), ServiceContext::<OpenStack>::reporter());
        let ctx = ServiceContext {
            client,
            cloud,
            metrics,
            nodes,
            recorder,
            cluster: self.cluster.clone(),
            settings,
            waits: super::wait::Waits::default(),
            failures: Failures::default(),
            resync: self.resync,
            converged: super::converged::Converged::default(),
            notices: super::notice::Notices::default(),
            member_ports: super::member_ports::MemberPorts::default(),
            left_out: super::notice::Notices::default(),
            turns: super::one_writer::Turns::default(),
            own_writes: crate::controllers::own_writes::OwnWrites::default(),
            services: std::sync::OnceLock::new(),
        };
        (Arc::new(ctx), self.concurrency)
    }
}

/// Runs the controller once the catalog is known to have Octavia; without it, one warning and
/// the controller stays off (nodes keep being initialized). Returns only if the watch ends.
pub(crate) async fn start<L: LoadBalancing>(ctx: Arc<ServiceContext<L>>, concurrency: u16) {
    let mut told = false;
    while !octavia_in_catalog(ctx.cloud.as_ref()).await {
        if !told {
            tracing::warn!(
                "no load-balancer (Octavia) endpoint in the catalog: the service controller \
                 waits for one (the catalog is read again every minute); type LoadBalancer \
                 Services stay pending (set [LoadBalancer] enabled = false to silence this)"
            );
            told = true;
        }
        tokio::time::sleep(CATALOG_RECHECK).await;
    }
    if told {
        tracing::info!("a load-balancer (Octavia) endpoint is in the catalog now");
    }
    // Before any Service: members are made of the nodes, and an unsynced cache has none.
    if !crate::controllers::synced::node_cache(&ctx.nodes, ControllerName::Service).await {
        return std::future::pending().await;
    }
    tracing::info!(concurrency, "starting the service controller");
    run(ctx, concurrency).await;
}

/// How often a catalog without Octavia is read again (Octavia added to the cloud, or another
/// region or project in the cloud config, brings it).
const CATALOG_RECHECK: Duration = Duration::from_secs(60);

/// Whether the catalog has Octavia, asked until it answers (backoff from 1 s to 60 s).
async fn octavia_in_catalog<L: LoadBalancing>(cloud: &L) -> bool {
    let mut wait = Duration::from_secs(1);
    loop {
        match cloud.has_load_balancer().await {
            Ok(present) => return present,
            Err(error) => {
                tracing::warn!(%error, retry_in = ?wait, "cannot read the catalog for Octavia");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(60));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_five_seconds_to_five_minutes() {
        let delays: Vec<u64> = [1, 2, 3, 7, 40].into_iter().map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 300, 300]);
    }

    #[test]
    fn a_heartbeat_does_not_change_the_fingerprint_but_readiness_does() {
        let view = NodeView { name: "a".into(), ready: true, ..NodeView::default() };
        let same = fingerprint(std::slice::from_ref(&view));
        assert_eq!(fingerprint(std::slice::from_ref(&view)), same);
        assert_ne!(fingerprint(&[NodeView { ready: false, ..view }]), same);
    }
}
