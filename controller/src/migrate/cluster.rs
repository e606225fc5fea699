//! Which cluster's load balancers `migrate-load-balancers` moves: the one our owner tag names.
//!
//! A CCM of a generated cluster runs with `--cluster-name=<infraID>`; run without the flag, the
//! command looked for `kube_service_kubernetes_…` and found nothing, exited 0, and the in-tree
//! provider started next made a second load balancer for every Service. So the cluster comes
//! from what our CCM wrote: each Service's `load-balancer-id` names its load balancer, whose tags
//! hold our owner tag and `kube_service_<cluster>_<namespace>_<name>`.

use std::collections::BTreeMap;

use crate::controllers::service::names;

/// The cluster a Service's load balancer was tagged for, read off its tags: `None` unless it
/// carries our owner tag and a `kube_service_<cluster>_<namespace>_<name>` tag for this Service
/// (a name cut to Octavia's limit ends in a hash and says nothing).
pub(crate) fn tagged(tags: &[String], namespace: &str, name: &str) -> Option<String> {
    if !names::is_ours(tags) {
        return None;
    }
    let suffix = format!("_{namespace}_{name}");
    let clusters = tags.iter().filter_map(|tag| {
        let cluster = tag.strip_prefix(names::LOAD_BALANCER_PREFIX)?.strip_suffix(&suffix)?;
        let whole = names::load_balancer(cluster, namespace, name) == *tag;
        (whole && !cluster.is_empty()).then_some(cluster)
    });
    // Upstream's default name may sit beside ours on a load balancer adopted from it.
    let (default, own): (Vec<&str>, Vec<&str>) =
        clusters.partition(|c| *c == names::DEFAULT_CLUSTER);
    own.first().or(default.first()).map(|c| (*c).to_owned())
}

/// One Service's load balancer and the cluster its tags name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tagged {
    /// `namespace/name` of the Service.
    pub(crate) service: String,
    /// The load balancer `load-balancer-id` names.
    pub(crate) load_balancer: String,
    /// The cluster of its tags.
    pub(crate) cluster: String,
}

/// The cluster to work on: `given` (`--cluster-name`) when every tag agrees with it, else the
/// one cluster the tags name, else upstream's default `kubernetes`. `Err` (the run is refused
/// before any change) names the disagreement.
pub(crate) fn choose(given: Option<&str>, tagged: &[Tagged]) -> Result<String, String> {
    let mut clusters: BTreeMap<&str, &Tagged> = BTreeMap::new();
    for t in tagged {
        clusters.entry(t.cluster.as_str()).or_insert(t);
    }
    let example = |t: &Tagged| {
        format!(
            "load balancer {} of Service {} is tagged for cluster {:?}",
            t.load_balancer, t.service, t.cluster
        )
    };
    if let Some(given) = given {
        if let Some(t) = clusters.iter().find(|(c, _)| **c != given).map(|(_, t)| *t) {
            return Err(format!(
                "--cluster-name is {given:?} but {}: the CCM runs with --cluster-name={:?}; \
                 run again with that, or without --cluster-name",
                example(t),
                t.cluster
            ));
        }
        return Ok(given.to_owned());
    }
    match clusters.values().collect::<Vec<_>>().as_slice() {
        [] => Ok(names::DEFAULT_CLUSTER.to_owned()),
        [one] => Ok(one.cluster.clone()),
        [first, second, ..] => Err(format!(
            "the load balancers name more than one cluster: {}, and {}; pass --cluster-name",
            example(first),
            example(second)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn the_cluster_is_read_off_our_tags() {
        let ours = tags(&["kube_service_infra-7x_shop_web", names::OWNER_TAG]);
        assert_eq!(tagged(&ours, "shop", "web").as_deref(), Some("infra-7x"));
        // Cluster names may hold `_`: the Service's own suffix is what is cut off.
        let underscore = tags(&[names::OWNER_TAG, "kube_service_a_b_shop_web"]);
        assert_eq!(tagged(&underscore, "shop", "web").as_deref(), Some("a_b"));
        // Adopted from upstream's default cluster: ours wins over the default's name.
        let both = tags(&[
            "kube_service_kubernetes_shop_web",
            "kube_service_infra_shop_web",
            names::OWNER_TAG,
        ]);
        assert_eq!(tagged(&both, "shop", "web").as_deref(), Some("infra"));
    }

    #[test]
    fn no_owner_tag_or_another_services_tag_names_no_cluster() {
        assert_eq!(tagged(&tags(&["kube_service_infra_shop_web"]), "shop", "web"), None);
        let other = tags(&["kube_service_infra_shop_api", names::OWNER_TAG]);
        assert_eq!(tagged(&other, "shop", "web"), None);
        // A name cut to 255 bytes ends in a hash, not in the Service's name.
        let long = "n".repeat(300);
        let cut = names::load_balancer("infra", "shop", &long);
        assert_eq!(tagged(&tags(&[&cut, names::OWNER_TAG]), "shop", &long), None);
    }

    fn t(service: &str, cluster: &str) -> Tagged {
        Tagged {
            service: service.into(),
            load_balancer: format!("lb-{service}"),
            cluster: cluster.into(),
        }
    }

    #[test]
    fn the_tags_choose_the_cluster_and_a_disagreeing_flag_is_refused() {
        assert_eq!(choose(None, &[]).unwrap(), "kubernetes");
        assert_eq!(choose(None, &[t("shop/a", "infra"), t("shop/b", "infra")]).unwrap(), "infra");
        assert_eq!(choose(Some("infra"), &[t("shop/a", "infra")]).unwrap(), "infra");
        assert_eq!(choose(Some("given"), &[]).unwrap(), "given");
        let refused = choose(Some("kubernetes"), &[t("shop/a", "infra")]).unwrap_err();
        assert!(refused.contains("--cluster-name is \"kubernetes\""), "{refused}");
        assert!(
            refused.contains("lb-shop/a of Service shop/a is tagged for cluster \"infra\""),
            "{refused}"
        );
        let two = choose(None, &[t("shop/a", "infra"), t("shop/b", "other")]).unwrap_err();
        assert!(two.contains("\"infra\"") && two.contains("\"other\""), "{two}");
    }
}
