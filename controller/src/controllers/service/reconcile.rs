//! One Service's reconcile: ensure (finalizer first, then the load balancer, its floating IP and
//! the Service's status) or clean up (everything ours gone, then the finalizer).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube_support::events::EventType;
use tracing::Instrument;

use super::ensure::ensure;
use super::service_api::{add_finalizer, remove_finalizer};
use super::{FINALIZER, Result, ServiceContext};
use crate::cloud::load_balancing::LoadBalancing;

/// The `spec.loadBalancerClass` this controller serves besides "unset".
pub(crate) const LOAD_BALANCER_CLASS: &str = "openstack.org/octavia";

/// Ensures or cleans up `service`'s load balancer, in one span `service{key=<ns>/<name>}`: every
/// line a reconcile logs (a load balancer created, a member batch, a retry) says whose it is.
pub(crate) async fn reconcile<L: LoadBalancing>(
    service: Arc<Service>,
    ctx: Arc<ServiceContext<L>>,
) -> Result<Action> {
    let span = tracing::info_span!("service", key = %super::key(&service));
    one(service, ctx).instrument(span).await
}

async fn one<L: LoadBalancing>(
    service: Arc<Service>,
    ctx: Arc<ServiceContext<L>>,
) -> Result<Action> {
    // The config as it is now, kept to the end of this reconcile.
    let Some(conf) = ctx.settings.borrow().clone() else {
        // `[LoadBalancer] enabled = false` came in: the controller is being stopped.
        return Ok(Action::await_change());
    };
    if wants_load_balancer(&service) {
        add_finalizer(&service, &ctx).await?;
        ensure(&service, &ctx, &conf).await?;
        return Ok(Action::requeue(ctx.resync));
    }
    if let Some(class) = other_class(&service) {
        let note = format!(
            "spec.loadBalancerClass is {class:?}, not {LOAD_BALANCER_CLASS:?} or unset: this \
             controller leaves the Service to the controller of that class"
        );
        ctx.notice(&service, EventType::Normal, "LoadBalancerClassNotOurs", note).await;
    }
    if service.finalizers().iter().any(|f| f == FINALIZER) {
        ctx.converged.forget(&super::key(&service));
        super::cleanup::cleanup(&service, &ctx, &conf).await?;
        remove_finalizer(&service, &ctx).await?;
        ctx.notices.forget(&super::key(&service));
        ctx.left_out.forget(&super::key(&service));
    }
    Ok(Action::await_change())
}

/// The class of a live `type: LoadBalancer` Service that another controller serves.
fn other_class(service: &Service) -> Option<&str> {
    let spec = service.spec.as_ref()?;
    let class = spec.load_balancer_class.as_deref().filter(|c| *c != LOAD_BALANCER_CLASS)?;
    let live = service.metadata.deletion_timestamp.is_none();
    (live && spec.type_.as_deref() == Some("LoadBalancer")).then_some(class)
}

/// `type: LoadBalancer`, not being deleted, and of no other controller's class.
pub(crate) fn wants_load_balancer(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    service.metadata.deletion_timestamp.is_none()
        && spec.and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
        && spec
            .and_then(|s| s.load_balancer_class.as_deref())
            .is_none_or(|class| class == LOAD_BALANCER_CLASS)
}
