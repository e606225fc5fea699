//! The wiring: flags → config → clients → one JoinSet of long-running tasks; any task ending is fatal.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::{Controller, watcher};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cloud::OpenStack;
use crate::config::{self, Severity};
use crate::controllers::{Context, ControllerName, lifecycle, node};
use crate::flags::Flags;
use crate::metrics::Metrics;
use crate::{kube as k8s, leader, server};

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
}

type Task = (&'static str, anyhow::Result<()>);

/// How often cloud.conf and clouds.yaml are re-read for rotated credentials (kubelet updates
/// mounted ConfigMaps and Secrets within about a minute).
const RELOAD_PERIOD: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs until a signal (Ok) or until any long-running task ends (Err).
pub async fn run(flags: Flags, env: Env) -> anyhow::Result<()> {
    let controllers = flags.controllers();
    for name in flags.unsupported_controllers() {
        tracing::warn!(
            controller = name.as_str(),
            "controller is not implemented by this binary; ignored"
        );
    }
    for name in flags.ignored.given() {
        tracing::warn!(flag = name, "flag is accepted for compatibility and ignored");
    }
    if flags.use_service_account_credentials {
        tracing::warn!(
            "--use-service-account-credentials is accepted but ignored: one client identity is used"
        );
    }
    let Flags {
        cloud_config,
        kubeconfig,
        leader_elect,
        leader_elect_lease_duration,
        leader_elect_renew_deadline,
        leader_elect_retry_period,
        leader_elect_resource_namespace,
        leader_elect_resource_name,
        bind_address,
        secure_port,
        tls_cert_file,
        tls_private_key_file,
        cluster_name,
        concurrent_node_syncs,
        node_status_update_frequency,
        node_monitor_period,
        kube_api_qps,
        kube_api_burst,
        ..
    } = flags;

    let path =
        cloud_config.context("no OpenStack cloud provider config file given (--cloud-config)")?;
    let search = config::clouds::search_paths(env.os_client_config_file, env.home);
    let checked = config::load(&path, &search)?;
    for diagnostic in &checked.diagnostics {
        match diagnostic.severity {
            Severity::Warning => tracing::warn!(file = %path.display(), "{}", diagnostic.message),
            Severity::Error => tracing::error!(file = %path.display(), "{}", diagnostic.message),
        }
    }
    let cfg = checked.config(&path.display().to_string())?;
    tracing::info!(cluster = %cluster_name, "configuration loaded");

    let metrics = Metrics::shared();
    let cloud = OpenStack::new(metrics.clone(), cfg.metadata.request_timeout);
    let mut tasks: JoinSet<Task> = JoinSet::new();

    if secure_port != 0 {
        let files = tls_cert_file.as_deref().zip(tls_private_key_file.as_deref());
        let tls = server::tls_config(files, bind_address)?;
        let listener = TcpListener::bind((bind_address, secure_port))
            .await
            .with_context(|| format!("cannot listen on {bind_address}:{secure_port}"))?;
        tracing::info!(address = %listener.local_addr()?, "serving /healthz /readyz /metrics over HTTPS");
        let ready = cloud.clone();
        let health =
            server::Health { ready: Arc::new(move || ready.ready()), metrics: metrics.clone() };
        tasks.spawn(async move {
            ("server", Err(server::serve(listener, tls, server::router(health)).await.into()))
        });
    }
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
    let client = k8s::client(kubeconfig.as_deref(), limit).await?;
    match (&cfg.global.secret_name, &cfg.global.secret_namespace) {
        (Some(name), Some(namespace)) => {
            let (client, name, namespace, target) =
                (client.clone(), name.clone(), namespace.clone(), cloud.clone());
            let base = checked.values.clone();
            tasks.spawn(async move {
                k8s::secret::watch(client, namespace, name, base, move |c| {
                    target.set_credentials(c)
                })
                .await;
                ("secret-watch", Ok(()))
            });
        }
        _ => {
            let target = cloud.clone();
            tasks.spawn(async move {
                let apply = move |c| target.set_credentials(c);
                config::reload::watch(path, search, RELOAD_PERIOD, apply).await;
                ("config-reload", Ok(()))
            });
        }
    }

    let (leading_tx, leading_rx) = watch::channel(!leader_elect);
    let mut release = None;
    if leader_elect {
        let settings = leader::Settings {
            namespace: leader_elect_resource_namespace,
            name: leader_elect_resource_name,
            identity: env.identity,
            lease_duration: leader_elect_lease_duration,
            renew_deadline: leader_elect_renew_deadline,
            retry_period: leader_elect_retry_period,
        };
        release = Some(leader::Elector::new(client.clone(), settings.clone()));
        let mut elector = leader::Elector::new(client.clone(), settings);
        let metrics = metrics.clone();
        tasks.spawn(async move {
            elector.acquire().await;
            metrics.set_leader(true);
            let _ = leading_tx.send(true);
            let lost = elector.hold().await;
            metrics.set_leader(false);
            ("leader", Err(lost.into()))
        });
    } else {
        drop(leading_tx);
    }

    let nodes_api: Api<Node> = Api::all(client.clone());
    let controller = Controller::new(nodes_api, watcher::Config::default()).with_config(
        kube::runtime::controller::Config::default()
            .concurrency(u16::try_from(concurrent_node_syncs).unwrap_or(u16::MAX)),
    );
    let mut ctx = Context::new(client, cloud, metrics, cfg.networking.clone(), controller.store());
    ctx.regional = env.regional;
    ctx.initialize = controllers.node;
    let ctx = Arc::new(ctx);
    let mut connected = ctx.cloud.subscribe_ready();
    tasks.spawn(async move {
        let mut leading = leading_rx;
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
            "starting controllers"
        );
        let watch =
            controller.run(node::reconcile, node::error_policy, ctx.clone()).for_each(|_| async {});
        let refresh = async {
            if controllers.node {
                node::refresh_loop(ctx.clone(), node_status_update_frequency).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let lifecycle = async {
            if controllers.lifecycle {
                lifecycle::run(ctx.clone(), node_monitor_period).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = watch => ("node-watch", Ok(())),
            () = refresh => ("cloud-node-refresh", Ok(())),
            () = lifecycle => (ControllerName::CloudNodeLifecycle.as_str(), Ok(())),
        }
    });

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
        () = shutdown_signal() => {
            tracing::info!("signal received; shutting down");
            tasks.abort_all();
            if let Some(elector) = release
                && let Err(error) = elector.release().await
            {
                tracing::warn!(error = %crate::cloud::session::chain(&error), "cannot release the lease");
            }
            Ok(())
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
