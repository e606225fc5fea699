//! Cleaning up after a Service: its listeners on a shared load balancer, or the load balancer
//! it owns with its floating IP; nothing this controller did not create is touched.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::runtime::events::EventType;
use serde_json::json;

use super::annotations;
use super::reconcile::{Foreign, converge, find_ours, write_ingress};
use super::{Error, Result, ServiceContext, diff, floating, names, security_group, wait};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::LoadBalancerSpec;

/// Everything this Service has in OpenStack goes: its listeners on a shared load balancer, or
/// the load balancer it owns with its floating IP. Nothing it did not create is touched.
pub(super) async fn cleanup<L: LoadBalancing>(
    service: &Service,
    ctx: &ServiceContext<L>,
) -> Result<()> {
    let settings =
        annotations::settings_for_cleanup(service.annotations(), &ctx.defaults, &ctx.classes);
    let lb_name = names::load_balancer(
        &ctx.cluster,
        &service.namespace().unwrap_or_default(),
        &service.name_any(),
    );
    let found = match &settings.load_balancer_id {
        Some(shared) => {
            let doing = format!("looking up load balancer {shared}");
            match ctx.cloud.load_balancer(shared).await {
                Ok(lb) => Some(lb),
                Err(e) if e.is_not_found() => None,
                Err(source) => return Err(Error::Cloud { doing, source }),
            }
        }
        None => find_ours(ctx.cloud.as_ref(), &lb_name, Foreign::Ignore).await?,
    };
    if let Some(lb) = found {
        let id = lb.id.clone();
        let note = format!("Deleting load balancer {id}");
        ctx.event(service, EventType::Normal, "DeletingLoadBalancer", note).await;
        let lb = match lb.provisioning_status.as_str() {
            s if s.starts_with("PENDING_") => {
                wait::settled(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?
            }
            _ => lb,
        };
        let doing = format!("reading load balancer {}", lb.id);
        let tree = ctx.cloud.tree(lb.clone()).await.map_err(Error::cloud(doing))?;
        let others = diff::services_on(&tree).into_iter().filter(|s| *s != lb_name).count();
        let owned = names::is_ours(&lb.tags);
        if owned && others == 0 {
            // The last Service on a load balancer this controller made: it goes, with its
            // floating IP (if ours).
            floating::release_all(ctx.cloud.as_ref(), &lb, settings.keep_floating_ip).await?;
            let doing = format!("deleting load balancer {}", lb.id);
            ctx.cloud.delete(&lb.id).await.map_err(Error::cloud(doing))?;
            wait::gone(ctx.cloud.as_ref(), &lb.id, ctx.wait_limit).await?;
        } else {
            // Shared with other Services, or not ours: only this Service's listeners go.
            let spec = LoadBalancerSpec { name: lb_name, ..LoadBalancerSpec::default() };
            converge(service, ctx, lb, &spec).await?;
        }
        let note = format!("Deleted load balancer {id}");
        ctx.event(service, EventType::Normal, "DeletedLoadBalancer", note).await;
    }
    // Looked for even with manage-security-groups off now: it may have been on before.
    let uid = service.metadata.uid.clone().unwrap_or_default();
    let (namespace, name) = (service.namespace().unwrap_or_default(), service.name_any());
    let owner =
        security_group::Owner { uid: &uid, namespace: &namespace, name: &name, load_balancer: "" };
    security_group::delete(ctx.cloud.as_ref(), owner).await?;
    if service.metadata.deletion_timestamp.is_none() {
        write_ingress(service, ctx, json!([])).await?;
    }
    Ok(())
}
