//! Names and tags of what the service controller creates, upstream-compatible where users see them.
//!
//! The load balancer is named `kube_service_<cluster>_<namespace>_<name>` as the upstream CCM
//! names it, and carries that name and [`OWNER_TAG`] as tags: an object without the owner tag
//! was not created by this controller, whatever its name, and is never changed or deleted.

/// Octavia's limit for names and tags.
pub(crate) const MAX: usize = 255;

/// The tag on every Octavia and Neutron object this controller creates.
pub(crate) const OWNER_TAG: &str = "kube_managed_by_openstack-cloud-controller-manager";

/// How every load-balancer name (and so every Service's tag) begins.
pub(crate) const LOAD_BALANCER_PREFIX: &str = "kube_service_";

/// True when `tags` hold [`OWNER_TAG`]: this controller created the object.
pub(crate) fn is_ours(tags: &[String]) -> bool {
    tags.iter().any(|t| t == OWNER_TAG)
}

/// `kube_service_<cluster>_<namespace>_<name>`, cut to 255 bytes (on a character boundary).
pub(crate) fn load_balancer(cluster: &str, namespace: &str, name: &str) -> String {
    cut(format!("{LOAD_BALANCER_PREFIX}{cluster}_{namespace}_{name}"))
}

/// `lb-sg-<uid>-<namespace>-<name>`: upstream's name for a Service's member security group.
pub(crate) fn security_group(uid: &str, namespace: &str, name: &str) -> String {
    cut(format!("lb-sg-{uid}-{namespace}-{name}"))
}

/// `listener_<index>_<lb>`, `pool_<index>_<lb>`, `monitor_<index>_<lb>` (upstream's forms).
pub(crate) fn child(kind: &str, index: usize, load_balancer: &str) -> String {
    cut(format!("{kind}_{index}_{load_balancer}"))
}

fn cut(mut text: String) -> String {
    if text.len() > MAX {
        let mut end = MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
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
    fn names_longer_than_octavias_limit_are_cut_on_a_character_boundary() {
        let long = load_balancer(&"c".repeat(200), "ns", &"é".repeat(63));
        assert!(long.len() <= MAX && long.len() >= MAX - 1, "{}", long.len());
        assert!(long.starts_with("kube_service_ccc"));
    }
}
