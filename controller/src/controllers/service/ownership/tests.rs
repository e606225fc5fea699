use std::sync::LazyLock;

use super::*;

const UID: &str = "6f1e0b9a-5d2c-4c8e-9f00-1234567890ab";
static WEB: LazyLock<ServiceId<'static>> =
    LazyLock::new(|| ServiceId::new("infra-7x", "shop", "web", UID));

fn lb(name: &str, description: &str, tags: &[&str]) -> LoadBalancer {
    LoadBalancer::marked(name, description, tags)
}

const OURS: &str = "kube_service_infra-7x_shop_web";
const DEFAULT: &str = "kube_service_kubernetes_shop_web";
const IN_TREE: &str = "a6f1e0b9a5d2c4c8e9f001234567890a";

#[test]
fn a_name_with_a_makers_mark_is_the_services_own_and_a_name_alone_is_not() {
    let described = "Kubernetes external service shop/web from cluster infra-7x";
    let cases = [
        (lb(OURS, "", &[OURS, names::OWNER_TAG]), Some(Maker::Us)),
        (lb(OURS, "", &[names::OWNER_TAG]), Some(Maker::Us)),
        // Upstream's CCM: its tag, or (an Octavia without tags) only its description.
        (lb(OURS, "", &[OURS]), Some(Maker::Upstream)),
        (lb(OURS, described, &[]), Some(Maker::Upstream)),
        // The name and nothing else: a user's.
        (lb(OURS, "made by hand", &["mine"]), None),
        // Described for another Service or cluster: not a mark for this one.
        (lb(OURS, "Kubernetes external service shop/api from cluster infra-7x", &[]), None),
        (lb(OURS, "Kubernetes external service shop/web from cluster other", &[]), None),
        // Under upstream's default cluster name: renamed to ours.
        (lb(DEFAULT, "", &[DEFAULT]), Some(Maker::DefaultCluster)),
        (
            lb(DEFAULT, "Kubernetes external service shop/web from cluster kubernetes", &[]),
            Some(Maker::DefaultCluster),
        ),
        (lb(DEFAULT, "", &[]), None),
        // The in-tree provider's, by its name and description; ours once adopted.
        (lb(IN_TREE, &format!("Kubernetes external service {IN_TREE}"), &[]), Some(Maker::InTree)),
        (lb(IN_TREE, "", &[OURS, names::OWNER_TAG]), Some(Maker::Us)),
        (lb(IN_TREE, "", &[]), None),
        // Another Service's load balancer, ours or not: never this one's own.
        (lb("kube_service_infra-7x_shop_api", "", &[names::OWNER_TAG]), None),
    ];
    for (lb, want) in cases {
        assert_eq!(maker(&lb, &WEB), want, "{lb:?}");
    }
}

#[test]
fn with_the_default_cluster_name_only_the_name_itself_is_looked_for() {
    let web = ServiceId::new("kubernetes", WEB.namespace, WEB.name, WEB.uid);
    assert_eq!(web.tags(), [DEFAULT]);
    assert_eq!(maker(&lb(DEFAULT, "", &[DEFAULT]), &web), Some(Maker::Upstream));
    assert_eq!(WEB.tags(), [OURS, DEFAULT]);
}

#[test]
fn relabelling_adds_our_tags_keeps_others_and_renames_only_the_default_cluster_ones() {
    let relabel_of = |lb: &LoadBalancer, maker| match relabel(lb, &WEB, maker) {
        Some(Change::UpdateLoadBalancer { name, description, tags }) => {
            Some((name, description, tags))
        }
        Some(other) => panic!("{other:?}"),
        None => None,
    };
    assert_eq!(relabel_of(&lb(OURS, "d", &[OURS, names::OWNER_TAG]), Maker::Us), None);
    // Upstream's: our owner tag beside its own and a sharer's.
    let shared = "kube_service_infra-7x_shop_api";
    let (name, description, tags) =
        relabel_of(&lb(OURS, "d", &[OURS, shared]), Maker::Upstream).unwrap();
    assert_eq!((name.as_str(), description.as_str()), (OURS, "d"));
    assert_eq!(tags, [OURS, shared, names::OWNER_TAG]);
    // Under the default cluster name: our name, description and tag, the old tag gone.
    let old = lb(
        DEFAULT,
        "Kubernetes external service shop/web from cluster kubernetes",
        &[DEFAULT, "x"],
    );
    let (name, description, tags) = relabel_of(&old, Maker::DefaultCluster).unwrap();
    assert_eq!(name, OURS);
    assert_eq!(description, "Kubernetes external service shop/web from cluster infra-7x");
    assert_eq!(tags, ["x", OURS, names::OWNER_TAG]);
    // The in-tree provider's keeps its name and description (a rollback finds it by them).
    let in_tree = lb(IN_TREE, "Kubernetes external service a6f1", &[]);
    let (name, description, tags) = relabel_of(&in_tree, Maker::InTree).unwrap();
    assert_eq!(
        (name.as_str(), description.as_str()),
        (IN_TREE, "Kubernetes external service a6f1")
    );
    assert_eq!(tags, [OURS, names::OWNER_TAG]);
}

#[test]
fn a_floating_ip_described_as_ours_is_ours_without_its_tags() {
    // Killed between the create and the tags: the description alone says it (issue 35).
    let fip = |description: &str, tags: &[&str]| FloatingIp {
        description: description.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..FloatingIp::default()
    };
    let own = lb(OURS, "", &[OURS, names::OWNER_TAG]);
    let is_own = |f: &FloatingIp| floating_ip_is_own(f, &own, &WEB);
    assert!(is_own(&fip(&format!("Floating IP for load balancer {OURS}"), &[])));
    assert!(is_own(&fip("", &[names::OWNER_TAG])));
    // Another Service's description, or a user's, is not.
    let other = "Floating IP for load balancer kube_service_infra-7x_shop_api";
    assert!(!is_own(&fip(other, &[])));
    assert!(!is_own(&fip("my address", &[])));
}

#[test]
fn a_security_group_described_as_ours_is_ours_without_its_tags() {
    let group = |description: String| SecurityGroup { description, ..SecurityGroup::default() };
    let ours = names::security_group_description("shop", "web", OURS);
    assert!(security_group_is_own(&group(ours), &WEB));
    let others = names::security_group_description("shop", "api", "kube_service_infra-7x_shop_api");
    assert!(!security_group_is_own(&group(others), &WEB));
    assert!(!security_group_is_own(&group("a user's".into()), &WEB));
}

#[test]
fn issue_36_an_adopted_floating_ip_marked_ours_stays_own_when_its_load_balancer_is_renamed() {
    let in_tree = lb(IN_TREE, &format!("Kubernetes external service {IN_TREE}"), &[]);
    // `migrate-load-balancers --to in-tree` then `--to external`: our name, our tags.
    let renamed =
        lb(OURS, &names::description("infra-7x", "shop", "web"), &[OURS, names::OWNER_TAG]);
    // The in-tree provider's: no description, no tags. Unmarked, the rename orphans it.
    let made = FloatingIp::default();
    assert!(floating_ip_is_own(&made, &in_tree, &WEB));
    assert!(!floating_ip_is_own(&made, &renamed, &WEB));
    let marks = floating_ip_marks(&made, &WEB);
    let upstreams = names::upstream_floating_ip("infra-7x", "shop", "web");
    assert_eq!(marks.description.as_deref(), Some(upstreams.as_str()));
    assert_eq!(marks.tags, [OURS, names::OWNER_TAG]);
    // Described (a kill before the tags), then tagged: its own under either name.
    let described = FloatingIp { description: upstreams, ..made };
    let marked = FloatingIp { tags: marks.tags, ..described.clone() };
    for fip in [&described, &marked] {
        assert!(floating_ip_is_own(fip, &in_tree, &WEB) && floating_ip_is_own(fip, &renamed, &WEB));
    }
    assert_eq!(floating_ip_marks(&marked, &WEB), FloatingIpMarks::default());
}

#[test]
fn a_described_floating_ip_keeps_its_description_and_gets_only_the_tags_it_lacks() {
    let fip = |tags: &[&str]| FloatingIp {
        description: names::upstream_floating_ip("infra-7x", "shop", "web"),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..FloatingIp::default()
    };
    // Allocated by this controller: nothing to add.
    assert_eq!(
        floating_ip_marks(&fip(&[OURS, names::OWNER_TAG]), &WEB),
        FloatingIpMarks::default()
    );
    // Upstream's, with a user's tag: ours added beside it.
    let marks = floating_ip_marks(&fip(&["users"]), &WEB);
    assert_eq!(
        marks,
        FloatingIpMarks { description: None, tags: vec![OURS.into(), names::OWNER_TAG.into()] }
    );
}
