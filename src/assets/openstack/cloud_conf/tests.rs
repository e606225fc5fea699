//! cloud.conf generation and the two transforms, on exact text.

use super::*;
use ccm_formats::clouds_yaml::CloudEntry;

const STANDARD: &str = "[Global]\nuse-clouds = true\nclouds-file = /etc/openstack/secret/clouds.yaml\n\
                        cloud = openstack\n\n[LoadBalancer]\nmax-shared-lb = 1\nmanage-security-groups = true\n";

fn cloud(region: Option<&str>, ca: bool) -> Cloud {
    let entry = CloudEntry { region_name: region.map(str::to_owned), ..CloudEntry::default() };
    Cloud { name: "c".into(), entry, ca_bundle: ca.then(|| "PEM".to_owned()), trust_bundle: None }
}

fn facts(network: Option<&str>, load_balancer: bool) -> CloudFacts {
    CloudFacts { floating_network_id: network.map(str::to_owned), load_balancer }
}

#[test]
fn installer_cloud_conf_has_region_ca_and_floating_network_only_when_set() {
    assert_eq!(
        cloud_conf(&cloud(None, false), &facts(None, true)),
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n"
    );
    assert_eq!(
        cloud_conf(&cloud(Some("RegionOne"), true), &facts(Some("net-id"), true)),
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n\
         region = RegionOne\n\
         ca-file = /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem\n\
         \n[LoadBalancer]\nfloating-network-id = net-id\n"
    );
}

#[test]
fn no_octavia_disables_the_load_balancer_instead_of_setting_the_network() {
    assert_eq!(
        cloud_conf(&cloud(None, false), &facts(Some("net-id"), false)),
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n\
         \n[LoadBalancer]\nenabled = false\n"
    );
}

#[test]
fn a_region_gcfg_would_misread_is_quoted() {
    let conf = cloud_conf(&cloud(Some("Region#1"), false), &facts(None, true));
    assert!(conf.contains("region = \"Region#1\"\n"), "{conf}");
    assert_eq!(gcfg::parse(&conf).unwrap().get("Global", "region"), Some("Region#1"));
}

#[test]
fn in_cluster_transform_of_an_empty_config_is_the_standard_one() {
    assert_eq!(in_cluster("").unwrap(), STANDARD);
}

#[test]
fn in_cluster_transform_drops_secret_keys_and_block_storage() {
    let input = "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n\n\
                 [BlockStorage]\nignore-volume-az = true\n";
    assert_eq!(in_cluster(input).unwrap(), STANDARD);
}

#[test]
fn in_cluster_transform_drops_use_octavia_and_keeps_user_load_balancer_values() {
    let input = "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n\
                 region = RegionOne\n\n[LoadBalancer]\nfloating-network-id = abc\nmax-shared-lb = 5\n\
                 use-octavia = false\n";
    assert_eq!(
        in_cluster(input).unwrap(),
        "[Global]\nregion = RegionOne\nuse-clouds = true\nclouds-file = /etc/openstack/secret/clouds.yaml\n\
         cloud = openstack\n\n[LoadBalancer]\nfloating-network-id = abc\nmax-shared-lb = 5\n\
         manage-security-groups = true\n"
    );
}

#[test]
fn in_cluster_transform_rejects_each_non_default_legacy_key() {
    for (input, message) in [
        (
            "[Global]\nsecret-namespace = foo\nsecret-name = openstack-credentials\n",
            "'[Global] secret-namespace' is set to a non-default value \"foo\" (only \"kube-system\" is supported)",
        ),
        (
            "[Global]\nsecret-namespace = kube-system\nsecret-name = foo\n",
            "'[Global] secret-name' is set to a non-default value \"foo\" (only \"openstack-credentials\" is supported)",
        ),
        (
            "[Global]\nkubeconfig-path = https://foo\n",
            "'[Global] kubeconfig-path' is set to a non-default value \"https://foo\" (only \"\" is supported)",
        ),
    ] {
        assert_eq!(in_cluster(input).unwrap_err().to_string(), message);
    }
}

#[test]
fn bootstrap_config_reads_the_ca_from_beside_it_and_keeps_the_secret_reference() {
    let conf = cloud_conf(&cloud(Some("R"), true), &facts(None, true));
    assert_eq!(
        bootstrap(&conf).unwrap(),
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\nregion = R\n\
         ca-file = /etc/kubernetes/bootstrap-configs/ca-bundle.pem\n"
    );
}

#[test]
fn an_edit_that_no_longer_parses_is_refused_by_both_derivations() {
    let broken = "[Global]\nregion = \"open\n";
    assert!(matches!(in_cluster(broken), Err(Error::Parse(_))));
    assert!(matches!(bootstrap(broken), Err(Error::Parse(_))));
}
