//! `cloud-node-lifecycle`: a NotReady node whose server is gone is deleted, a `SHUTOFF` one is
//! tainted, a Ready one loses that taint. Any other error does nothing: a transient cloud
//! error never deletes a node. A tick reads one server listing for all NotReady nodes, and
//! asks for a server by itself only when the listing lacks it (so "gone" is always Nova's
//! own 404 or empty name query, never an absence from a list).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Taint;
use kube::ResourceExt;
use kube::api::DeleteParams;
use kube_support::events::EventType;

use super::{
    Context, ControllerName, Error, Result, SHUTDOWN_TAINT, has_taint, is_ready, lookup,
    set_taints, taints,
};
use crate::cloud::{self, Cloud, Lookup, ServerState};
use crate::controllers::projection::CachedNode;

/// What one check did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do.
    Unchanged,
    /// The Node was deleted (server gone).
    Deleted,
    /// The shutdown taint was added.
    Tainted,
    /// The shutdown taint was removed.
    Untainted,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Unchanged => "unchanged",
            Outcome::Deleted => "deleted",
            Outcome::Tainted => "tainted",
            Outcome::Untainted => "untainted",
        }
    }
}

/// Checks one node with its own server lookup.
pub async fn check<C: Cloud>(ctx: &Context<C>, node: &CachedNode) -> Result<Outcome> {
    check_with(ctx, node, None).await
}

/// A Ready node loses the shutdown taint; a NotReady one is checked against the listing
/// (`None`: no listing, its own lookup).
async fn check_with<C: Cloud>(
    ctx: &Context<C>,
    node: &CachedNode,
    listing: Option<&cloud::Result<Listing>>,
) -> Result<Outcome> {
    match is_ready(node) {
        true => untaint(ctx, node).await,
        false => check_listed(ctx, node, listing).await,
    }
}

/// A Ready node loses the shutdown taint.
async fn untaint<C: Cloud>(ctx: &Context<C>, node: &CachedNode) -> Result<Outcome> {
    if !has_taint(node, SHUTDOWN_TAINT) {
        return Ok(Outcome::Unchanged);
    }
    let kept = taints(node).into_iter().filter(|t| t.key != SHUTDOWN_TAINT).collect();
    set_taints(ctx, node, kept).await?;
    tracing::info!(node = %node.name_any(), "ready again; shutdown taint removed");
    Ok(Outcome::Untainted)
}

/// The verdict on a NotReady node from its server's status: not found deletes the node,
/// `SHUTOFF` taints it, any other error does nothing.
async fn act<C: Cloud>(
    ctx: &Context<C>,
    node: &CachedNode,
    status: cloud::Result<String>,
) -> Result<Outcome> {
    let name = node.name_any();
    let status = match status {
        Ok(status) => status,
        Err(source) if source.is_not_found() => {
            let note = format!("Deleting node {name} because its server {source}");
            ctx.event(node, EventType::Normal, "DeletingNode", note).await;
            match ctx.api().delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(source) => return Err(Error::Kube { node: name, source }),
            }
            tracing::info!(node = %name, "server gone; node deleted");
            return Ok(Outcome::Deleted);
        }
        Err(source) => return Err(Error::Cloud { node: name, source }),
    };
    if status == "SHUTOFF" && !has_taint(node, SHUTDOWN_TAINT) {
        let mut list = taints(node);
        list.push(Taint {
            key: SHUTDOWN_TAINT.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
        set_taints(ctx, node, list).await?;
        tracing::info!(node = %name, "server SHUTOFF; shutdown taint added");
        return Ok(Outcome::Tainted);
    }
    Ok(Outcome::Unchanged)
}

/// The servers of one listing, by ID and by name.
struct Listing {
    by_id: HashMap<String, String>,
    by_name: HashMap<String, Vec<String>>,
}

impl Listing {
    fn new(states: Vec<ServerState>) -> Self {
        let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
        let mut by_id = HashMap::with_capacity(states.len());
        for s in states {
            by_name.entry(s.name).or_default().push(s.status.clone());
            by_id.insert(s.id, s.status);
        }
        Listing { by_id, by_name }
    }

    /// The server's status when the listing answers for it; `None` leaves it to a lookup of
    /// its own (absent, or its name not unique).
    fn status(&self, how: &Lookup) -> Option<String> {
        match how {
            Lookup::Id(id) => self.by_id.get(id).cloned(),
            Lookup::Name(name) => match self.by_name.get(name).map(Vec::as_slice) {
                Some([status]) => Some(status.clone()),
                _ => None,
            },
        }
    }
}

/// Checks one NotReady node against the listing (`None`: no listing was made).
async fn check_listed<C: Cloud>(
    ctx: &Context<C>,
    node: &CachedNode,
    listing: Option<&cloud::Result<Listing>>,
) -> Result<Outcome> {
    let how = lookup(node, ctx.cloud.region().as_deref())?;
    let listed = match listing {
        Some(Ok(listing)) => listing.status(&how).map(Ok),
        Some(Err(error)) => Some(Err(error.clone())),
        None => None,
    };
    let status = match listed {
        Some(status) => status,
        None => ctx.cloud.server(&how).await.map(|s| s.status),
    };
    act(ctx, node, status).await
}

/// Checks every cached node once: one server listing when any is NotReady (none when all are
/// Ready). Errors are counted and logged, never acted on.
pub async fn check_all<C: Cloud>(ctx: &Context<C>, nodes: &[Arc<CachedNode>]) {
    let listing = match nodes.iter().any(|n| !is_ready(n)) {
        true => Some(ctx.cloud.server_states().await.map(Listing::new)),
        false => None,
    };
    for node in nodes {
        match check_with(ctx, node, listing.as_ref()).await {
            Ok(outcome) => {
                ctx.metrics.reconcile(ControllerName::CloudNodeLifecycle, outcome.label())
            }
            Err(error) => {
                ctx.metrics.reconcile(ControllerName::CloudNodeLifecycle, error.kind().as_str());
                tracing::warn!(node = %node.name_any(), error = %crate::cloud::session::chain(&error), "lifecycle check failed; no action");
            }
        }
    }
}

/// Runs the check every `period` until the process ends.
pub(crate) async fn run<C: Cloud>(ctx: Arc<Context<C>>, period: Duration) {
    if !super::synced::node_cache(&ctx.nodes, ControllerName::CloudNodeLifecycle).await {
        return std::future::pending().await;
    }
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        check_all(&ctx, &ctx.nodes.state()).await;
    }
}

#[cfg(test)]
mod tests;
