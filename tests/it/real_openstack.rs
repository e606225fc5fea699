//! The generator's cloud lookups against the real Keystone and Neutron that
//! scripts/openstack-up.sh starts (scripts/test.sh runs these with `--run-ignored only`).

use ccm_assets::assets::openstack::Cloud;
use ccm_assets::assets::openstack::lookup::{Lookup, Online};
use ccm_assets::create::inputs;
use ccm_assets::installconfig::clouds;

use testkit::create::CreateManifests;
use testkit::stack::StackEnv;

use crate::support::Test;

fn cloud(env: &StackEnv, name: &str) -> Cloud {
    let file = std::path::PathBuf::from(&env["OPENSTACK_CLOUDS_YAML"]);
    inputs::cloud(clouds::load(&[file], name).unwrap()).unwrap()
}

/// The OpenStack example for the stack's `cloud`, with `externalNetwork: network`.
fn install_config(cloud: &str, network: &str) -> String {
    testkit::install_config::text(&testkit::install_config::openstack(cloud, network))
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn both_auth_styles_resolve_the_external_network_by_name_and_by_id() {
    let env = StackEnv::load();
    let id = &env["OPENSTACK_EXTERNAL_NETWORK_ID"];
    for name in [&env["OPENSTACK_CLOUD_PASSWORD"], &env["OPENSTACK_CLOUD_APPCRED"]] {
        let cloud = cloud(&env, name);
        let online = Online::default();
        assert_eq!(
            &online.network_id(&cloud, &env["OPENSTACK_EXTERNAL_NETWORK"]).unwrap(),
            id,
            "{name}"
        );
        assert_eq!(&online.network_id(&cloud, id).unwrap(), id, "{name}");
    }
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn a_catalog_without_octavia_has_no_load_balancer() {
    let env = StackEnv::load();
    let cloud = cloud(&env, &env["OPENSTACK_CLOUD_APPCRED_NO_LB"]);
    assert!(!Online::default().has_load_balancer(&cloud).unwrap());
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn an_unknown_network_is_an_error_naming_it() {
    let env = StackEnv::load();
    let cloud = cloud(&env, &env["OPENSTACK_CLOUD_APPCRED"]);
    let err = Online::default().network_id(&cloud, "no-such-network").unwrap_err().to_string();
    assert!(err.contains("no network \"no-such-network\""), "{err}");
}

/// `create manifests` online for `cloud`: the cloud-provider ConfigMap it writes.
fn cloud_provider_config(env: &StackEnv, cloud: &str) -> String {
    let t = Test::new()
        .file("install-config.yaml", &install_config(cloud, &env["OPENSTACK_EXTERNAL_NETWORK"]))
        .env("OS_CLIENT_CONFIG_FILE", &env["OPENSTACK_CLOUDS_YAML"])
        .create(&CreateManifests::online());
    t.expect(0);
    t.read("manifests/cloud-provider-config.yaml")
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn create_manifests_online_disables_the_load_balancer_without_octavia() {
    let env = StackEnv::load();
    let map = cloud_provider_config(&env, &env["OPENSTACK_CLOUD_APPCRED_NO_LB"]);
    assert!(map.contains("    [LoadBalancer]\n    enabled = false\n"), "{map}");
    assert!(map.contains(&format!("    region = {}\n", env["OPENSTACK_REGION_NO_LB"])), "{map}");
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn create_manifests_online_keeps_the_load_balancer_where_the_catalog_has_octavia() {
    let env = StackEnv::load();
    let map = cloud_provider_config(&env, &env["OPENSTACK_CLOUD_APPCRED"]);
    // The stack runs Octavia unless OPENSTACK_OCTAVIA=0 (its env file then names it).
    let octavia = env.get("OPENSTACK_LOADBALANCER_URL").is_some();
    assert_eq!(!map.contains("enabled = false"), octavia, "{map}");
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn a_wrong_password_fails_naming_the_cloud_and_the_way_out() {
    let env = StackEnv::load();
    let clouds = std::fs::read_to_string(&env["OPENSTACK_CLOUDS_YAML"]).unwrap();
    let password = &env["OPENSTACK_PASSWORD"];
    assert!(clouds.contains(password.as_str()), "the password cloud holds the member password");
    let t =
        Test::new().file("clouds.yaml", &clouds.replace(password.as_str(), "wrong-password")).file(
            "install-config.yaml",
            &install_config(&env["OPENSTACK_CLOUD_PASSWORD"], &env["OPENSTACK_EXTERNAL_NETWORK"]),
        );
    let clouds_path = t.dir().join("clouds.yaml").display().to_string();
    let t = t
        .env("OS_CLIENT_CONFIG_FILE", &clouds_path)
        .create(&CreateManifests::online().random_infra_id());
    let before = crate::support::tree(&t.dir());
    let run = t.expect(1);
    assert!(run.stderr.contains(&env["OPENSTACK_AUTH_URL"]), "{}", run.stderr);
    assert!(run.stderr.contains("--offline"), "{}", run.stderr);
    assert!(!run.stderr.contains("wrong-password"), "{}", run.stderr);
    assert_eq!(crate::support::tree(&t.dir()), before);
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn over_https_the_clouds_yaml_ca_resolves_the_network_and_goes_into_the_config() {
    let env = StackEnv::load();
    let map = cloud_provider_config(&env, &env["OPENSTACK_CLOUD_TLS"]);
    let ca = std::fs::read_to_string(&env["OPENSTACK_CA_FILE"]).unwrap();
    let first = ca.lines().nth(1).unwrap();
    assert!(map.contains("  ca-bundle.pem: |"), "{map}");
    assert!(map.contains(first), "the stack's CA is not in the ConfigMap:\n{map}");
    let id = &env["OPENSTACK_EXTERNAL_NETWORK_ID"];
    assert!(map.contains(&format!("floating-network-id = {id}")), "{map}");
}

/// The stack's clouds.yaml with the `cacert` of cloud ccm-tls replaced by `instead` (a line
/// at the same indentation, or nothing).
fn clouds_yaml_without_cacert(env: &StackEnv, instead: &str) -> tempfile::NamedTempFile {
    let yaml = std::fs::read_to_string(&env["OPENSTACK_CLOUDS_YAML"]).unwrap();
    let cacert = format!("cacert: {}", env["OPENSTACK_CA_FILE"]);
    let mut out = String::new();
    for line in yaml.lines() {
        match line.trim_start() == cacert {
            true if instead.is_empty() => continue,
            true => out.push_str(&format!("{}{instead}\n", &line[..line.len() - cacert.len()])),
            false => out.push_str(&format!("{line}\n")),
        }
    }
    assert_ne!(out, yaml, "no cacert line in {}", env["OPENSTACK_CLOUDS_YAML"]);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), out).unwrap();
    file
}

/// `create manifests` online for cloud ccm-tls from `clouds`, `trust` as additionalTrustBundle.
fn create_over_tls(env: &StackEnv, clouds: &tempfile::NamedTempFile, trust: Option<&str>) -> Test {
    let mut config =
        install_config(&env["OPENSTACK_CLOUD_TLS"], &env["OPENSTACK_EXTERNAL_NETWORK"]);
    if let Some(pem) = trust {
        let indented: String = pem.lines().map(|l| format!("  {l}\n")).collect();
        config = format!("additionalTrustBundle: |\n{indented}{config}");
    }
    Test::new()
        .file("install-config.yaml", &config)
        .env("OS_CLIENT_CONFIG_FILE", &clouds.path().display().to_string())
        .create(&CreateManifests::online())
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn over_https_without_the_ca_the_lookup_fails_naming_host_reason_and_fix() {
    let env = StackEnv::load();
    let clouds = clouds_yaml_without_cacert(&env, "");
    let err = create_over_tls(&env, &clouds, None).expect(1).stderr;
    let url = &env["OPENSTACK_TLS_AUTH_URL"];
    let host = url.trim_start_matches("https://").split('/').next().unwrap().to_owned();
    let wanted = format!(
        "TLS with {host} failed: certificate signed by an unknown authority (invalid peer \
         certificate: UnknownIssuer); set cacert in clouds.yaml (or additionalTrustBundle in \
         install-config.yaml) to the CA bundle that signed it, or verify: false in clouds.yaml"
    );
    assert!(err.contains(&wanted), "{err}");
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn over_https_the_additional_trust_bundle_is_trusted_and_verify_false_works_with_a_warning() {
    let env = StackEnv::load();
    let ca = std::fs::read_to_string(&env["OPENSTACK_CA_FILE"]).unwrap();
    let id = &env["OPENSTACK_EXTERNAL_NETWORK_ID"];
    let without = clouds_yaml_without_cacert(&env, "");
    let trusted = create_over_tls(&env, &without, Some(&ca));
    let run = trusted.expect(0);
    assert!(!run.stderr.contains("verify: false"), "{}", run.stderr);
    let map = trusted.read("manifests/cloud-provider-config.yaml");
    assert!(map.contains(&format!("floating-network-id = {id}")), "{map}");

    let insecure = clouds_yaml_without_cacert(&env, "verify: false");
    let unverified = create_over_tls(&env, &insecure, None);
    let run = unverified.expect(0);
    let warning =
        "cloud \"ccm-tls\" has verify: false: the cloud's TLS certificates are not verified";
    assert!(run.stderr.contains(warning), "{}", run.stderr);
    let map = unverified.read("manifests/cloud-provider-config.yaml");
    assert!(map.contains(&format!("floating-network-id = {id}")), "{map}");
}
