//! Cleaning up after a Service: its listeners on a shared load balancer, or its own load
//! balancer (by the ownership rule: ours, or one upstream's CCM or the in-tree provider made for
//! it) with the floating IP a controller made for it; nothing else is touched.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube_support::events::EventType;
use serde_json::json;

use super::names::ServiceId;
use super::ownership::{self, Found};
use super::service_api::write_ingress;
use super::settings::LbSettings;
use super::{
    Error, Result, ServiceContext, annotations, diff, floating, names, security_group, vip_port,
};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::LoadBalancerSpec;

/// Everything this Service has in OpenStack goes: its listeners on a shared load balancer, or
/// the load balancer it owns with its floating IP (and its VIP port, if Octavia left it).
/// Nothing it did not create is touched.
pub(super) async fn cleanup<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
    conf: &LbSettings,
) -> Result<()> {
    let settings =
        annotations::settings_for_cleanup(service.annotations(), &conf.defaults, &conf.classes);
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let id = ServiceId::new(&ctx.cluster, &namespace, &name, &uid);
    let annotated = settings.load_balancer_id.as_deref();
    let (found, own) = match ownership::find(ctx.cloud.as_ref(), &id, annotated).await?.0 {
        Found::Own(lb, _) => (Some(lb), true),
        Found::Shared(lb) => (Some(lb), false),
        // Not the Service's: nothing of its own to delete, the Service may go.
        Found::Foreign(_) | Found::Nothing => (None, false),
    };
    if let Some(lb) = found {
        let _turn = ctx.turns.take(&lb.id).await;
        let changes = ctx.changes();
        let lb_id = lb.id.clone();
        let note = format!("Deleting load balancer {lb_id}");
        ctx.event(service, EventType::Normal, "DeletingLoadBalancer", note).await;
        let lb = match lb.provisioning_status.as_str() {
            s if s.starts_with("PENDING_") => changes.settled(&lb).await?,
            _ => lb,
        };
        let doing = format!("reading load balancer {}", lb.id);
        let tree = ctx.cloud.tree(lb.clone()).await.map_err(Error::cloud(doing))?;
        let tags = id.tags();
        let others = diff::services_on(&tree).into_iter().filter(|s| !tags.iter().any(|t| t == s));
        if (own || names::is_ours(&lb.tags)) && others.count() == 0 {
            // The last Service on its own load balancer, or on one this controller made for
            // a Service since gone: it goes, with the floating IP a controller made for it.
            floating::release_all(ctx.cloud.as_ref(), &lb, &id, settings.keep_floating_ip).await?;
            changes.delete(&lb, "").await?;
            vip_port::clean_left(ctx.cloud.as_ref(), &lb, &id, settings.keep_floating_ip).await?;
        } else {
            // Shared with other Services: only this Service's listeners go.
            let name = id.load_balancer().to_owned();
            let spec = LoadBalancerSpec { name, ..LoadBalancerSpec::default() };
            let plan = changes.plan(lb, conf.target(&spec, &id, None, false)).await?;
            if !plan.changes.is_empty() {
                ctx.event(service, EventType::Normal, "EnsuringLoadBalancer", plan.summary()).await;
            }
            changes.make(plan).await?;
        }
        let note = format!("Deleted load balancer {lb_id}");
        ctx.event(service, EventType::Normal, "DeletedLoadBalancer", note).await;
    }
    // Looked for even with manage-security-groups off now: it may have been on before.
    let owner = security_group::Owner { service: &id, load_balancer: "" };
    security_group::delete(ctx.cloud.as_ref(), owner).await?;
    if service.metadata.deletion_timestamp.is_none() {
        write_ingress(service, ctx, json!([])).await?;
    }
    Ok(())
}
