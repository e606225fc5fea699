//! The service controller: an Octavia load balancer for every `type: LoadBalancer` Service.
//!
//! ```text
//!  Service + Nodes ─ annotations (settings) ─ desired (Octavia tree) ─┐
//!                                          Octavia (tree by name) ───┴─ diff → calls, one at a
//!                                                                       time, ACTIVE between
//!  finalizer first · floating IP (ours or the user's) · status ingress · Events
//! ```

pub(crate) mod annotations;
mod changes;
mod cleanup;
pub(crate) mod converged;
pub(crate) mod desired;
pub(crate) mod diff;
mod ensure;
pub(crate) mod floating;
mod floating_subnet;
mod hold;
#[cfg(test)]
pub(crate) mod in_memory;
mod member_ports;
pub(crate) mod names;
pub(crate) mod notice;
mod one_writer;
pub(crate) mod ownership;
pub(crate) mod reconcile;
pub(crate) mod run;
pub(crate) mod security_group;
mod service_api;
pub(crate) mod settings;
pub(crate) mod vip_port;
pub(crate) mod wait;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use kube_support::events::{EventType, Recorder, Reporter};

use crate::cloud;
use crate::controllers::projection::CachedNode;
use crate::metrics::Metrics;

/// The finalizer the upstream service controller uses: the Service is not removed before its
/// load balancer (and the floating IP and security group the controller made) is gone.
pub(crate) const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

/// A Service's key, `namespace/name`: what [`run::Failures`] counts by.
pub(crate) fn key(service: &Service) -> String {
    format!("{}/{}", service.namespace().unwrap_or_default(), service.name_any())
}

/// A reconcile failure; all are retried with backoff, and reported as an Event.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The Service's annotations or the cloud config are wrong.
    #[error("{}", .0.join("; "))]
    Settings(Vec<String>),
    /// Something about the Service or its load balancer prevents building it.
    #[error("{0}")]
    Invalid(String),
    /// The Service is left alone until someone changes something (a load balancer with its
    /// name that is not its own, a shared one that is full, a port another Service holds):
    /// told once per change as a Warning Event with `reason`, not once per retry.
    #[error("{message}")]
    LeftAlone { reason: &'static str, message: String },
    /// OpenStack failed.
    #[error("{doing}")]
    Cloud {
        doing: String,
        #[source]
        source: cloud::Error,
    },
    /// Octavia did not reach the state asked for.
    #[error(transparent)]
    Wait(#[from] wait::WaitError),
    /// The Kubernetes API failed.
    #[error("{doing}")]
    Kube {
        doing: &'static str,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// Wraps a failed OpenStack call made while `doing`: for `map_err`.
    pub(crate) fn cloud(doing: String) -> impl FnOnce(cloud::Error) -> Error {
        move |source| Error::Cloud { doing, source }
    }

    /// A fixed label for metrics.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Error::Settings(_) => "settings",
            Error::Invalid(_) => "invalid",
            Error::LeftAlone { .. } => "left_alone",
            Error::Cloud { source, .. } => source.kind().as_str(),
            Error::Wait(wait::WaitError::Failed { .. }) => "lb_error",
            Error::Wait(wait::WaitError::Pending { .. }) => "lb_pending",
            Error::Wait(wait::WaitError::Cloud { source, .. }) => source.kind().as_str(),
            Error::Kube { .. } => "kube",
        }
    }
}

/// Result alias for this module.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// What every reconcile of the service controller shares.
pub(crate) struct ServiceContext<L> {
    pub(crate) client: kube::Client,
    pub(crate) cloud: Arc<L>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) nodes: Store<CachedNode>,
    pub(crate) recorder: Recorder,
    /// `--cluster-name`.
    pub(crate) cluster: String,
    /// The cloud config's `[LoadBalancer]` as it is now (`None`: `enabled = false`): a
    /// reconcile takes it at its start.
    pub(crate) settings: tokio::sync::watch::Receiver<Option<Arc<settings::LbSettings>>>,
    /// The waits for Octavia, on one schedule (and how long a load balancer may stay
    /// `PENDING_*`).
    pub(crate) waits: wait::Waits,
    /// Failures in a row per Service, for the backoff.
    pub(crate) failures: run::Failures,
    /// `--load-balancer-resync-period`: a converged Service is checked again after this long.
    pub(crate) resync: std::time::Duration,
    /// What the last full reconcile of each Service left (the resync's read cache).
    pub(crate) converged: converged::Converged,
    /// What each Service was last told about being left alone.
    pub(crate) notices: notice::Notices,
    /// The members' ports on the member subnets, one list shared by every reconcile.
    pub(crate) member_ports: member_ports::MemberPorts,
    /// What each Service was last told about nodes left out of its pools (kept across
    /// successful reconciles: told once per change).
    pub(crate) left_out: notice::Notices,
    /// One reconcile at a time changes a given load balancer.
    pub(crate) turns: one_writer::Turns,
    /// The Service versions our own writes replaced: a reconcile on one of those cached
    /// copies waits for the newer one instead (`service_api`).
    pub(crate) own_writes: crate::controllers::own_writes::OwnWrites,
    /// The controller's Service cache, once it runs: which Services are still there.
    pub(crate) services: std::sync::OnceLock<Store<Service>>,
}

impl<L> std::fmt::Debug for ServiceContext<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceContext").field("cluster", &self.cluster).finish_non_exhaustive()
    }
}

impl<L: cloud::load_balancing::Octavia> ServiceContext<L> {
    /// The Octavia calls of a reconcile (`changes`).
    fn changes(&self) -> changes::Changes<'_, L> {
        changes::Changes { cloud: self.cloud.as_ref(), waits: &self.waits }
    }
}

impl<L> ServiceContext<L> {
    /// True while the Service `key` (`namespace/name`) is in the controller's cache (always,
    /// before the controller runs).
    pub(crate) fn is_live(&self, key: &str) -> bool {
        let Some(services) = self.services.get() else { return true };
        let (namespace, name) = key.split_once('/').unwrap_or_default();
        services.get(&ObjectRef::new(name).within(namespace)).is_some()
    }

    /// The event reporter of the upstream service controller.
    pub(crate) fn reporter() -> Reporter {
        Reporter { controller: "service-lb-controller".into(), instance: None }
    }

    /// Tells why the Service is left alone (or waits), once per change: a log line at the
    /// default level and an Event, only when `note` differs from what it was last told.
    pub(crate) async fn notice(
        &self,
        service: &Service,
        type_: EventType,
        reason: &'static str,
        note: String,
    ) {
        let key = key(service);
        if !self.notices.is_news(&key, reason, &note) {
            return;
        }
        match type_ {
            EventType::Warning => tracing::warn!(service = %key, reason, "{note}"),
            EventType::Normal => tracing::info!(service = %key, reason, "{note}"),
        }
        self.event(service, type_, reason, note).await;
    }

    /// Records an Event on the Service; failures are logged, never fatal.
    pub(crate) async fn event(
        &self,
        service: &Service,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let object = service.object_ref(&());
        if let Err(error) = super::publish(&self.recorder, &object, type_, reason, note).await {
            tracing::warn!(service = %service.name_any(), %error, "cannot record event");
        }
    }
}
