use std::sync::LazyLock;

use super::*;

const UID: &str = "6f1e0b9a-5d2c-4c8e-9f00-1234567890ab";
static WEB: LazyLock<ServiceId<'static>> =
    LazyLock::new(|| ServiceId::new("infra", "shop", "web", UID));
const OURS: &str = "kube_service_infra_shop_web";
const IN_TREE: &str = "a6f1e0b9a5d2c4c8e9f001234567890a";

fn lb(name: &str, tags: &[&str], status: &str) -> LoadBalancer {
    LoadBalancer { provisioning_status: status.into(), ..LoadBalancer::marked(name, "d", tags) }
}

#[test]
fn to_in_tree_renames_our_own_load_balancer_and_keeps_our_tags() {
    let own = Found::Own(lb(OURS, &[OURS, names::OWNER_TAG], ACTIVE), Maker::Us);
    let Step::Rename { from, name, description, tags, .. } = step(Target::InTree, &own, 0, &WEB)
    else {
        panic!()
    };
    assert_eq!((from.as_str(), name.as_str()), (OURS, IN_TREE));
    assert_eq!(description, format!("Kubernetes external service {IN_TREE}"));
    assert_eq!(tags, [OURS, names::OWNER_TAG]);
    // Run twice: already there.
    let moved = Found::Own(lb(IN_TREE, &[OURS, names::OWNER_TAG], ACTIVE), Maker::Us);
    assert!(matches!(step(Target::InTree, &moved, 0, &WEB), Step::Done(_)));
}

#[test]
fn shared_busy_and_foreign_load_balancers_are_not_handed_back() {
    let own = Found::Own(lb(OURS, &[names::OWNER_TAG], ACTIVE), Maker::Us);
    let skip = |found: &Found, others| match step(Target::InTree, found, others, &WEB) {
        Step::Skip(why) => why,
        other => panic!("{other:?}"),
    };
    assert!(skip(&own, 1).contains("also serves 1 other"));
    let busy = Found::Own(lb(OURS, &[names::OWNER_TAG], "PENDING_UPDATE"), Maker::Us);
    assert!(skip(&busy, 0).contains("PENDING_UPDATE, not ACTIVE"));
    assert!(skip(&Found::Shared(lb("other", &[], ACTIVE)), 0).contains("no sharing"));
    assert!(skip(&Found::Foreign(lb(OURS, &[], ACTIVE)), 0).contains("not this Service's"));
    assert!(matches!(step(Target::InTree, &Found::Nothing, 0, &WEB), Step::Done(_)));
}

#[test]
fn to_external_renames_what_we_handed_back_and_leaves_the_in_tree_providers_own() {
    let handed = Found::Own(lb(IN_TREE, &[OURS, names::OWNER_TAG], ACTIVE), Maker::Us);
    let Step::Rename { name, description, tags, .. } = step(Target::External, &handed, 0, &WEB)
    else {
        panic!()
    };
    assert_eq!(name, OURS);
    assert_eq!(description, "Kubernetes external service shop/web from cluster infra");
    assert_eq!(tags, [OURS, names::OWNER_TAG]);
    let theirs = Found::Own(lb(IN_TREE, &[], ACTIVE), Maker::InTree);
    assert!(
        matches!(step(Target::External, &theirs, 0, &WEB), Step::Done(w) if w.contains("adopts it as it is"))
    );
    let shared = Found::Shared(lb("other", &[], ACTIVE));
    assert!(matches!(step(Target::External, &shared, 0, &WEB), Step::Done(_)));
}
