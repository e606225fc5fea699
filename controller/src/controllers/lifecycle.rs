//! `cloud-node-lifecycle`: a NotReady node whose server is gone is deleted, a `SHUTOFF` one is
//! tainted, a Ready one loses that taint. Any other error does nothing: a transient cloud
//! error never deletes a node.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Taint};
use kube::ResourceExt;
use kube::api::DeleteParams;
use kube::runtime::events::EventType;

use super::{
    Context, ControllerName, Error, Result, SHUTDOWN_TAINT, has_taint, is_ready, lookup,
    set_taints, taints,
};
use crate::cloud::Cloud;

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

/// Checks one node.
pub async fn check<C: Cloud>(ctx: &Context<C>, node: &Node) -> Result<Outcome> {
    let name = node.name_any();
    if is_ready(node) {
        if has_taint(node, SHUTDOWN_TAINT) {
            let kept = taints(node).into_iter().filter(|t| t.key != SHUTDOWN_TAINT).collect();
            set_taints(ctx, node, kept).await?;
            tracing::info!(node = %name, "ready again; shutdown taint removed");
            return Ok(Outcome::Untainted);
        }
        return Ok(Outcome::Unchanged);
    }
    let how = lookup(node, ctx.cloud.region().as_deref())?;
    let server = match ctx.cloud.server(&how).await {
        Ok(server) => server,
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
    if server.status == "SHUTOFF" && !has_taint(node, SHUTDOWN_TAINT) {
        let mut list = taints(node);
        list.push(Taint {
            key: SHUTDOWN_TAINT.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        });
        set_taints(ctx, node, list).await?;
        tracing::info!(node = %name, server = %server.id, "server SHUTOFF; shutdown taint added");
        return Ok(Outcome::Tainted);
    }
    Ok(Outcome::Unchanged)
}

/// Checks every cached node once; errors are counted and logged, never acted on.
pub(crate) async fn check_all<C: Cloud>(ctx: &Context<C>, nodes: &[Arc<Node>]) {
    for node in nodes {
        match check(ctx, node).await {
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
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        check_all(&ctx, &ctx.nodes.state()).await;
    }
}
