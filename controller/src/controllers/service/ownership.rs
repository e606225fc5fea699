//! Whose load balancer is it: the one rule that decides whether a load balancer found for a
//! Service is the Service's own — made for it by a controller of this cluster, this one or
//! another — and so managed like one this controller made (adopted first, where another
//! controller made it), or someone else's, never changed.
//!
//! A load balancer is the Service's own when its name is one a controller of this cluster gives
//! the Service **and** that controller's mark is on it; a name alone proves nothing (anyone may
//! name a load balancer so):
//!
//! | made by | name | mark |
//! |---|---|---|
//! | this controller | `kube_service_<cluster>_<ns>_<name>`, or a name below once adopted | the tag [`names::OWNER_TAG`] |
//! | upstream's CCM | `kube_service_<cluster>_<ns>_<name>` | a tag equal to the name, or the description `Kubernetes external service <ns>/<name> from cluster <cluster>` |
//! | a CCM without `--cluster-name` | `kube_service_kubernetes_<ns>_<name>` (found through `load-balancer-id` only) | the same marks for cluster `kubernetes`; renamed to ours in place |
//! | the in-tree provider | `a` + the UID without dashes, 32 characters | the description `Kubernetes external service <that name>` |
//!
//! Adopting is relabelling, never recreating: the same load balancer, VIP, floating IP and
//! listeners, with our tags added (and, for the `kubernetes` cluster name, our names).

use super::names::{self, ServiceId};
use super::{Error, Result};
use crate::cloud::floating_ips::FloatingIp;
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::octavia::{Change, LoadBalancer};
use crate::cloud::security_groups::SecurityGroup;

/// Who made a Service's own load balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Maker {
    /// This controller (or adopted by it before): it carries our owner tag.
    Us,
    /// Upstream's CCM with this cluster's name: our tags are added.
    Upstream,
    /// A CCM running with upstream's default cluster name `kubernetes`: renamed to ours.
    DefaultCluster,
    /// The in-tree provider: our tags are added, its name kept.
    InTree,
}

/// What a Service's lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing: the Service gets a new load balancer.
    Nothing,
    /// The Service's own load balancer, by the rule above.
    Own(LoadBalancer, Maker),
    /// Another Service's or a user's load balancer, joined through `load-balancer-id`.
    Shared(LoadBalancer),
    /// One with the Service's name and none of the marks: left alone.
    Foreign(LoadBalancer),
}

/// Who made `lb` for `service`, if it is the Service's own.
pub(crate) fn maker(lb: &LoadBalancer, service: &ServiceId<'_>) -> Option<Maker> {
    let ours = names::is_ours(&lb.tags);
    let tagged = lb.tags.contains(&lb.name);
    let described = |cluster: &str| {
        lb.description == names::description(cluster, service.namespace, service.name)
    };
    if lb.name == service.load_balancer() {
        return match (ours, tagged || lb.description == service.description()) {
            (true, _) => Some(Maker::Us),
            (false, true) => Some(Maker::Upstream),
            (false, false) => None,
        };
    }
    if service.tags().get(1).is_some_and(|default| lb.name == *default)
        && (tagged || described(names::DEFAULT_CLUSTER))
    {
        return Some(Maker::DefaultCluster);
    }
    if let Some(in_tree) = service.in_tree()
        && lb.name == in_tree
    {
        if ours {
            return Some(Maker::Us);
        }
        let theirs = format!("Kubernetes external service {in_tree}");
        return (lb.description == theirs).then_some(Maker::InTree);
    }
    None
}

/// The call that gives the Service's own `lb` our tags (and, made under the default cluster
/// name, our name and description); `None` when it has them. Made after its listeners, so that
/// a relabel cut short is found again by its old marks and finished.
pub(crate) fn relabel(lb: &LoadBalancer, service: &ServiceId<'_>, maker: Maker) -> Option<Change> {
    let (name, description) = match maker {
        Maker::DefaultCluster => {
            (service.load_balancer().to_owned(), service.description().to_owned())
        }
        Maker::Us | Maker::Upstream | Maker::InTree => (lb.name.clone(), lb.description.clone()),
    };
    let tags = our_tags(lb, service);
    let same = name == lb.name && description == lb.description && tags == lb.tags;
    (!same).then_some(Change::UpdateLoadBalancer { name, description, tags })
}

/// `lb`'s tags with ours (the Service's load-balancer name and the owner tag) added and the
/// Service's name under the default cluster name dropped; every other tag kept.
pub(crate) fn our_tags(lb: &LoadBalancer, service: &ServiceId<'_>) -> Vec<String> {
    let stale = &service.tags()[1..];
    let mut tags: Vec<String> = lb.tags.iter().filter(|t| !stale.contains(t)).cloned().collect();
    for tag in [service.load_balancer().to_owned(), names::OWNER_TAG.to_owned()] {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

/// The Service's load balancer: the one `load-balancer-id` names, else the one with its name.
/// The second value is true when the annotation names a load balancer that no longer exists
/// (the caller clears it; upstream keeps it forever, its issue #2751).
pub(crate) async fn find<L: LoadBalancing>(
    cloud: &L,
    service: &ServiceId<'_>,
    annotated: Option<&str>,
) -> Result<(Found, bool)> {
    let mut stale = false;
    if let Some(id) = annotated {
        let doing = format!("looking up load balancer {id} (annotation load-balancer-id)");
        match cloud.load_balancer(id).await {
            Ok(lb) if lb.provisioning_status != "PENDING_DELETE" => {
                let found = match maker(&lb, service) {
                    Some(maker) => Found::Own(lb, maker),
                    None => Found::Shared(lb),
                };
                return Ok((found, false));
            }
            Ok(_) => stale = true,
            Err(e) if e.is_not_found() => stale = true,
            Err(source) => return Err(Error::Cloud { doing, source }),
        }
    }
    let found = named(cloud, service, service.load_balancer()).await?;
    let Some(in_tree) = service.in_tree().filter(|_| found == Found::Nothing) else {
        return Ok((found, stale));
    };
    // Made by the in-tree provider before the move to this controller? Its name comes from
    // the UID, so nobody else's can match; a foreign one of that name is only reported.
    let found = match named(cloud, service, in_tree).await? {
        Found::Foreign(_) => Found::Nothing,
        other => other,
    };
    Ok((found, stale))
}

/// The live load balancer named `name`, by the rule.
async fn named<L: LoadBalancing>(cloud: &L, service: &ServiceId<'_>, name: &str) -> Result<Found> {
    let doing = format!("looking up load balancer {name:?}");
    let found = cloud.load_balancers_named(name).await.map_err(Error::cloud(doing))?;
    let live = found.into_iter().filter(|lb| lb.provisioning_status != "PENDING_DELETE");
    let (own, foreign): (Vec<_>, Vec<_>) =
        live.map(|lb| (maker(&lb, service), lb)).partition(|(maker, _)| maker.is_some());
    Ok(match (own.len(), own.into_iter().next(), foreign.into_iter().next()) {
        (n @ 2.., _, _) => {
            let message = format!("{n} load balancers are named {name:?}; expected one");
            return Err(Error::Invalid(message));
        }
        (_, Some((Some(maker), lb)), _) => Found::Own(lb, maker),
        (_, _, Some((_, lb))) => Found::Foreign(lb),
        _ => Found::Nothing,
    })
}

/// A floating IP on the VIP of the Service's own load balancer `lb` that a controller
/// allocated for it, and so releases with it: ours (tagged, or described as ours when a kill
/// came before the tags; also one allocated with the address `spec.loadBalancerIP` asked for
/// when the project had none), upstream's (its description), or,
/// on a load balancer the in-tree provider made, one without description or tags (the in-tree
/// provider made the floating IP of its VIP so, and released it on delete). A user's pre-made
/// `spec.loadBalancerIP` carries none of these: only detached.
///
/// The in-tree provider's mark is the load balancer's name, which `migrate-load-balancers
/// --to external` changes: so an adopted floating IP gets ours ([`floating_ip_marks`]) before
/// its load balancer gets our tags (issue 36), and this last rule only bridges that moment.
pub(crate) fn floating_ip_is_own(
    fip: &FloatingIp,
    lb: &LoadBalancer,
    service: &ServiceId<'_>,
) -> bool {
    let in_tree = service.in_tree().is_some_and(|in_tree| lb.name == in_tree);
    let (namespace, name) = (service.namespace, service.name);
    names::is_ours(&fip.tags)
        || service.clusters().any(|(cluster, lb_name)| {
            fip.description == names::upstream_floating_ip(cluster, namespace, name)
                || fip.description == names::earlier_floating_ip(lb_name)
        })
        || (in_tree && fip.description.is_empty() && fip.tags.is_empty())
}

/// What a floating IP a controller made for the Service lacks of the marks of ours, which
/// name the Service and not its load balancer, so that no rename of the load balancer takes
/// them away.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FloatingIpMarks {
    /// A description, for one without any (the in-tree provider's): upstream's, which this
    /// controller and upstream's both take for a mark of their own. One that has a description
    /// keeps it (a controller's, by [`floating_ip_is_own`]).
    pub(crate) description: Option<String>,
    /// The tags of ours it lacks: the Service's load-balancer name and [`names::OWNER_TAG`]
    /// (its other tags stay).
    pub(crate) tags: Vec<String>,
}

/// The marks of ours `fip`, the Service's by [`floating_ip_is_own`], lacks: none for one this
/// controller allocated.
pub(crate) fn floating_ip_marks(fip: &FloatingIp, service: &ServiceId<'_>) -> FloatingIpMarks {
    let (cluster, namespace, name) = (service.cluster, service.namespace, service.name);
    let description =
        fip.description.is_empty().then(|| names::upstream_floating_ip(cluster, namespace, name));
    let ours = [service.load_balancer().to_owned(), names::OWNER_TAG.to_owned()];
    let tags = ours.into_iter().filter(|t| !fip.tags.contains(t)).collect();
    FloatingIpMarks { description, tags }
}

/// A security group named for the Service (`lb-sg-<uid>-<ns>-<name>`) that a controller made
/// for it: ours (tagged, or described as ours when a kill came before the tags) or upstream's
/// (its description), taken over and deleted with it.
pub(crate) fn security_group_is_own(group: &SecurityGroup, service: &ServiceId<'_>) -> bool {
    let (namespace, name) = (service.namespace, service.name);
    names::is_ours(&group.tags)
        || service.clusters().any(|(cluster, lb)| {
            group.description == names::upstream_security_group(cluster, namespace, name)
                || group.description == names::security_group_description(namespace, name, lb)
        })
}

/// Why a load balancer with the Service's name is left alone, and how to resolve it.
pub(crate) fn foreign_message(lb: &LoadBalancer) -> String {
    format!(
        "load balancer {} is named {:?} but carries no mark of a load balancer made for this \
         Service (the tag {}, a tag equal to its name, or the description {:?}): it is left \
         alone. Delete or rename it to get a new one, or tag it {} to hand it to this controller",
        lb.id,
        lb.name,
        names::OWNER_TAG,
        "Kubernetes external service <namespace>/<name> from cluster <cluster>",
        names::OWNER_TAG,
    )
}

#[cfg(test)]
mod tests;
