//! The node condition `NetworkUnavailable`, as upstream's route controller writes it: `False`
//! with reason `RouteCreated` once the node's routes exist, `True` with the reason they cannot
//! be made. Written (a strategic merge patch of the status, merged by condition type) only
//! when it changes; a change to `True` also records a `FailedToCreateRoute` Event.

use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use kube_support::events::EventType;
use serde_json::json;

use super::plan::{self, NodeRoutes};
use super::{Failure, RouteContext, event, reason};
use crate::cloud::routes::Routes;
use crate::controllers::projection::{CachedNode, NETWORK_UNAVAILABLE};

/// Upstream's message for `RouteCreated`.
const CREATED_MESSAGE: &str = "RouteController created a route";
/// Upstream's Event reason for a route that could not be made.
pub(crate) const FAILED_EVENT: &str = "FailedToCreateRoute";

/// Writes the node's condition for `verdict` (`None`: its routes exist) unless it says so
/// already; returns whether it was written. `False` under any reason counts as said (a
/// network plugin may have written it), `True` only under the same reason.
pub(crate) async fn set<R: Routes>(
    ctx: &RouteContext<R>,
    node: &NodeRoutes,
    verdict: Option<&Failure>,
) -> bool {
    let (status, reason, message) = match verdict {
        None => ("False", reason::CREATED, CREATED_MESSAGE),
        Some(failure) => ("True", failure.reason, failure.message.as_str()),
    };
    let current = node.condition();
    let said = match current {
        Some(("False", _)) => status == "False",
        Some(("True", current)) => status == "True" && current == reason,
        _ => false,
    };
    if said {
        return false;
    }
    let now =
        jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| jiff::Timestamp::now());
    let now = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let condition = json!({
        "type": NETWORK_UNAVAILABLE, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": now, "lastHeartbeatTime": now,
    });
    let patch = json!({"status": {"conditions": [condition]}});
    let api: Api<CachedNode> = Api::all(ctx.client.clone());
    let written =
        api.patch_status(&node.name, &PatchParams::default(), &Patch::Strategic(&patch)).await;
    if let Err(error) = written {
        tracing::warn!(node = %node.name, %error, "cannot write NetworkUnavailable; next resync");
        return false;
    }
    match verdict {
        None => tracing::info!(node = %node.name, "routes created"),
        Some(failure) => {
            tracing::warn!(node = %node.name, reason = failure.reason, message = %failure.message, "routes not created");
            let note =
                format!("Could not create routes for node {}: {}", node.name, failure.message);
            event(ctx, node, EventType::Warning, FAILED_EVENT, note).await;
        }
    }
    true
}

/// A router-wide failure, told on every node still waiting for its routes (condition not
/// `False`); the loop calls it once per new message.
pub(crate) async fn tell_waiting<R: Routes>(
    ctx: &RouteContext<R>,
    nodes: &[Arc<CachedNode>],
    message: &str,
) {
    for node in plan::nodes(nodes, &ctx.settings.cluster) {
        if !matches!(node.condition(), Some(("False", _))) {
            let note = format!("Could not create routes for node {}: {message}", node.name);
            event(ctx, &node, EventType::Warning, FAILED_EVENT, note).await;
        }
    }
}
