//! The controllers: node initialization (`node`), lifecycle, address refresh (`resync`), routes
//! and load balancers (`service`); and what the node controllers share: the Context, taints, the
//! error type, Node patches.

pub(crate) mod addresses;
pub(crate) mod labels;
pub mod lifecycle;
pub(crate) mod lookups;
pub(crate) mod name;
pub mod node;
pub(crate) mod own_writes;
pub mod projection;
pub(crate) mod provider_id;
pub mod resync;
pub mod route;
pub(crate) mod service;
pub(crate) mod switch;
pub(crate) mod synced;

#[cfg(test)]
pub(crate) mod fixtures;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Taint;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use kube_support::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;

pub(crate) use name::ControllerName;

use crate::cloud::{self, Cloud, Lookup};
use crate::config::Networking;
use crate::controllers::projection::CachedNode;
use crate::metrics::Metrics;

/// Set by kubelet `--cloud-provider=external`; removed once the node is initialized.
pub(crate) const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";
/// Added while the server is `SHUTOFF`.
pub(crate) const SHUTDOWN_TAINT: &str = "node.cloudprovider.kubernetes.io/shutdown";
/// kubelet's `--node-ip`.
pub(crate) const PROVIDED_NODE_IP: &str = "alpha.kubernetes.io/provided-node-ip";

/// A reconcile failure; every variant is retried later, none deletes a Node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// OpenStack failed (including "not found" during initialization).
    #[error("looking up the server of node {node}")]
    Cloud {
        /// Node name.
        node: String,
        /// Why.
        #[source]
        source: cloud::Error,
    },
    /// The Kubernetes API failed.
    #[error("updating node {node}")]
    Kube {
        /// Node name.
        node: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The node's own data is unusable (bad providerID, node IP not on the server).
    #[error("node {node}: {message}")]
    Node {
        /// Node name.
        node: String,
        /// What is wrong.
        message: String,
    },
}

/// What kind of failure an [`Error`] is; [`ErrorKind::as_str`] is its metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// [`Error::Cloud`], by the cloud error's kind.
    Cloud(cloud::ErrorKind),
    /// [`Error::Kube`] with a 409: the Node changed since it was read.
    Conflict,
    /// Any other [`Error::Kube`].
    Kube,
    /// [`Error::Node`].
    Node,
}

impl ErrorKind {
    /// A fixed label for metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Cloud(kind) => kind.as_str(),
            ErrorKind::Conflict => "conflict",
            ErrorKind::Kube => "kube",
            ErrorKind::Node => "node",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The kind, for metric labels and the retry policy.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Cloud { source, .. } => ErrorKind::Cloud(source.kind()),
            Error::Kube { source: kube::Error::Api(s), .. } if s.code == 409 => ErrorKind::Conflict,
            Error::Kube { .. } => ErrorKind::Kube,
            Error::Node { .. } => ErrorKind::Node,
        }
    }
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a reconcile needs.
pub struct Context<C> {
    /// Kubernetes client.
    pub(crate) client: kube::Client,
    /// OpenStack.
    pub(crate) cloud: Arc<C>,
    /// Metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// `[Networking]` as it is now: read once per reconcile (`node::node_addresses`).
    pub(crate) networking: tokio::sync::watch::Receiver<Networking>,
    /// Write `openstack://<region>/<id>` (env `OS_CCM_REGIONAL=true`, as upstream).
    pub(crate) regional: bool,
    /// The Node cache (one reflector, fed by the node controller's watch).
    pub(crate) nodes: Store<CachedNode>,
    /// Event recorder.
    pub(crate) recorder: Recorder,
    /// `cloud-node` is enabled (the node watch also feeds lifecycle when it is not).
    pub(crate) initialize: bool,
    /// Node versions our own initialization replaced (never initialized twice).
    pub(crate) own_writes: own_writes::OwnWrites,
    /// The servers of many tainted nodes, listed at once.
    pub(crate) lookups: lookups::Lookups,
}

impl<C> std::fmt::Debug for Context<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("regional", &self.regional).finish_non_exhaustive()
    }
}

impl<C: Cloud> Context<C> {
    /// A context with the standard event reporter.
    pub fn new(
        client: kube::Client,
        cloud: Arc<C>,
        metrics: Arc<Metrics>,
        networking: Networking,
        nodes: Store<CachedNode>,
    ) -> Self {
        let reporter = Reporter { controller: "cloud-node-controller".into(), instance: None };
        let recorder = Recorder::new(client.clone(), reporter);
        Context {
            client,
            cloud,
            metrics,
            networking: tokio::sync::watch::channel(networking).1,
            regional: false,
            nodes,
            recorder,
            initialize: true,
            own_writes: own_writes::OwnWrites::default(),
            lookups: lookups::Lookups::default(),
        }
    }

    /// The Node API.
    pub(crate) fn api(&self) -> Api<CachedNode> {
        Api::all(self.client.clone())
    }

    /// Records an event on a node; failures are logged, never fatal.
    pub(crate) async fn event(
        &self,
        node: &CachedNode,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        if let Err(error) =
            publish(&self.recorder, &node.object_ref(&()), type_, reason, note).await
        {
            tracing::warn!(node = %node.name_any(), %error, "cannot record event");
        }
    }
}

/// Publishes an Event whose action is its reason (as the upstream controllers do).
pub(crate) async fn publish(
    recorder: &Recorder,
    object: &k8s_openapi::api::core::v1::ObjectReference,
    type_: EventType,
    reason: &str,
    note: String,
) -> Result<(), kube::Error> {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    recorder.publish(&event, object).await
}

/// How to find a node's server: by providerID when set, else by name.
pub(crate) fn lookup(node: &CachedNode, region: Option<&str>) -> Result<Lookup> {
    let provider_id =
        node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).filter(|p| !p.is_empty());
    match provider_id {
        Some(id) => provider_id::parse(id, region)
            .map(Lookup::Id)
            .map_err(|message| Error::Node { node: node.name_any(), message }),
        None => Ok(Lookup::Name(node.name_any())),
    }
}

/// The node's taints.
pub(crate) fn taints(node: &CachedNode) -> Vec<Taint> {
    node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default()
}

/// True when the node has a taint with this key.
pub(crate) fn has_taint(node: &CachedNode, key: &str) -> bool {
    // Read in place: every resync and lifecycle tick asks this of every node.
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    taints.iter().any(|t| t.key == key)
}

/// Replaces the taint list with a merge patch guarded by the node's resourceVersion, so a
/// concurrent change by kubelet or an admin turns into a 409 and a retry, never a lost taint.
pub(crate) async fn set_taints<C: Cloud>(
    ctx: &Context<C>,
    node: &CachedNode,
    taints: Vec<Taint>,
) -> Result<()> {
    let patch = json!({
        "metadata": {"resourceVersion": node.resource_version()},
        "spec": {"taints": taints},
    });
    ctx.api()
        .patch(&node.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
        .map_err(|source| Error::Kube { node: node.name_any(), source })
}

/// True when the `Ready` condition is `True`.
pub(crate) fn is_ready(node: &CachedNode) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.into_iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
}

#[cfg(test)]
mod tests;
