use super::*;

fn ours(namespace: &str, name: &str) -> Verdict {
    Verdict::Ours(Named { namespace: namespace.into(), name: name.into() })
}

fn lb(name: &str, description: &str, tags: &[&str]) -> LoadBalancer {
    LoadBalancer::marked(name, description, tags)
}

#[test]
fn a_load_balancer_is_the_clusters_by_its_name_and_a_controllers_mark() {
    let name = "kube_service_prod_shop_web";
    let mine = lb(name, "", &[name, names::OWNER_TAG]);
    assert_eq!(load_balancer(&mine, "prod"), ours("shop", "web"));
    // Upstream's marks: a tag equal to the name, or its description.
    assert_eq!(load_balancer(&lb(name, "", &[name]), "prod"), ours("shop", "web"));
    let described = lb(name, "Kubernetes external service shop/web from cluster prod", &[]);
    assert_eq!(load_balancer(&described, "prod"), ours("shop", "web"));
    // The name alone proves nothing.
    let decoy = lb(name, "made by hand", &[]);
    assert!(
        matches!(load_balancer(&decoy, "prod"), Verdict::Left(why) if why.contains("look-alike"))
    );
}

#[test]
fn a_cluster_whose_name_starts_like_another_is_not_taken_for_it() {
    // Cluster "prod_a"'s Service shop/web, seen by a purge of "prod": the rest has three parts.
    let name = "kube_service_prod_a_shop_web";
    let theirs = lb(
        name,
        "Kubernetes external service shop/web from cluster prod_a",
        &[name, names::OWNER_TAG],
    );
    assert!(matches!(load_balancer(&theirs, "prod"), Verdict::Left(_)));
    assert_eq!(load_balancer(&theirs, "prod_a"), ours("shop", "web"));
    let other = lb("kube_service_staging_shop_web", "", &["kube_service_staging_shop_web"]);
    assert!(matches!(load_balancer(&other, "prod"), Verdict::Left(_)));
}

#[test]
fn an_adopted_in_tree_load_balancer_is_found_by_our_tags() {
    let adopted = lb(
        "a6f1e0b9a5d2c4c8e9f001234567890a",
        "Kubernetes external service a6f1",
        &["kube_service_prod_shop_web", names::OWNER_TAG],
    );
    assert_eq!(load_balancer(&adopted, "prod"), ours("shop", "web"));
    // Not adopted: nothing in it names the cluster (purge --kubeconfig finds it by the UID).
    let in_tree = lb("a6f1e0b9a5d2c4c8e9f001234567890a", "Kubernetes external service a6f1", &[]);
    assert!(matches!(load_balancer(&in_tree, "prod"), Verdict::Left(_)));
}

#[test]
fn a_name_cut_to_octavias_limit_is_read_from_the_description() {
    let cluster = "c".repeat(240);
    let name = names::load_balancer(&cluster, "shop", "web");
    assert_eq!(name.len(), names::MAX);
    let description = names::description(&cluster, "shop", "web");
    let long = lb(&name, &description, &[names::OWNER_TAG]);
    assert_eq!(load_balancer(&long, &cluster), ours("shop", "web"));
    let other = "d".repeat(240);
    assert!(matches!(load_balancer(&long, &other), Verdict::Left(_)));
}

#[test]
fn unrelated_objects_say_so() {
    let plain = lb("database", "", &[]);
    assert_eq!(load_balancer(&plain, "prod"), Verdict::Left("not a Kubernetes Service's".into()));
}

fn fip(description: &str, tags: &[&str]) -> FloatingIp {
    FloatingIp {
        id: "fip-1".into(),
        description: description.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..FloatingIp::default()
    }
}

#[test]
fn a_floating_ip_is_the_clusters_by_its_description_or_our_tags() {
    let upstream =
        fip("Floating IP for Kubernetes external service shop/web from cluster prod", &[]);
    assert_eq!(floating_ip(&upstream, "prod"), ours("shop", "web"));
    assert!(matches!(floating_ip(&upstream, "staging"), Verdict::Left(_)));
    let earlier = fip("Floating IP for load balancer kube_service_prod_shop_web", &[]);
    assert_eq!(floating_ip(&earlier, "prod"), ours("shop", "web"));
    let tagged = fip("", &["kube_service_prod_shop_web", names::OWNER_TAG]);
    assert_eq!(floating_ip(&tagged, "prod"), ours("shop", "web"));
    // Our tag without a Service of the cluster, or the Service's tag without ours: left.
    assert!(matches!(
        floating_ip(&fip("", &["kube_service_prod_shop_web"]), "prod"),
        Verdict::Left(_)
    ));
    assert!(matches!(floating_ip(&fip("a user's", &[]), "prod"), Verdict::Left(_)));
}

fn group(name: &str, description: &str, tags: &[&str]) -> SecurityGroup {
    SecurityGroup {
        id: "sg-1".into(),
        name: name.into(),
        description: description.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..SecurityGroup::default()
    }
}

#[test]
fn a_security_group_is_the_clusters_by_our_marks_or_upstreams() {
    let name = "lb-sg-6f1e-shop-web";
    let ours_described = group(
        name,
        "Security group for the members of Service shop/web (load balancer kube_service_prod_shop_web)",
        &[],
    );
    assert_eq!(security_group(&ours_described, "prod"), ours("shop", "web"));
    assert!(matches!(security_group(&ours_described, "staging"), Verdict::Left(_)));
    let tagged = group(name, "", &["kube_service_prod_shop_web", names::OWNER_TAG]);
    assert_eq!(security_group(&tagged, "prod"), ours("shop", "web"));
    let upstream =
        group(name, "Security Group for shop/web Service LoadBalancer in cluster prod", &[]);
    assert_eq!(security_group(&upstream, "prod"), ours("shop", "web"));
    let users = group(name, "mine", &[]);
    assert!(
        matches!(security_group(&users, "prod"), Verdict::Left(why) if why.contains("no mark of a controller"))
    );
    assert_eq!(
        security_group(&group("default", "Default security group", &[]), "prod"),
        Verdict::Left("not a Kubernetes Service's".into())
    );
}
