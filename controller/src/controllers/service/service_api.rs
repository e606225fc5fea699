//! The writes to a Service: the finalizer (a JSON patch that tests it first), the
//! `load-balancer-id` annotation and the status ingress. Each is recorded (`own_writes`): the
//! copy it was made from, and every copy before our last write, are stale, and a reconcile on
//! one waits for the watch to bring the newer one (`run::reconcile_and_report`).

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube_support::events::EventType;
use serde_json::{Value, json};

use super::annotations::{self, Settings};
use super::{Error, FINALIZER, Result, ServiceContext};
use crate::cloud::load_balancing::LoadBalancing;

pub(super) fn api(service: &Service, ctx: &ServiceContext<impl LoadBalancing>) -> Api<Service> {
    Api::namespaced(ctx.client.clone(), &service.namespace().unwrap_or_default())
}

/// Adds the finalizer before the first Octavia call (guarded by the resourceVersion).
pub(super) async fn add_finalizer<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
) -> Result<()> {
    let mut finalizers = service.finalizers().to_vec();
    if finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(());
    }
    finalizers.push(FINALIZER.to_owned());
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": service.resource_version(),
    }});
    let doing = "adding the load-balancer finalizer";
    patch_service(service, ctx, Part::Object, &Patch::Merge(patch), doing).await
}

/// Removes the finalizer, guarded by the finalizer list as it was read (a JSON patch that tests
/// it first), not by the resourceVersion: the clean-up's own status write (the ingress cleared
/// when the Service stops being `type: LoadBalancer`) moves that, and a guard on it failed every
/// such removal once (a retry and a Warning Event for nothing). A failed test (422) or a
/// Service gone (404) means this copy from the cache is older than the server's: our own
/// removal already went through, or someone changed the list; either change's watch event
/// brings the Service back here if anything is left to do, so neither is a failure.
pub(super) async fn remove_finalizer<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
) -> Result<()> {
    let read = service.finalizers();
    let kept: Vec<&String> = read.iter().filter(|f| *f != FINALIZER).collect();
    let path = "/metadata/finalizers";
    let ops = json!([{"op": "test", "path": path, "value": read},
                     {"op": "replace", "path": path, "value": kept}]);
    let doing = "removing the load-balancer finalizer";
    match patch_service(service, ctx, Part::Object, &json_patch(ops)?, doing).await {
        Err(Error::Kube { source: kube::Error::Api(status), .. })
            if status.code == 404 || status.code == 422 =>
        {
            tracing::debug!(service = %super::key(service), code = status.code,
                "finalizer list moved since this copy was read; its watch event follows");
            Ok(())
        }
        done => done,
    }
}

/// A JSON patch (RFC 6902) from its operations written as JSON.
pub(super) fn json_patch(ops: Value) -> Result<Patch<Value>> {
    let ops = serde_json::from_value(ops).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(Patch::Json(ops))
}

/// Which part of the Service a patch writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Object,
    Status,
}

/// The one write to a Service: `patch` to its object or its status, recorded as ours.
async fn patch_service<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    part: Part,
    patch: &Patch<Value>,
    doing: &'static str,
) -> Result<()> {
    let (api, name, params) = (api(service, ctx), service.name_any(), PatchParams::default());
    let written = match part {
        Part::Object => api.patch(&name, &params, patch).await,
        Part::Status => api.patch_status(&name, &params, patch).await,
    }
    .map_err(|source| Error::Kube { doing, source })?;
    let key = super::key(service);
    let (read, written) = (service.resource_version(), written.resource_version());
    ctx.own_writes.wrote(&key, read, written, |key| ctx.is_live(key));
    Ok(())
}

/// Writes `load-balancer-id` on the Service: the ID of its own load balancer.
pub(super) async fn write_load_balancer_id<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    id: &str,
) -> Result<()> {
    let patch = json!({"metadata": {"annotations": {annotations::LOAD_BALANCER_ID: id}}});
    let doing = "writing the load-balancer-id annotation";
    patch_service(service, ctx, Part::Object, &Patch::Merge(patch), doing).await
}

/// Drops `load-balancer-id`, which names load balancer `gone`, no longer there: only while it
/// still names that one (a JSON patch that tests it first), so that a user's new value is
/// never lost.
pub(super) async fn clear_load_balancer_id<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    gone: &str,
) -> Result<()> {
    let path =
        format!("/metadata/annotations/{}", annotations::LOAD_BALANCER_ID.replace('/', "~1"));
    let ops = json!([{"op": "test", "path": path, "value": gone}, {"op": "remove", "path": path}]);
    let doing = "clearing the load-balancer-id annotation";
    patch_service(service, ctx, Part::Object, &json_patch(ops)?, doing).await?;
    let note = format!(
        "Load balancer {gone} of the annotation {} no longer exists: annotation cleared",
        annotations::LOAD_BALANCER_ID
    );
    ctx.event(service, EventType::Normal, "ClearedLoadBalancerId", note).await;
    Ok(())
}

/// `status.loadBalancer.ingress` as upstream writes it: the `hostname` annotation; for a
/// PROXY-protocol Service with `enable-ingress-hostname`, `<address>.<suffix>` (a hostname keeps
/// kube-proxy from short-cutting the load balancer); else the address with `ipMode` `Proxy`
/// (PROXY protocol) or `VIP`.
pub(crate) fn ingress(settings: &Settings, address: &str) -> Value {
    let proxy = settings.proxy_protocol.is_some();
    match (&settings.hostname, &settings.ingress_hostname_suffix) {
        (Some(hostname), _) => json!([{"hostname": hostname}]),
        (None, Some(suffix)) if proxy => json!([{"hostname": format!("{address}.{suffix}")}]),
        (None, _) => json!([{"ip": address, "ipMode": if proxy { "Proxy" } else { "VIP" }}]),
    }
}

pub(super) async fn set_ingress<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    settings: &Settings,
    address: &str,
) -> Result<()> {
    write_ingress(service, ctx, ingress(settings, address)).await
}

pub(super) async fn write_ingress<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    ingress: Value,
) -> Result<()> {
    let current = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|l| l.ingress.as_ref());
    let current = serde_json::to_value(current).unwrap_or(Value::Null);
    let empty = ingress.as_array().is_some_and(Vec::is_empty);
    if current == ingress || (empty && current.is_null()) {
        return Ok(());
    }
    let patch = json!({"status": {"loadBalancer": {"ingress": ingress}}});
    let doing = "writing the load balancer status";
    patch_service(service, ctx, Part::Status, &Patch::Merge(patch), doing).await
}

#[cfg(test)]
mod tests;
