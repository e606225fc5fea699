//! Names and tags of what the service controller creates, upstream-compatible where users see them.
//!
//! The load balancer is named `kube_service_<cluster>_<namespace>_<name>` as the upstream CCM
//! names it, and carries that name and [`OWNER_TAG`] as tags: an object without the owner tag
//! was not created by this controller, whatever its name, and is never changed or deleted.
//! A name longer than Octavia's 255 bytes ends in a hash of the whole name instead of being
//! only cut (upstream cuts, so two long Services that differ only at the end share one name
//! there, and so one load balancer).

use sha2::{Digest, Sha256};

/// Octavia's limit for names and tags.
pub(crate) const MAX: usize = 255;

/// The tag on every Octavia and Neutron object this controller creates.
pub(crate) const OWNER_TAG: &str = "kube_managed_by_openstack-cloud-controller-manager";

/// How every load-balancer name (and so every Service's tag) begins.
pub(crate) const LOAD_BALANCER_PREFIX: &str = "kube_service_";

/// Upstream's `--cluster-name` default, the cluster component of the load balancers an
/// upstream CCM made without the flag.
pub(crate) const DEFAULT_CLUSTER: &str = "kubernetes";

/// Which Service, in which cluster, with the names its objects are made and found by,
/// computed once (`ServiceId::new`): its load-balancer name (also the tag naming it on a
/// listener or a shared load balancer), the one upstream gives it under the default cluster
/// name, the load balancer's description, the in-tree provider's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceId<'a> {
    pub(crate) cluster: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    /// `metadata.uid` (the in-tree provider named load balancers after it).
    pub(crate) uid: &'a str,
    /// [`load_balancer`] in `cluster`, then, when the cluster has its own name, in upstream's
    /// [`DEFAULT_CLUSTER`].
    tags: Vec<String>,
    description: String,
    in_tree: Option<String>,
}

impl<'a> ServiceId<'a> {
    pub(crate) fn new(cluster: &'a str, namespace: &'a str, name: &'a str, uid: &'a str) -> Self {
        let mut tags = vec![load_balancer(cluster, namespace, name)];
        if cluster != DEFAULT_CLUSTER {
            tags.push(load_balancer(DEFAULT_CLUSTER, namespace, name));
        }
        let description = description(cluster, namespace, name);
        let in_tree = (!uid.is_empty()).then(|| in_tree(uid));
        ServiceId { cluster, namespace, name, uid, tags, description, in_tree }
    }

    /// `kube_service_<cluster>_<namespace>_<name>` ([`load_balancer`]).
    pub(crate) fn load_balancer(&self) -> &str {
        &self.tags[0]
    }

    /// The tags that name this Service on a listener or among a load balancer's sharers: its
    /// load-balancer name and, when the cluster has its own name, the one upstream would give
    /// it under the default cluster name.
    pub(crate) fn tags(&self) -> &[String] {
        &self.tags
    }

    /// The clusters whose controllers' names and descriptions count as marks for the Service
    /// (its own, and upstream's default), each with the Service's load-balancer name there.
    pub(crate) fn clusters(&self) -> impl Iterator<Item = (&'a str, &str)> {
        let default = (self.cluster != DEFAULT_CLUSTER).then_some(DEFAULT_CLUSTER);
        std::iter::once(self.cluster).chain(default).zip(self.tags.iter().map(String::as_str))
    }

    /// The description upstream (and this controller) gives its load balancer
    /// ([`description`]).
    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// The in-tree provider's name for its load balancer ([`in_tree`]); none without a UID.
    pub(crate) fn in_tree(&self) -> Option<&str> {
        self.in_tree.as_deref()
    }
}

/// True when `tags` hold [`OWNER_TAG`]: this controller created the object.
pub(crate) fn is_ours(tags: &[String]) -> bool {
    tags.iter().any(|t| t == OWNER_TAG)
}

/// `kube_service_<cluster>_<namespace>_<name>`; beyond 255 bytes, its first 246 bytes (on a
/// character boundary), `_` and 8 hex digits of the whole name's SHA-256, so that it stays
/// unique.
pub(crate) fn load_balancer(cluster: &str, namespace: &str, name: &str) -> String {
    let full = format!("{LOAD_BALANCER_PREFIX}{cluster}_{namespace}_{name}");
    if full.len() <= MAX {
        return full;
    }
    let digest = Sha256::digest(full.as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let mut short = full;
    truncate(&mut short, MAX - 1 - hash.len());
    format!("{short}_{hash}")
}

/// The description upstream (and this controller) gives a Service's load balancer.
pub(crate) fn description(cluster: &str, namespace: &str, name: &str) -> String {
    cut(format!("Kubernetes external service {namespace}/{name} from cluster {cluster}"))
}

/// The description of the floating IP a controller allocates for a Service: upstream's, and
/// this controller's too. Upstream's CCM releases only floating IPs so described
/// (`deleteFIPIfCreatedByProvider` in its `pkg/openstack/loadbalancer.go`), so one of ours is
/// released by upstream when the Service goes after a hand-back. It also marks a floating IP as
/// a controller's by itself: the tags come in a second call, and a controller killed between
/// the two must still know it for its own.
pub(crate) fn upstream_floating_ip(cluster: &str, namespace: &str, name: &str) -> String {
    cut(format!(
        "Floating IP for Kubernetes external service {namespace}/{name} from cluster {cluster}"
    ))
}

/// The description earlier versions of this controller gave the floating IP they allocated for
/// load balancer `lb_name` (upstream's CCM leaves such a one allocated): still a mark of ours,
/// so that those are released with their Service.
pub(crate) fn earlier_floating_ip(lb_name: &str) -> String {
    cut(format!("Floating IP for load balancer {lb_name}"))
}

/// The description this controller gives the security group of Service `namespace/name`
/// served by load balancer `lb_name`: a mark of ours by itself (the tags come in a second
/// call).
pub(crate) fn security_group_description(namespace: &str, name: &str, lb_name: &str) -> String {
    cut(format!(
        "Security group for the members of Service {namespace}/{name} (load balancer {lb_name})"
    ))
}

/// The description upstream gives a Service's security group.
pub(crate) fn upstream_security_group(cluster: &str, namespace: &str, name: &str) -> String {
    cut(format!("Security Group for {namespace}/{name} Service LoadBalancer in cluster {cluster}"))
}

/// The in-tree provider's load-balancer name: `a` and the Service's UID without dashes, cut to
/// 32 characters (k8s.io/cloud-provider's `DefaultLoadBalancerName`).
pub(crate) fn in_tree(uid: &str) -> String {
    let mut name: String = std::iter::once('a').chain(uid.chars().filter(|c| *c != '-')).collect();
    truncate(&mut name, 32);
    name
}

/// `lb-sg-<uid>-<namespace>-<name>`: upstream's name for a Service's member security group.
pub(crate) fn security_group(uid: &str, namespace: &str, name: &str) -> String {
    cut(format!("lb-sg-{uid}-{namespace}-{name}"))
}

/// `listener_<index>_<lb>`, `pool_<index>_<lb>`, `monitor_<index>_<lb>` (upstream's forms).
pub(crate) fn child(kind: &str, index: usize, load_balancer: &str) -> String {
    cut(format!("{kind}_{index}_{load_balancer}"))
}

/// `text` cut to Octavia's and Neutron's 255 bytes: for descriptions, which name the cluster
/// and so may be longer.
pub(crate) fn cut(mut text: String) -> String {
    truncate(&mut text, MAX);
    text
}

/// Cuts `text` to at most `max` bytes, on a character boundary.
fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_balancer_name_is_upstreams() {
        assert_eq!(
            load_balancer("kubernetes", "default", "web"),
            "kube_service_kubernetes_default_web"
        );
        assert_eq!(child("listener", 1, "lb"), "listener_1_lb");
    }

    #[test]
    fn names_longer_than_octavias_limit_are_cut_on_a_character_boundary_and_stay_unique() {
        let long = load_balancer(&"c".repeat(200), "ns", &"é".repeat(63));
        assert!(long.len() <= MAX && long.len() >= MAX - 1, "{}", long.len());
        assert!(long.starts_with("kube_service_ccc"));
        let cluster = "c".repeat(240);
        let (a, b) =
            (load_balancer(&cluster, "ns", "web-a"), load_balancer(&cluster, "ns", "web-b"));
        assert_ne!(a, b);
        assert_eq!(a.len(), MAX);
        assert_eq!(a, load_balancer(&cluster, "ns", "web-a"), "stable");
        // 13 + 200 + 3 + 3 = 219 bytes: not cut, upstream's name.
        assert_eq!(load_balancer(&"c".repeat(200), "n", "web").len(), 13 + 200 + 1 + 1 + 1 + 3);
        let long_child = child("listener", 12, &a);
        assert_eq!(long_child.len(), MAX);
    }

    #[test]
    fn our_floating_ips_are_described_so_that_upstreams_ccm_releases_them() {
        // Upstream's deleteFIPIfCreatedByProvider: regexp.Match of this text on the description.
        let upstream_releases = |d: &str| d.contains("Floating IP for Kubernetes external service");
        assert!(upstream_releases(&upstream_floating_ip("c", "ns", "web")));
        assert_eq!(
            upstream_floating_ip("c", "ns", "web"),
            "Floating IP for Kubernetes external service ns/web from cluster c"
        );
        assert!(!upstream_releases(&earlier_floating_ip("kube_service_c_ns_web")));
    }

    #[test]
    fn the_in_tree_name_is_a_and_the_uid_without_dashes_cut_to_32() {
        assert_eq!(
            in_tree("6f1e0b9a-5d2c-4c8e-9f00-1234567890ab"),
            "a6f1e0b9a5d2c4c8e9f001234567890a"
        );
        assert_eq!(in_tree("short"), "ashort");
        assert_eq!(
            description("c", "ns", "web"),
            "Kubernetes external service ns/web from cluster c"
        );
    }
}
