//! `ccm-assets operator`: one process, one Lease, the three controllers and the status writer
//! as tasks over the [`World`]'s watches, and `/healthz` `/readyz` `/metrics`.
//!
//! Each controller runs a pass when a snapshot it may care about changes, and again after a
//! backoff (1 s doubling to 30 s) while its last pass failed. Passes write only what differs,
//! so a snapshot that changed because of our own write ends in no write.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kube_support::events::{Event, EventType, Recorder, Reporter};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::apply::{self, MANAGER};
use super::controllers::{self, CcmMemory, Context, Outcome, Step};
use super::health::{self, Metrics};
use super::status::{self, Controller, State};
use super::world::{Key, Seen, World};
use crate::assets::images::Images;

/// The operator's namespace (its Lease, its Events).
pub const NAMESPACE: &str = "openshift-cloud-controller-manager-operator";

/// The Lease.
pub const LEASE: &str = "ccm-assets-operator";

/// What `ccm-assets operator` is given.
#[derive(Debug, Clone)]
pub struct Options {
    /// A kubeconfig; the in-cluster service account without one.
    pub kubeconfig: Option<PathBuf>,
    /// Where `/healthz`, `/readyz` and `/metrics` are served.
    pub health_addr: SocketAddr,
    /// The images the CCM runs.
    pub images: Images,
    /// The system CA bundle merged into `ccm-trusted-ca`.
    pub system_bundle: PathBuf,
    /// `status.versions[operator]`.
    pub version: String,
    /// The Lease's timing.
    pub lease: LeaseTiming,
}

/// `--leader-elect-lease-duration`, `--leader-elect-renew-deadline`, `--leader-elect-retry-period`.
#[derive(Debug, Clone, Copy)]
pub struct LeaseTiming {
    /// How long a Lease holds without a renewal.
    pub duration: Duration,
    /// How long the holder tries to renew before it gives up.
    pub renew_deadline: Duration,
    /// How often candidates try, and the holder renews.
    pub retry_period: Duration,
}

/// Runs until SIGTERM or SIGINT (then the Lease is released) or until the Lease is lost.
pub fn run(options: Options) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(options))
}

async fn serve(options: Options) -> anyhow::Result<()> {
    let client = kube_support::client::client_failing_fast(options.kubeconfig.as_deref()).await?;
    let state = watch::Sender::new(State::default());
    let metrics = Arc::new(Metrics::default());
    let listener = tokio::net::TcpListener::bind(options.health_addr)
        .await
        .with_context(|| format!("cannot listen on --health-addr {}", options.health_addr))?;
    tracing::info!(address = %options.health_addr, "serving /healthz, /readyz and /metrics");
    let server = tokio::spawn(health::serve(listener, state.subscribe(), metrics.clone()));
    let identity = identity();
    let settings = kube_support::lease::Settings {
        namespace: NAMESPACE.to_owned(),
        name: LEASE.to_owned(),
        identity: identity.clone(),
        lease_duration: options.lease.duration,
        renew_deadline: options.lease.renew_deadline,
        retry_period: options.lease.retry_period,
    };
    let mut elector = kube_support::lease::Elector::new(client.clone(), settings);
    let mut terminate = signal::terminate()?;
    tokio::select! {
        () = elector.acquire() => {}
        () = terminate.recv() => {
            server.abort();
            return Ok(());
        }
    }
    let world = World::new(client.clone());
    let ctx = Context {
        client: client.clone(),
        world: world.clone(),
        images: options.images,
        system_bundle: options.system_bundle,
    };
    let teller = Teller::new(client.clone(), &identity);
    let tasks = [
        tokio::spawn(cloud_config_loop(
            ctx.clone(),
            state.clone(),
            metrics.clone(),
            teller.clone(),
        )),
        tokio::spawn(trusted_ca_loop(ctx.clone(), state.clone(), metrics.clone(), teller)),
        tokio::spawn(ccm_loop(ctx.clone(), state.clone(), metrics.clone())),
        tokio::spawn(status_loop(ctx, state.subscribe(), options.version, metrics)),
    ];
    let result = tokio::select! {
        lost = elector.hold() => Err(anyhow::Error::new(lost).context("stopping: the Lease was lost")),
        () = terminate.recv() => Ok(()),
    };
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    world.stop();
    server.abort();
    if result.is_ok() {
        match elector.release().await {
            Ok(released) => tracing::info!(released, "lease released"),
            Err(error) => {
                tracing::warn!(error = %ccm_tls_explain::chain(&error), "could not release the lease")
            }
        }
    }
    result
}

/// `POD_NAME` (the Deployment sets it), else the host name, with a random suffix so that two
/// processes on one host are two candidates.
fn identity() -> String {
    let base = std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|n| n.trim().to_owned())
        .unwrap_or_else(|| "ccm-assets-operator".to_owned());
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).expect("the OS has randomness");
    format!("{base}_{}", hex::encode(bytes))
}

/// The backoff after a failed pass.
struct Backoff(Duration);

impl Backoff {
    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(30);

    fn next(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(Backoff::MAX);
        now
    }
}

/// Runs `pass` on every new snapshot, and after a backoff while it fails; reports each result.
async fn repeat<F, Fut>(
    ctx: &Context,
    state: &watch::Sender<State>,
    metrics: &Metrics,
    controller: Controller,
    mut pass: F,
) where
    F: FnMut(super::world::Snapshot) -> Fut,
    Fut: std::future::Future<Output = Outcome>,
{
    let mut snapshots = ctx.world.subscribe();
    let mut backoff = Backoff(Backoff::FIRST);
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        let outcome = pass(snapshot).await;
        metrics.pass(controller, &outcome);
        let retry = match &outcome {
            Ok(Step::Done) => {
                backoff = Backoff(Backoff::FIRST);
                None
            }
            Ok(Step::Waiting(what)) => {
                tracing::debug!(controller = controller.name(), waiting = %what);
                None
            }
            Err(failure) => {
                // Said once per distinct failure: a pass runs on every snapshot.
                let known =
                    state.borrow().records[controller as usize].last_failure() == Some(failure);
                match (known, failure.terminal) {
                    (true, _) => {
                        tracing::debug!(controller = controller.name(), reason = %failure.reason, "{}", failure.message)
                    }
                    (false, true) => {
                        tracing::error!(controller = controller.name(), reason = %failure.reason, "{}", failure.message)
                    }
                    (false, false) => {
                        tracing::warn!(controller = controller.name(), reason = %failure.reason, "{}", failure.message)
                    }
                }
                Some(backoff.next())
            }
        };
        if !matches!(outcome, Ok(Step::Waiting(_))) {
            let result = outcome.map(|_| ());
            state.send_if_modified(|s| {
                let record = &mut s.records[controller as usize];
                let before = format!("{record:?}");
                record.attempt(result, Instant::now());
                format!("{record:?}") != before
            });
        }
        match retry {
            // A terminal failure waits for an edit; a transient one is tried again.
            Some(delay)
                if !state.borrow().records[controller as usize]
                    .last_failure()
                    .is_some_and(|f| f.terminal) =>
            {
                tokio::select! {
                    changed = snapshots.changed() => if changed.is_err() { return },
                    () = tokio::time::sleep(delay) => {}
                }
            }
            _ => {
                if snapshots.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn cloud_config_loop(
    ctx: Context,
    state: watch::Sender<State>,
    metrics: Arc<Metrics>,
    teller: Teller,
) {
    let inner = ctx.clone();
    repeat(&ctx, &state, &metrics, Controller::CloudConfig, |snapshot| {
        let (ctx, teller) = (inner.clone(), teller.clone());
        async move {
            let outcome = controllers::cloud_config(&ctx, &snapshot).await;
            if let Err(failure) = &outcome
                && failure.terminal
            {
                teller.warn_once("CloudConfigInvalid", &failure.message).await;
            }
            outcome
        }
    })
    .await;
}

async fn trusted_ca_loop(
    ctx: Context,
    state: watch::Sender<State>,
    metrics: Arc<Metrics>,
    teller: Teller,
) {
    let inner = ctx.clone();
    repeat(&ctx, &state, &metrics, Controller::TrustedCa, |snapshot| {
        let (ctx, teller) = (inner.clone(), teller.clone());
        async move {
            let (outcome, broken) = controllers::trusted_ca(&ctx, &snapshot).await;
            for block in broken {
                teller.warn_once("TrustedCABlockInvalid", &block.to_string()).await;
            }
            outcome
        }
    })
    .await;
}

async fn ccm_loop(ctx: Context, state: watch::Sender<State>, metrics: Arc<Metrics>) {
    let memory = Arc::new(tokio::sync::Mutex::new(CcmMemory::default()));
    let inner = ctx.clone();
    let reporter = state.clone();
    repeat(&ctx, &state, &metrics, Controller::Ccm, |snapshot| {
        let (ctx, memory, reporter) = (inner.clone(), memory.clone(), reporter.clone());
        async move {
            let mut memory = memory.lock().await;
            let (outcome, rolling) = controllers::ccm(&ctx, &snapshot, &mut memory).await;
            let related: Vec<Key> = memory.related.iter().cloned().collect();
            let removed = memory.removed;
            reporter.send_if_modified(|s| {
                let record = &mut s.records[Controller::Ccm as usize];
                let changed =
                    record.rolling != rolling || s.related != related || s.removed != removed;
                record.rolling = rolling;
                s.related = related;
                s.removed = removed;
                changed
            });
            outcome
        }
    })
    .await;
}

/// Writes the ClusterOperator's status when what it should say changes (and re-judges it every
/// few seconds while a transient failure may cross its grace period).
async fn status_loop(
    ctx: Context,
    mut state: watch::Receiver<State>,
    version: String,
    metrics: Arc<Metrics>,
) {
    let key = Key::openshift_config("ClusterOperator", status::NAME);
    ctx.world.watch([key.clone()]);
    let mut snapshots = ctx.world.subscribe();
    let mut backoff = Backoff(Backoff::FIRST);
    loop {
        let current = state.borrow_and_update().clone();
        let snapshot = snapshots.borrow_and_update().clone();
        let mut retry = None;
        if let Seen::Known(live) = snapshot.get(&key) {
            let related = related(&current.related);
            let inputs = status::Inputs {
                records: [&current.records[0], &current.records[1], &current.records[2]],
                version: &version,
                related: &related,
                removed: current.removed,
            };
            let stamp = jiff_free_now();
            if let Some(status) =
                status::desired(&inputs, live.map(|l| &l["status"]), Instant::now(), &stamp)
            {
                match write_status(&ctx.client, live.is_none(), status).await {
                    Ok(written) => {
                        ctx.world.saw(written);
                        metrics.status_write();
                        backoff = Backoff(Backoff::FIRST);
                    }
                    Err(error) => {
                        tracing::warn!(error = %ccm_tls_explain::chain(&error), "cannot write the ClusterOperator status");
                        retry = Some(backoff.next());
                    }
                }
            }
        }
        let failing = current.records.iter().any(|r| r.last_failure().is_some());
        let tick = retry.or(failing.then_some(Duration::from_secs(5)));
        tokio::select! {
            changed = state.changed() => if changed.is_err() { return },
            changed = snapshots.changed() => if changed.is_err() { return },
            () = sleep_or_forever(tick) => {}
        }
    }
}

async fn sleep_or_forever(delay: Option<Duration>) {
    match delay {
        Some(delay) => tokio::time::sleep(delay).await,
        None => std::future::pending().await,
    }
}

/// The time now, RFC 3339 to the second (condition timestamps).
fn jiff_free_now() -> String {
    let now =
        time::OffsetDateTime::now_utc().replace_nanosecond(0).expect("0 is a valid nanosecond");
    now.format(&time::format_description::well_known::Rfc3339)
        .expect("RFC 3339 formats any UTC time")
}

/// `relatedObjects`: both namespaces, the ClusterOperator, and every object the CCM controller
/// applies (so that must-gather collects all of it).
fn related(applied: &[Key]) -> Vec<(String, String, String, String)> {
    let mut out = vec![
        (String::new(), "namespaces".to_owned(), String::new(), NAMESPACE.to_owned()),
        (
            String::new(),
            "namespaces".to_owned(),
            String::new(),
            crate::assets::ccm::NAMESPACE.to_owned(),
        ),
        (
            "config.openshift.io".to_owned(),
            "clusteroperators".to_owned(),
            String::new(),
            status::NAME.to_owned(),
        ),
    ];
    for key in applied.iter().filter(|k| k.kind != "Namespace") {
        out.push((
            key.group().to_owned(),
            key.plural().to_owned(),
            key.namespace.clone(),
            key.name.clone(),
        ));
    }
    for (name, kind) in [("cloud-conf", "configmaps"), (super::trusted_ca::NAME, "configmaps")] {
        out.push((
            String::new(),
            kind.to_owned(),
            crate::assets::ccm::NAMESPACE.to_owned(),
            name.to_owned(),
        ));
    }
    out
}

async fn write_status(
    client: &kube::Client,
    create: bool,
    status: Value,
) -> Result<Value, kube::Error> {
    let key = Key::openshift_config("ClusterOperator", status::NAME);
    let api = key.api(client).expect("a known kind");
    let object = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
        "metadata": {"name": status::NAME}, "spec": {}});
    if create {
        apply::apply(client, &object).await?;
    }
    let mut with_status = object;
    with_status["status"] = status;
    let params = kube::api::PatchParams::apply(MANAGER).force();
    let written: kube::api::DynamicObject =
        api.patch_status(status::NAME, &params, &kube::api::Patch::Apply(&with_status)).await?;
    Ok(serde_json::to_value(written).expect("an object from the API is JSON"))
}

/// Warning Events about an edit, once per distinct message, on the operator's Pod
/// (`POD_NAMESPACE`/`POD_NAME`), else on its Lease.
#[derive(Clone)]
struct Teller {
    recorder: Recorder,
    object: k8s_openapi::api::core::v1::ObjectReference,
    told: Arc<tokio::sync::Mutex<std::collections::BTreeSet<String>>>,
}

impl Teller {
    fn new(client: kube::Client, identity: &str) -> Teller {
        let reporter =
            Reporter { controller: MANAGER.to_owned(), instance: Some(identity.to_owned()) };
        let pod = std::env::var("POD_NAMESPACE").ok().zip(std::env::var("POD_NAME").ok());
        let object = match pod {
            Some((namespace, name)) => k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Pod".to_owned()),
                namespace: Some(namespace),
                name: Some(name),
                ..Default::default()
            },
            None => k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some("coordination.k8s.io/v1".to_owned()),
                kind: Some("Lease".to_owned()),
                namespace: Some(NAMESPACE.to_owned()),
                name: Some(LEASE.to_owned()),
                ..Default::default()
            },
        };
        Teller { recorder: Recorder::new(client, reporter), object, told: Arc::default() }
    }

    async fn warn_once(&self, reason: &str, message: &str) {
        if !self.told.lock().await.insert(format!("{reason}\0{message}")) {
            return;
        }
        tracing::warn!(reason, "{message}");
        let event = Event {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            note: Some(message.chars().take(1024).collect()),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &self.object).await {
            tracing::warn!(error = %ccm_tls_explain::chain(&error), "could not publish an Event");
        }
    }
}

impl std::fmt::Debug for Teller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teller").field("object", &self.object).finish_non_exhaustive()
    }
}

mod signal {
    //! SIGTERM or SIGINT.

    use tokio::signal::unix::{SignalKind, signal};

    /// Either signal.
    pub(super) struct Terminate(tokio::signal::unix::Signal, tokio::signal::unix::Signal);

    pub(super) fn terminate() -> std::io::Result<Terminate> {
        Ok(Terminate(signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?))
    }

    impl Terminate {
        pub(super) async fn recv(&mut self) {
            tokio::select! {
                _ = self.0.recv() => tracing::info!("SIGTERM: stopping"),
                _ = self.1.recv() => tracing::info!("SIGINT: stopping"),
            }
        }
    }
}
