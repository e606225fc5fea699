//! Which objects of a project are cluster X's, for `purge`: the service controller's ownership
//! rule (`controllers/service/ownership.rs`) read backwards, from the object to its Service.
//! Each object names its Service (`<namespace>/<name>`, which hold no `_`: Kubernetes names are
//! DNS labels) in its name, a tag or its description; the cluster is taken as X only when the
//! object's name or tag is exactly the one a controller of X gives that Service, and the
//! object also carries a controller's mark. A name alone proves nothing.

use crate::cloud::floating_ips::FloatingIp;
use crate::cloud::octavia::{Listener, LoadBalancer};
use crate::cloud::security_groups::SecurityGroup;
use crate::controllers::service::names::{self, ServiceId};
use crate::controllers::service::ownership;

/// A Service of the cluster, as an object names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Named {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What the rule says of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Cluster X's, made for this Service.
    Ours(Named),
    /// Left alone, and why (printed with `--verbose`).
    Left(String),
}

/// `kube_service_<cluster>_<namespace>_<name>` read as the Service of `cluster`: the rest after
/// the cluster must be exactly two parts.
fn service_of_name(text: &str, cluster: &str) -> Option<Named> {
    let rest = text.strip_prefix(names::LOAD_BALANCER_PREFIX)?.strip_prefix(cluster)?;
    let (namespace, name) = rest.strip_prefix('_')?.split_once('_')?;
    let valid = |part: &str| !part.is_empty() && !part.contains('_');
    (valid(namespace) && valid(name) && names::load_balancer(cluster, namespace, name) == text)
        .then(|| Named { namespace: namespace.to_owned(), name: name.to_owned() })
}

/// `<namespace>/<name>` between `before` and `after` in `text`.
fn service_between(text: &str, before: &str, after: &str) -> Option<Named> {
    let rest = text.strip_prefix(before)?;
    let (service, _) = rest.split_once(after)?;
    let (namespace, name) = service.split_once('/')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains('/'))
        .then(|| Named { namespace: namespace.to_owned(), name: name.to_owned() })
}

/// Our owner tag and a tag naming a Service of `cluster`.
fn tagged_for(tags: &[String], cluster: &str) -> Option<Named> {
    if !names::is_ours(tags) {
        return None;
    }
    tags.iter().find_map(|tag| service_of_name(tag, cluster))
}

/// True when the object looks like a Kubernetes Service's (so a line says why it is left).
fn looks_like_kubernetes(texts: &[&str]) -> bool {
    texts.iter().any(|t| {
        t.starts_with(names::LOAD_BALANCER_PREFIX)
            || t.contains("Kubernetes external service")
            || t.starts_with("lb-sg-")
            || t.contains("Service LoadBalancer")
            || t.contains("for the members of Service")
            || *t == names::OWNER_TAG
    })
}

/// The verdict for an object that no rule gave to `cluster`; `named` when its name is the one
/// a controller of `cluster` gives a Service's (a look-alike, then).
fn left(texts: &[&str], cluster: &str, named: Option<&Named>) -> Verdict {
    let why = match named {
        Some(service) => format!(
            "named as cluster {cluster:?} names Service {service}'s, but carries no mark of a \
             controller (our tag {}, a tag equal to its name, upstream's description): a \
             look-alike",
            names::OWNER_TAG
        ),
        None if looks_like_kubernetes(texts) => {
            format!("not cluster {cluster:?}'s: no mark of a controller of it (another cluster's?)")
        }
        None => "not a Kubernetes Service's".to_owned(),
    };
    Verdict::Left(why)
}

/// A load balancer: cluster X's when our tags name one of X's Services, or when its name is the
/// one X gives a Service (read from the name, or from the description for a name cut to
/// Octavia's limit) and it carries our mark or upstream's CCM's.
pub(crate) fn load_balancer(lb: &LoadBalancer, cluster: &str) -> Verdict {
    if let Some(service) = tagged_for(&lb.tags, cluster) {
        return Verdict::Ours(service);
    }
    let described =
        service_between(&lb.description, "Kubernetes external service ", " from cluster ");
    let by_name = service_of_name(&lb.name, cluster);
    for service in by_name.iter().chain(&described) {
        let id = ServiceId::new(cluster, &service.namespace, &service.name, "");
        if lb.name == id.load_balancer() && ownership::maker(lb, &id).is_some() {
            return Verdict::Ours(service.clone());
        }
    }
    let tags: Vec<&str> = lb.tags.iter().map(String::as_str).collect();
    let texts = [&[lb.name.as_str(), lb.description.as_str()], tags.as_slice()].concat();
    left(&texts, cluster, by_name.as_ref())
}

/// A listener on a load balancer that is not X's (a Service of X joined it through
/// `load-balancer-id`): X's when our tags name one of X's Services, as the service controller
/// tags every listener it makes.
pub(crate) fn listener(listener: &Listener, cluster: &str) -> Option<Named> {
    tagged_for(&listener.tags, cluster)
}

/// A floating IP: cluster X's when a controller of X allocated it for a Service (its
/// description, upstream's and ours, names the Service and X; or our tags do).
pub(crate) fn floating_ip(fip: &FloatingIp, cluster: &str) -> Verdict {
    if let Some(service) = tagged_for(&fip.tags, cluster) {
        return Verdict::Ours(service);
    }
    let upstream = service_between(
        &fip.description,
        "Floating IP for Kubernetes external service ",
        " from cluster ",
    )
    .filter(|s| fip.description == names::upstream_floating_ip(cluster, &s.namespace, &s.name));
    let earlier = fip
        .description
        .strip_prefix("Floating IP for load balancer ")
        .and_then(|lb| service_of_name(lb, cluster));
    match upstream.or(earlier) {
        Some(service) => Verdict::Ours(service),
        None => {
            let tags: Vec<&str> = fip.tags.iter().map(String::as_str).collect();
            left(&[&[fip.description.as_str()], tags.as_slice()].concat(), cluster, None)
        }
    }
}

/// A security group: cluster X's when our tags name one of X's Services, or its description is
/// the one a controller of X gives a Service's group (ours names X's load balancer, upstream's
/// names X).
pub(crate) fn security_group(group: &SecurityGroup, cluster: &str) -> Verdict {
    if let Some(service) = tagged_for(&group.tags, cluster) {
        return Verdict::Ours(service);
    }
    let d = group.description.as_str();
    let ours = service_between(d, "Security group for the members of Service ", " (load balancer ")
        .filter(|s| {
            let lb = names::load_balancer(cluster, &s.namespace, &s.name);
            d == names::security_group_description(&s.namespace, &s.name, &lb)
        });
    let upstream = service_between(d, "Security Group for ", " Service LoadBalancer in cluster ")
        .filter(|s| d == names::upstream_security_group(cluster, &s.namespace, &s.name));
    match ours.or(upstream) {
        Some(service) => Verdict::Ours(service),
        None => {
            let tags: Vec<&str> = group.tags.iter().map(String::as_str).collect();
            left(&[&[group.name.as_str(), d], tags.as_slice()].concat(), cluster, None)
        }
    }
}

#[cfg(test)]
mod tests;
