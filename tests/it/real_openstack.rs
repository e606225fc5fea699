//! The generator's cloud lookups against the real Keystone and Neutron that
//! scripts/openstack-up.sh starts (scripts/test.sh runs these with `--run-ignored only`).

use std::collections::BTreeMap;

use ccm_assets::assets::openstack::Cloud;
use ccm_assets::assets::openstack::lookup::{Lookup, Online};
use ccm_assets::cli::resolve;
use ccm_assets::installconfig::clouds;

use crate::support::Test;

/// The stack's env file, named by `CCM_OPENSTACK_ENV`.
fn env() -> BTreeMap<String, String> {
    let path = std::env::var("CCM_OPENSTACK_ENV").expect(
        "CCM_OPENSTACK_ENV is not set: start the services with scripts/openstack-up.sh and \
         point CCM_OPENSTACK_ENV at the env file it prints (scripts/test.sh does both)",
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn cloud(env: &BTreeMap<String, String>, name: &str) -> Cloud {
    let file = std::path::PathBuf::from(&env["OPENSTACK_CLOUDS_YAML"]);
    resolve::cloud(clouds::load(&[file], name).unwrap()).unwrap()
}

/// An OpenStack install-config for the stack's `cloud`, with `externalNetwork: network`.
fn install_config(cloud: &str, network: &str) -> String {
    let example = std::fs::read_to_string(
        crate::support::repo().join("assets/examples/openstack/install-config.yaml"),
    )
    .unwrap();
    example.replace("cloud: demo", &format!("cloud: {cloud}")).replace(
        "externalNetwork: 6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6d",
        &format!("externalNetwork: {network}"),
    )
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn both_auth_styles_resolve_the_external_network_by_name_and_by_id() {
    let env = env();
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
    let env = env();
    let cloud = cloud(&env, &env["OPENSTACK_CLOUD_APPCRED"]);
    assert!(!Online::default().has_load_balancer(&cloud).unwrap());
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn an_unknown_network_is_an_error_naming_it() {
    let env = env();
    let cloud = cloud(&env, &env["OPENSTACK_CLOUD_APPCRED"]);
    let err = Online::default().network_id(&cloud, "no-such-network").unwrap_err().to_string();
    assert!(err.contains("no network \"no-such-network\""), "{err}");
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn create_manifests_online_disables_the_load_balancer_without_octavia() {
    let env = env();
    let t = Test::new()
        .file(
            "install-config.yaml",
            &install_config(&env["OPENSTACK_CLOUD_APPCRED"], &env["OPENSTACK_EXTERNAL_NETWORK"]),
        )
        .env("OS_CLIENT_CONFIG_FILE", &env["OPENSTACK_CLOUDS_YAML"])
        .args(&["create", "manifests", "--dir", "{dir}", "--infra-id", "demo-x7k2p"]);
    t.expect(0);
    let map = t.read("manifests/cloud-provider-config.yaml");
    assert!(map.contains("    [LoadBalancer]\n    enabled = false\n"), "{map}");
    assert!(map.contains(&format!("    region = {}\n", env["OPENSTACK_REGION"])), "{map}");
}

#[test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
fn a_wrong_password_fails_naming_the_cloud_and_the_way_out() {
    let env = env();
    let clouds = std::fs::read_to_string(&env["OPENSTACK_CLOUDS_YAML"]).unwrap();
    let password = &env["OPENSTACK_PASSWORD"];
    assert!(clouds.contains(password.as_str()), "the password cloud holds the member password");
    let t =
        Test::new().file("clouds.yaml", &clouds.replace(password.as_str(), "wrong-password")).file(
            "install-config.yaml",
            &install_config(&env["OPENSTACK_CLOUD_PASSWORD"], &env["OPENSTACK_EXTERNAL_NETWORK"]),
        );
    let clouds_path = t.dir().join("clouds.yaml").display().to_string();
    let t = t.env("OS_CLIENT_CONFIG_FILE", &clouds_path).args(&[
        "create",
        "manifests",
        "--dir",
        "{dir}",
    ]);
    let before = crate::support::tree(&t.dir());
    let run = t.expect(1);
    assert!(run.stderr.contains(&env["OPENSTACK_AUTH_URL"]), "{}", run.stderr);
    assert!(run.stderr.contains("--offline"), "{}", run.stderr);
    assert!(!run.stderr.contains("wrong-password"), "{}", run.stderr);
    assert_eq!(crate::support::tree(&t.dir()), before);
}
