//! Every OpenStack output, golden, for the example and each variant in tests/fixtures/openstack.

use crate::assert_golden;
use testkit::create::CreateManifests;

use crate::support::{Test, outputs};

const DEPLOYMENT: &str = "manifests/ccm/20-deployment.yaml";

fn create(t: Test) -> Test {
    let t = t.create(&CreateManifests::offline());
    t.expect(0);
    t
}

#[test]
fn example_outputs_match_the_golden_files() {
    let t = create(Test::new().example("openstack"));
    assert_golden!("openstack-example", outputs(&t.dir()));
}

#[test]
fn variant_outputs_match_the_golden_files() {
    for case in ["ca", "no-region", "manual", "single-replica", "user-managed", "routes"] {
        let t = create(Test::new().fixture(&format!("openstack/{case}")));
        let name = format!("openstack-{case}");
        assert_golden!(name.as_str(), outputs(&t.dir()));
    }
}

#[test]
fn manual_credentials_write_no_secret_but_keep_the_reader_role() {
    let t = create(Test::new().fixture("openstack/manual"));
    assert!(!t.dir().join("openshift/99_cloud-creds-secret.yaml").exists());
    assert!(!t.dir().join("manifests/ccm/11-cloud-credentials.yaml").exists());
    assert!(t.dir().join("openshift/99_role-cloud-creds-secret-reader.yaml").exists());
}

#[test]
fn password_auth_is_warned_about_and_application_credentials_are_not() {
    let t = Test::new().fixture("openstack/ca");
    let t = t.create(&CreateManifests::offline().random_infra_id());
    let run = t.expect(0);
    assert!(
        run.stderr.contains("WARNING Cloud \"secure\" uses password authentication"),
        "{}",
        run.stderr
    );
    let run = create(Test::new().example("openstack")).run();
    assert!(!run.stderr.contains("password authentication"), "{}", run.stderr);
}

#[test]
fn offline_rejects_an_external_network_name() {
    let t = Test::new().example("openstack");
    let config = t.read("install-config.yaml").replace(
        "externalNetwork: 6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6d",
        "externalNetwork: public",
    );
    let t = t.file("install-config.yaml", &config);
    let t = t.create(&CreateManifests::offline().random_infra_id());
    let before = crate::support::tree(&t.dir());
    let run = t.expect(1);
    assert!(run.stderr.contains("\"public\" is not a network ID"), "{}", run.stderr);
    assert_eq!(crate::support::tree(&t.dir()), before);
}

#[test]
fn editing_the_cloud_provider_config_flows_to_the_in_cluster_config() {
    let t = create(Test::new().example("openstack"));
    let path = "manifests/cloud-provider-config.yaml";
    let edited = t
        .read(path)
        .replace("region = RegionOne\n", "region = RegionOne\n    tls-insecure = true\n");
    std::fs::write(t.dir().join(path), &edited).unwrap();
    let run = t.expect(0);
    assert!(run.stderr.contains(&format!("INFO Kept user edits to {path}\n")), "{}", run.stderr);
    assert!(run.stderr.contains("INFO Wrote manifests/ccm/10-cloud-conf.yaml\n"), "{}", run.stderr);
    assert!(t.read("manifests/ccm/10-cloud-conf.yaml").contains("    tls-insecure = true\n"));
    assert_eq!(t.read(path), edited);
}

#[test]
fn an_edit_the_in_cluster_ccm_cannot_honour_fails_naming_the_file() {
    let t = create(Test::new().example("openstack"));
    let path = "manifests/cloud-provider-config.yaml";
    let edited = t.read(path).replace("secret-namespace = kube-system", "secret-namespace = other");
    std::fs::write(t.dir().join(path), edited).unwrap();
    let run = t.expect(1);
    assert!(
        run.stderr.contains("manifests/cloud-provider-config.yaml: data.config: '[Global] secret-namespace' is set to a non-default value \"other\""),
        "{}",
        run.stderr
    );
}

/// Our CCM takes cloud.conf, its credentials and its CA bundle live (issue 38): an edit of the
/// cloud-provider config and of its CA reaches the in-cluster ConfigMap and leaves the pod
/// template as it was, so no pod restarts for it.
#[test]
fn an_edit_of_the_config_or_the_ca_never_rolls_the_deployment() {
    let t = create(Test::new().fixture("openstack/ca"));
    let (path, deployment) = ("manifests/cloud-provider-config.yaml", DEPLOYMENT);
    let before = t.read(deployment);
    let edited = t
        .read(path)
        .replace("region = \"Region#1\"\n", "region = \"Region#1\"\n    tls-insecure = true\n")
        .replace("ExampleOnlyNotARealCertificate0", "ExampleOnlyNotARealCertificate1");
    assert_ne!(edited, t.read(path));
    std::fs::write(t.dir().join(path), &edited).unwrap();
    let run = t.expect(0);
    assert!(run.stderr.contains("INFO Wrote manifests/ccm/10-cloud-conf.yaml\n"), "{}", run.stderr);
    assert!(t.read("manifests/ccm/10-cloud-conf.yaml").contains("Certificate1"));
    assert!(!run.stderr.contains(&format!("INFO Wrote {deployment}\n")), "{}", run.stderr);
    assert_eq!(t.read(deployment), before);
}
