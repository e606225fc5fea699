//! The wiring: flags → config → clients → one JoinSet of long-running tasks; any task ending is fatal.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cloud::OpenStack;
use crate::config::live::{self, Current};
use crate::config::{self, Severity};
use crate::controllers::projection::CachedNode;
use crate::controllers::service::settings::LbSettings;
use crate::controllers::switch::switch;
use crate::controllers::{
    Context, ControllerName, lifecycle, node, projection, resync, route, service,
};
use crate::flags::{Controllers, Flags};
use crate::metrics::Metrics;
use crate::{kube as k8s, leader, reload, server};

/// What `main` read from the environment (the only place env vars are read).
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// `OS_CLIENT_CONFIG_FILE`.
    pub os_client_config_file: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `OS_CCM_REGIONAL=true`.
    pub regional: bool,
    /// Lease identity (host name plus a unique suffix).
    pub identity: String,
    /// The CCM's own Pod (`POD_NAMESPACE`, `POD_NAME` from the downward API): where a refused
    /// cloud config edit is told.
    pub pod: Option<(String, String)>,
}

type Task = (&'static str, anyhow::Result<()>);

/// Runs until a signal (Ok) or until any long-running task ends (Err).
pub async fn run(flags: Flags, env: Env) -> anyhow::Result<()> {
    // Listening before anything else: a SIGTERM that came before its handler would end the
    // process by the default action, with the lease perhaps taken and never released.
    let shutdown = Shutdown::listen().context("cannot listen for SIGTERM and SIGINT")?;
    check_flags(&flags);
    let controllers = flags.controllers();
    // Every field named: a new flag that `run` does not use fails the build.
    let Flags {
        command: _,
        cloud_provider: _,
        cloud_config,
        check_config: _,
        kubeconfig,
        controllers: _,
        leader_elect,
        leader_elect_lease_duration,
        leader_elect_renew_deadline,
        leader_elect_retry_period,
        leader_elect_resource_namespace,
        leader_elect_resource_name,
        leader_elect_resource_lock: _,
        enable_leader_migration,
        leader_migration_config,
        bind_address,
        secure_port,
        authorization_always_allow_paths,
        authentication_kubeconfig,
        authorization_kubeconfig,
        tls_cert_file,
        tls_private_key_file,
        cluster_name,
        use_service_account_credentials: _,
        concurrent_node_syncs,
        concurrent_service_syncs,
        openstack_requests_in_flight,
        openstack_requests_per_second,
        load_balancer_resync_period,
        node_status_update_frequency,
        node_monitor_period,
        configure_cloud_routes,
        cluster_cidr,
        route_reconciliation_period,
        kube_api_qps,
        kube_api_burst,
        ignored: _,
        v: _,
    } = flags;

    let migration = leader_migration(
        enable_leader_migration,
        leader_migration_config.as_deref(),
        leader_elect,
    )?;
    let search = config::clouds::search_paths(env.os_client_config_file, env.home);
    let loaded = load_config(cloud_config, search)?;
    tracing::info!(cluster = %cluster_name, "configuration loaded");
    let timeout = loaded.settings.config.metadata.request_timeout;
    let (settings, current) = watch::channel(Arc::new(loaded.settings));

    let metrics = Metrics::shared();
    let refused = k8s::Refused::shared();
    let limit = crate::cloud::limit::Settings {
        in_flight: usize::try_from(openstack_requests_in_flight).unwrap_or(usize::MAX),
        per_second: f64::from(openstack_requests_per_second),
    };
    let cloud = OpenStack::with_limit(metrics.clone(), timeout, limit);
    let mut tasks: JoinSet<Task> = JoinSet::new();
    if secure_port != 0 {
        let files = tls_cert_file.as_deref().zip(tls_private_key_file.as_deref());
        let health = (&cloud, &metrics, &refused);
        let delegation = server::auth::Delegation::connect(
            server::auth::OpenPaths::new(authorization_always_allow_paths),
            authentication_kubeconfig.as_deref(),
            authorization_kubeconfig.as_deref(),
            kubeconfig.as_deref(),
        )
        .await?;
        let serving = (bind_address, secure_port);
        spawn_server(&mut tasks, serving, files, health, delegation).await?;
    }
    let limit = (kube_api_qps, kube_api_burst);
    let client = clients(&mut tasks, &cloud, kubeconfig.as_deref(), limit, refused).await?;
    let service = service::run::Plan::new(
        controllers.service,
        cluster_name,
        concurrent_service_syncs,
        load_balancer_resync_period,
    );
    let cluster = cluster_cidr.map(|c| c.0).unwrap_or_default();
    let route = live::slice(&current, move |s| {
        let router_id = s.config.route.router_id.clone();
        let period = route_reconciliation_period;
        let enabled = controllers.route;
        route::Settings::from_flags(
            enabled,
            configure_cloud_routes,
            router_id,
            cluster.clone(),
            period,
        )
    });
    let lease = leader_elect
        .then(|| (leader_elect_resource_namespace.clone(), leader_elect_resource_name.clone()));
    let teller = reload::Teller::new(client.clone(), metrics.clone(), env.pod, lease);
    spawn_config(&mut tasks, (loaded.path, loaded.search), settings, teller);
    let feed = reload::feed_cloud(client.clone(), current.clone(), cloud.clone());
    tasks.spawn(async move {
        feed.await;
        ("credentials", Ok(()))
    });
    let settings = leader_elect.then_some(leader::Settings {
        namespace: leader_elect_resource_namespace,
        name: leader_elect_resource_name,
        identity: env.identity,
        lease_duration: leader_elect_lease_duration,
        renew_deadline: leader_elect_renew_deadline,
        retry_period: leader_elect_retry_period,
    });
    let leadership = spawn_leader(&mut tasks, &client, settings, migration.as_ref(), &metrics);
    let plan = Plan {
        controllers,
        concurrency: u16::try_from(concurrent_node_syncs).unwrap_or(u16::MAX),
        refresh_period: node_status_update_frequency,
        monitor_period: node_monitor_period,
        regional: env.regional,
        current,
        service,
        route,
        migration,
    };
    let (gates, release) = (leadership.gates, leadership.release);
    spawn_controllers(&mut tasks, Clients { kube: client, cloud, metrics }, plan, gates);
    supervise(tasks, release, shutdown).await
}

/// `--enable-leader-migration` and `--leader-migration-config`, checked: the file alone is an
/// error (it would silently do nothing); without leader election there is nothing to migrate.
fn leader_migration(
    enabled: bool,
    file: Option<&Path>,
    leader_elect: bool,
) -> anyhow::Result<Option<leader::migration::Migration>> {
    if !enabled {
        if let Some(file) = file {
            bail!(
                "--leader-migration-config {} is given without --enable-leader-migration: add \
                 --enable-leader-migration, or drop the file",
                file.display()
            );
        }
        return Ok(None);
    }
    if !leader_elect {
        tracing::warn!(
            "--enable-leader-migration needs --leader-elect: without leader election nothing is \
             migrated and every controller runs"
        );
        return Ok(None);
    }
    let migration = leader::migration::Migration::load(file)?;
    tracing::info!(lease = %migration.leader_name,
        controllers = ?migration.placements.keys().collect::<Vec<_>>(), "leader migration on");
    Ok(Some(migration))
}

/// Warns about what the command line asked for and this binary does not do.
fn check_flags(flags: &Flags) {
    for name in flags.ignored.given() {
        tracing::warn!(flag = name, "flag is accepted for compatibility and ignored");
    }
    if flags.use_service_account_credentials {
        tracing::warn!(
            "--use-service-account-credentials is accepted but ignored: one client identity is used"
        );
    }
}

/// A loaded cloud.conf: where it came from, and its settings (generation 1).
struct Loaded {
    path: PathBuf,
    search: Vec<PathBuf>,
    settings: live::Settings,
}

/// Reads and checks `--cloud-config`, logging every finding; errors stop the start.
fn load_config(cloud_config: Option<PathBuf>, search: Vec<PathBuf>) -> anyhow::Result<Loaded> {
    let path =
        cloud_config.context("no OpenStack cloud provider config file given (--cloud-config)")?;
    let checked = config::load(&path, &search)?;
    for diagnostic in &checked.diagnostics {
        match diagnostic.severity {
            Severity::Warning => tracing::warn!(file = %path.display(), "{}", diagnostic.message),
            Severity::Error => tracing::error!(file = %path.display(), "{}", diagnostic.message),
        }
    }
    let origin = path.display().to_string();
    // Every error at once, as --check-config prints them.
    checked.config(&origin)?;
    let settings =
        live::Settings::new(checked, &origin, 1).map_err(|e| anyhow::anyhow!(e.join("; ")))?;
    Ok(Loaded { path, search, settings })
}

/// Serves `/healthz`, `/readyz` (OpenStack session up, no Kubernetes request refused) and
/// `/metrics` over HTTPS, to whom `delegation` allows.
async fn spawn_server(
    tasks: &mut JoinSet<Task>,
    (bind_address, secure_port): (IpAddr, u16),
    files: Option<(&Path, &Path)>,
    (cloud, metrics, refused): (&Arc<OpenStack>, &Arc<Metrics>, &Arc<k8s::Refused>),
    delegation: server::auth::Delegation,
) -> anyhow::Result<()> {
    let tls = server::tls_config(files, bind_address)?;
    let listener = TcpListener::bind((bind_address, secure_port))
        .await
        .with_context(|| format!("cannot listen on {bind_address}:{secure_port}"))?;
    tracing::info!(address = %listener.local_addr()?, ?delegation,
        "serving /healthz /readyz /metrics over HTTPS; the paths not open need a token the API \
         server allows");
    let ready = cloud.clone();
    let health = server::Health {
        ready: Arc::new(move || ready.readiness()),
        metrics: metrics.clone(),
        refused: refused.clone(),
    };
    tasks.spawn(async move {
        let router = server::router(health, Arc::new(delegation));
        ("server", Err(server::serve(listener, tls, router).await.into()))
    });
    Ok(())
}

/// Keeps the OpenStack session up (a task) and builds the rate-limited Kubernetes client.
async fn clients(
    tasks: &mut JoinSet<Task>,
    cloud: &Arc<OpenStack>,
    kubeconfig: Option<&Path>,
    (kube_api_qps, kube_api_burst): (f32, u32),
    refused: Arc<k8s::Refused>,
) -> anyhow::Result<kube::Client> {
    let connector = cloud.clone();
    tasks.spawn(async move {
        connector.keep_connected().await;
        ("openstack-connect", Ok(()))
    });
    let limit = k8s::RateLimit::from_flags(kube_api_qps, kube_api_burst);
    match limit {
        Some(l) => tracing::info!(qps = l.qps(), burst = l.burst(), "Kubernetes API rate limit"),
        None => tracing::info!(qps = kube_api_qps, "Kubernetes API rate limit off (negative qps)"),
    }
    Ok(k8s::client(kubeconfig, limit, refused).await?)
}

/// Watches the cloud config file for the rest of the run: each good change becomes the next
/// generation of `settings`, every outcome is told once.
fn spawn_config(
    tasks: &mut JoinSet<Task>,
    (path, search): (PathBuf, Vec<PathBuf>),
    settings: watch::Sender<Arc<live::Settings>>,
    teller: reload::Teller,
) {
    tasks.spawn(async move {
        live::watch_file(path, search, settings, |outcome| teller.tell(outcome)).await;
        ("config-watch", Ok(()))
    });
}

/// When the controllers may start: `main` turns true once this process holds the main lease
/// (at once without election), `migrated` once it also holds the migration lease (the same
/// as `main` without leader migration).
#[derive(Debug, Clone)]
struct Gates {
    main: watch::Receiver<bool>,
    migrated: watch::Receiver<bool>,
}

/// The gates, and the electors that release the leases at shutdown.
struct Leadership {
    gates: Gates,
    release: Vec<leader::Elector>,
}

/// Elects a leader when `settings` is given and, with leader migration, takes the migration
/// lease once the main one is held (same namespace, identity and timing). Losing either lease
/// ends its task, and so the process.
fn spawn_leader(
    tasks: &mut JoinSet<Task>,
    client: &kube::Client,
    settings: Option<leader::Settings>,
    migration: Option<&leader::migration::Migration>,
    metrics: &Arc<Metrics>,
) -> Leadership {
    let Some(settings) = settings else {
        let (_, open) = watch::channel(true);
        return Leadership {
            gates: Gates { main: open.clone(), migrated: open },
            release: Vec::new(),
        };
    };
    let main = spawn_lease(tasks, client, settings.clone(), None, metrics);
    let mut release = vec![leader::Elector::new(client.clone(), settings.clone())];
    let migrated = match migration {
        Some(migration) => {
            let settings = leader::Settings { name: migration.leader_name.clone(), ..settings };
            release.push(leader::Elector::new(client.clone(), settings.clone()));
            spawn_lease(tasks, client, settings, Some(main.clone()), metrics)
        }
        None => main.clone(),
    };
    Leadership { gates: Gates { main, migrated }, release }
}

/// One lease's task: waits for `after` (the main lease, for the migration one), acquires,
/// then holds; the receiver turns true once held.
fn spawn_lease(
    tasks: &mut JoinSet<Task>,
    client: &kube::Client,
    settings: leader::Settings,
    after: Option<watch::Receiver<bool>>,
    metrics: &Arc<Metrics>,
) -> watch::Receiver<bool> {
    let (held_tx, held_rx) = watch::channel(false);
    let mut elector = leader::Elector::new(client.clone(), settings.clone());
    let metrics = metrics.clone();
    let task = if after.is_some() { "migration-leader" } else { "leader" };
    metrics.set_leader(&settings.name, false);
    tasks.spawn(async move {
        if let Some(mut after) = after
            && after.wait_for(|held| *held).await.is_err()
        {
            return (task, Err(anyhow::anyhow!("the main lease task ended")));
        }
        elector.acquire().await;
        metrics.set_leader(&settings.name, true);
        let _ = held_tx.send(true);
        let lost = elector.hold().await;
        metrics.set_leader(&settings.name, false);
        (task, Err(lost.into()))
    });
    held_rx
}

/// Nodes per page of the node watch's list: a page is decoded whole, before the projection, and
/// the allocator keeps the peak; kube-rs's default is 500 (some 6 MB of decoded Nodes).
const NODE_PAGE: u32 = 100;

/// What the controllers task runs and how often.
struct Plan {
    controllers: Controllers,
    concurrency: u16,
    refresh_period: Duration,
    monitor_period: Duration,
    regional: bool,
    /// The cloud config as it is now.
    current: Current,
    /// The service controller's flags, when `--controllers` has it (`[LoadBalancer] enabled`
    /// turns it on and off live).
    service: Option<service::run::Plan>,
    /// The route controller's settings while it is on (flags and `[Route] router-id`, live).
    route: watch::Receiver<Option<route::Settings>>,
    /// Leader migration, when on.
    migration: Option<leader::migration::Migration>,
}

/// Under which lease a controller runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// The main lease (every controller without leader migration).
    Main,
    /// The migration lease too.
    Migrated,
    /// Never here: leader migration gives it to the other component.
    Never,
}

impl Gate {
    fn of(name: ControllerName, migration: Option<&leader::migration::Migration>) -> Gate {
        use leader::migration::Placement;
        match migration.and_then(|m| m.placement(name)) {
            None => Gate::Main,
            Some(Placement::Migrated) => Gate::Migrated,
            Some(Placement::Elsewhere) => Gate::Never,
        }
    }

    /// Runs `controller` when `enabled` and its lease is held; otherwise never returns.
    async fn run(
        self,
        name: ControllerName,
        enabled: bool,
        gates: &Gates,
        controller: impl Future<Output = ()>,
    ) {
        if !enabled || self == Gate::Never {
            if enabled {
                tracing::info!(
                    controller = name.as_str(),
                    "leader migration gives this controller to the other component: not run here"
                );
            }
            return std::future::pending().await;
        }
        if self == Gate::Migrated {
            let mut migrated = gates.migrated.clone();
            if !*migrated.borrow() {
                tracing::info!(controller = name.as_str(), "waiting for the migration lease");
            }
            if migrated.wait_for(|held| *held).await.is_err() {
                return std::future::pending().await;
            }
            tracing::info!(controller = name.as_str(), "migration lease held: starting");
        }
        controller.await;
    }
}

/// The clients and registry the controllers share.
struct Clients {
    kube: kube::Client,
    cloud: Arc<OpenStack>,
    metrics: Arc<Metrics>,
}

/// Once leading and logged in to OpenStack: the node watch (which feeds the cache every
/// controller reads), `cloud-node`'s address refresh, `cloud-node-lifecycle`, `service` and
/// `route`.
fn spawn_controllers(tasks: &mut JoinSet<Task>, clients: Clients, plan: Plan, gates: Gates) {
    let Plan {
        controllers,
        concurrency,
        refresh_period,
        monitor_period,
        regional,
        current,
        service,
        route,
        migration,
    } = plan;
    let lifecycle_gate = Gate::of(ControllerName::CloudNodeLifecycle, migration.as_ref());
    let service_gate = Gate::of(ControllerName::Service, migration.as_ref());
    let route_gate = Gate::of(ControllerName::Route, migration.as_ref());
    let mut leading = gates.main.clone();
    let Clients { kube, cloud, metrics } = clients;
    let nodes_api: Api<CachedNode> = Api::all(kube.clone());
    // One reflector of projected Nodes (only the fields the controllers read) feeds the node
    // controller and is the cache every controller reads.
    let (reader, writer) = reflector::store();
    let nodes = watcher(nodes_api, watcher::Config::default().page_size(NODE_PAGE))
        .default_backoff()
        .modify(projection::project)
        .reflect(writer)
        .applied_objects();
    let controller = Controller::for_stream(nodes, reader)
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency));
    // `[LoadBalancer]` as it is now, and whether it is on.
    let lb_settings = live::slice(&current, |s| LbSettings::from_config(&s.config).map(Arc::new));
    let lb_on = live::slice(&current, |s| s.config.load_balancer.enabled.then_some(()));
    if service.is_some() && lb_on.borrow().is_none() {
        tracing::info!("[LoadBalancer] enabled = false: the service controller stays off");
    }
    let services_of = {
        let (kube, cloud, metrics, nodes) =
            (kube.clone(), cloud.clone(), metrics.clone(), controller.store());
        move |plan: &service::run::Plan| {
            let shared = (cloud.clone(), metrics.clone());
            plan.context(kube.clone(), shared, nodes.clone(), lb_settings.clone())
        }
    };
    let routes_of = {
        let (kube, cloud, metrics, nodes) =
            (kube.clone(), cloud.clone(), metrics.clone(), controller.store());
        move |settings: route::Settings| {
            route::context(settings, kube.clone(), cloud.clone(), metrics.clone(), nodes.clone())
        }
    };
    let mut ctx = Context::new(kube, cloud, metrics, Default::default(), controller.store());
    ctx.networking = live::slice(&current, |s| s.config.networking.clone());
    ctx.regional = regional;
    // Initialization is not migrated (KEP-2436: the kubelet's switch is its own step), but a
    // file may still give it to the other component.
    ctx.initialize =
        controllers.node && Gate::of(ControllerName::CloudNode, migration.as_ref()) != Gate::Never;
    let ctx = Arc::new(ctx);
    let mut connected = ctx.cloud.subscribe_ready();
    tasks.spawn(async move {
        if leading.wait_for(|l| *l).await.is_err() && !*leading.borrow() {
            return ("controllers", Err(anyhow::anyhow!("leader election ended before starting")));
        }
        // Nothing useful can happen before the first login; afterwards an outage only makes
        // reconciles fail and retry (and never deletes a node).
        if connected.wait_for(|c| *c).await.is_err() {
            return ("controllers", Err(anyhow::anyhow!("OpenStack client dropped")));
        }
        tracing::info!(
            cloud_node = controllers.node,
            cloud_node_lifecycle = controllers.lifecycle,
            route = route.borrow().is_some(),
            "starting controllers"
        );
        let watch =
            controller.run(node::reconcile, node::error_policy, ctx.clone()).for_each(|_| async {});
        let refresh = async {
            if controllers.node {
                resync::run(ctx.clone(), refresh_period).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let lifecycle = lifecycle_gate.run(
            ControllerName::CloudNodeLifecycle,
            controllers.lifecycle,
            &gates,
            lifecycle::run(ctx.clone(), monitor_period),
        );
        // Each started in place, stopped or started again when the cloud config says so.
        let services = async {
            let Some(plan) = &service else { return std::future::pending::<()>().await };
            switch(ControllerName::Service, lb_on, |()| async {
                let (ctx, concurrency) = services_of(plan);
                let run = service::run::start(ctx, concurrency);
                service_gate.run(ControllerName::Service, true, &gates, run).await;
            })
            .await;
        };
        let routes = switch(ControllerName::Route, route, |settings| async {
            let run = route::run(routes_of(settings));
            route_gate.run(ControllerName::Route, true, &gates, run).await;
        });
        tokio::select! {
            () = services => (ControllerName::Service.as_str(), Ok(())),
            () = routes => (ControllerName::Route.as_str(), Ok(())),
            () = watch => ("node-watch", Ok(())),
            () = refresh => ("cloud-node-refresh", Ok(())),
            () = lifecycle => (ControllerName::CloudNodeLifecycle.as_str(), Ok(())),
        }
    });
}

/// Waits for a signal (Ok, after releasing the lease) or for any task to end (always Err).
async fn supervise(
    mut tasks: JoinSet<Task>,
    release: Vec<leader::Elector>,
    mut shutdown: Shutdown,
) -> anyhow::Result<()> {
    tokio::select! {
        joined = tasks.join_next() => {
            let (name, result) = match joined {
                Some(Ok(done)) => done,
                Some(Err(panic)) => ("task", Err(anyhow::anyhow!("a task panicked: {panic}"))),
                None => ("tasks", Ok(())),
            };
            match result {
                Err(error) => Err(error.context(format!("{name} stopped"))),
                Ok(()) => bail!("{name} stopped unexpectedly"),
            }
        }
        () = shutdown.wait() => {
            tracing::info!("signal received; shutting down");
            tasks.abort_all();
            // The controllers' requests in flight end before the Lease is given back: none may
            // land after the next leader has taken over. Aborted tasks stop at their next await.
            let stopped = async { while tasks.join_next().await.is_some() {} };
            if tokio::time::timeout(Duration::from_secs(5), stopped).await.is_err() {
                tracing::warn!("tasks still stopping after 5 s; giving the lease back anyway");
            }
            // The migration lease first: the other component may take its controllers back
            // while this process still holds the main lease.
            for elector in release.iter().rev() {
                if let Err(error) = elector.release().await {
                    tracing::warn!(error = %crate::cloud::session::chain(&error), "cannot release the lease");
                }
            }
            Ok(())
        }
    }
}

/// SIGTERM and SIGINT, listened for from the start of [`run`] (a signal that arrives before
/// [`Shutdown::wait`] is polled is kept for it).
struct Shutdown {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Shutdown {
    fn listen() -> std::io::Result<Shutdown> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Shutdown {
                terminate: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Shutdown {})
    }

    async fn wait(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
