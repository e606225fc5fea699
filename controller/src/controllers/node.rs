//! `cloud-node`: initialize tainted Nodes (providerID, addresses, labels, taint removal); the
//! periodic address refresh is resync.rs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube_support::events::EventType;
use serde_json::json;

use super::addresses::{self, AddressType, NodeAddress};
use super::{
    Context, ControllerName, Error, ErrorKind, PROVIDED_NODE_IP, Result, UNINITIALIZED_TAINT,
    has_taint, labels, lookup, provider_id, taints,
};
use crate::cloud::{Cloud, Instance};
use crate::controllers::projection::CachedNode;

/// What initialization writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `spec.providerID`, only when the node has none.
    pub(crate) provider_id: Option<String>,
    /// Labels to set.
    pub(crate) labels: BTreeMap<String, String>,
    /// `status.addresses`.
    pub(crate) addresses: Vec<NodeAddress>,
}

/// The addresses for a node: selection, kubelet's node IP, and kubelet's Hostname kept when the cloud has none.
pub(crate) fn node_addresses<C>(
    ctx: &Context<C>,
    node: &CachedNode,
    instance: &Instance,
) -> Result<Vec<NodeAddress>> {
    let networking = ctx.networking.borrow().clone();
    let mut list = addresses::select(instance, &networking);
    if let Some(provided) = node.annotations().get(PROVIDED_NODE_IP) {
        list = addresses::with_node_ip(&list, provided)
            .map_err(|message| Error::Node { node: node.name_any(), message })?;
    }
    let hostname = |a: &NodeAddress| a.kind == AddressType::Hostname;
    if !list.iter().any(hostname)
        && let Some(hostname) = current_addresses(node).into_iter().find(hostname)
    {
        list.push(hostname);
    }
    Ok(list)
}

/// Pure: what a tainted node gets from its server.
pub(crate) fn plan<C>(
    ctx: &Context<C>,
    node: &CachedNode,
    instance: &Instance,
    region: Option<&str>,
) -> Result<Plan> {
    let has_id =
        node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).is_some_and(|p| !p.is_empty());
    let provider_id =
        (!has_id).then(|| provider_id::format(&instance.server.id, region, ctx.regional));
    let mut labels = BTreeMap::new();
    if let Some(flavor) = instance.flavor_name.as_deref().filter(|f| !f.is_empty()) {
        let value =
            if labels::is_valid(flavor) { flavor.to_owned() } else { labels::sanitize(flavor) };
        labels.insert(labels::INSTANCE_TYPE.to_owned(), value);
    }
    let zone = labels::sanitize(&instance.server.availability_zone);
    if !zone.is_empty() {
        labels.insert(labels::ZONE.to_owned(), zone);
    }
    if let Some(region) = region.filter(|r| !r.is_empty()) {
        labels.insert(labels::REGION.to_owned(), labels::sanitize(region));
    }
    Ok(Plan { provider_id, labels, addresses: node_addresses(ctx, node, instance)? })
}

/// The node's `status.addresses` as stored.
fn stored_addresses(node: &CachedNode) -> &[k8s_openapi::api::core::v1::NodeAddress] {
    node.status.as_ref().and_then(|s| s.addresses.as_deref()).unwrap_or_default()
}

/// The node's current `status.addresses` of the types this controller writes; the others
/// (kubelet's `InternalDNS`, `ExternalDNS`) are left out.
pub(crate) fn current_addresses(node: &CachedNode) -> Vec<NodeAddress> {
    let known = stored_addresses(node).iter().filter_map(|a| {
        let kind = AddressType::from_wire(&a.type_)?;
        Some(NodeAddress { kind, address: a.address.clone() })
    });
    known.collect()
}

/// True when `status.addresses` is `wanted` exactly. An address of a type this controller
/// never writes makes them differ, so the patch replaces the list without it.
fn has_addresses(node: &CachedNode, wanted: &[NodeAddress]) -> bool {
    let stored = stored_addresses(node);
    stored.len() == wanted.len()
        && stored.iter().zip(wanted).all(|(have, want)| {
            AddressType::from_wire(&have.type_) == Some(want.kind) && have.address == want.address
        })
}

/// Writes `status.addresses` when it differs (a JSON merge patch replaces the whole list);
/// returns the updated Node, or `None` when nothing changed.
pub(crate) async fn patch_addresses<C: Cloud>(
    ctx: &Context<C>,
    node: &CachedNode,
    wanted: &[NodeAddress],
) -> Result<Option<CachedNode>> {
    if has_addresses(node, wanted) {
        return Ok(None);
    }
    let patch = json!({"status": {"addresses": wanted}});
    ctx.api()
        .patch_status(&node.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(Some)
        .map_err(|source| Error::Kube { node: node.name_any(), source })
}

/// Initializes one node: lookup (from the lists of many, else its own), addresses, then
/// providerID + labels + taint removal in one patch guarded by resourceVersion.
pub async fn initialize<C: Cloud>(ctx: &Context<C>, node: &CachedNode) -> Result<()> {
    let name = node.name_any();
    let region = ctx.cloud.region();
    let how = lookup(node, region.as_deref())?;
    let instance = match ctx.lookups.instance(ctx, &how).await {
        Some(instance) => instance,
        None => ctx
            .cloud
            .instance(&how)
            .await
            .map_err(|source| Error::Cloud { node: name.clone(), source })?,
    };
    let plan = plan(ctx, node, &instance, region.as_deref())?;
    // The status write bumps resourceVersion: guard the next patch with the new one.
    let live = |n: &str| ctx.nodes.get(&ObjectRef::new(n)).is_some();
    let updated = patch_addresses(ctx, node, &plan.addresses).await?;
    if let Some(updated) = &updated {
        ctx.own_writes.wrote(&name, node.resource_version(), updated.resource_version(), live);
    }
    let resource_version = updated.as_ref().unwrap_or(node).resource_version();
    let remaining: Vec<_> =
        taints(node).into_iter().filter(|t| t.key != UNINITIALIZED_TAINT).collect();
    let mut spec = json!({"taints": remaining});
    if let Some(id) = &plan.provider_id {
        spec["providerID"] = json!(id);
    }
    let patch = json!({
        "metadata": {"resourceVersion": resource_version, "labels": plan.labels},
        "spec": spec,
    });
    let written = ctx
        .api()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::Kube { node: name.clone(), source })?;
    ctx.own_writes.wrote(&name, node.resource_version(), written.resource_version(), live);
    tracing::info!(node = %name, server = %instance.server.id, "initialized");
    Ok(())
}

/// The `Controller` reconcile: only tainted nodes are touched.
#[tracing::instrument(skip_all, fields(node = %node.name_any()))]
pub(crate) async fn reconcile<C: Cloud>(
    node: Arc<CachedNode>,
    ctx: Arc<Context<C>>,
) -> Result<Action> {
    // A copy older than our own write would initialize the node a second time.
    if ctx.own_writes.is_stale(&node.name_any(), node.resource_version())
        || !ctx.initialize
        || !has_taint(&node, UNINITIALIZED_TAINT)
    {
        return Ok(Action::await_change());
    }
    match initialize(&ctx, &node).await {
        Ok(()) => {
            ctx.metrics.reconcile(ControllerName::CloudNode, "initialized");
            Ok(Action::await_change())
        }
        Err(error) => {
            if let Error::Node { message, .. } = &error {
                ctx.event(
                    &node,
                    EventType::Warning,
                    "ProviderInitializationFailed",
                    message.clone(),
                )
                .await;
            }
            Err(error)
        }
    }
}

/// Retry policy: conflicts soon, everything else after 10 s; the taint stays meanwhile.
pub(crate) fn error_policy<C: Cloud>(
    node: Arc<CachedNode>,
    error: &Error,
    ctx: Arc<Context<C>>,
) -> Action {
    ctx.metrics.reconcile(ControllerName::CloudNode, error.kind().as_str());
    let chain = crate::cloud::session::chain(error);
    tracing::warn!(node = %node.name_any(), error = %chain, "initialization failed; will retry");
    let delay = if error.kind() == ErrorKind::Conflict {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(10)
    };
    Action::requeue(delay)
}
