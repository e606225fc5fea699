//! Every other platform's outputs, golden, for its example and each variant issue 5 names
//! (tests/fixtures/<platform>/<variant>), plus the credentialsMode rules end to end.
//!
//! Credentials come from fixture files in the run's `$HOME` (tests/fixtures/credentials), as a
//! user's would; IBM's account is given with `--ibm-account-id` (offline).

use ccm_assets::installconfig::Platform;
use testkit::create::CreateManifests;

use crate::assert_golden;
use crate::support::{Test, outputs, repo};

/// The IBM account ID the tests name.
const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";

/// The platforms of issue 5 plus the no-ops: every platform but OpenStack (tests/it/openstack.rs).
fn platforms() -> impl Iterator<Item = &'static str> {
    Platform::NAMES.iter().copied().filter(|p| *p != "openstack")
}

/// Gives `t` the credential files every platform reads.
pub(crate) fn with_credentials(t: Test) -> Test {
    let fixture = |name: &str| {
        std::fs::read_to_string(repo().join("tests/fixtures/credentials").join(name)).unwrap()
    };
    t.home_file(".aws/credentials", &fixture("aws-credentials"))
        .home_file(".azure/osServicePrincipal.json", &fixture("osServicePrincipal.json"))
        .home_file(".gcp/osServiceAccount.json", &fixture("osServiceAccount.json"))
        .env("IC_API_KEY", "example-ibm-key-DO-NOT-LOG")
}

/// `create manifests` offline with a pinned infra ID and account.
pub(crate) fn pinned(extra: &[&str]) -> CreateManifests {
    CreateManifests::offline().flags(&["--ibm-account-id", ACCOUNT]).flags(extra)
}

fn create(t: Test, extra: &[&str]) -> Test {
    let t = with_credentials(t).create(&pinned(extra));
    t.expect(0);
    t
}

/// `(name, test)` for every example but OpenStack's and every fixture variant of these
/// platforms, each ready to run; a new fixture directory is picked up without touching this.
pub(crate) fn cases() -> Vec<(String, Test)> {
    let mut out = Vec::new();
    for platform in platforms() {
        if repo().join("assets/examples").join(platform).is_dir() {
            out.push((platform.to_owned(), Test::new().example(platform)));
        }
        let Ok(entries) = std::fs::read_dir(repo().join("tests/fixtures").join(platform)) else {
            continue;
        };
        let mut variants: Vec<String> =
            entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        variants.sort();
        for variant in variants {
            let case = format!("{platform}/{variant}");
            out.push((case.replace('/', "-"), Test::new().fixture(&case)));
        }
    }
    out
}

#[test]
fn every_platform_output_matches_its_golden_file() {
    for (name, t) in cases() {
        let t = create(t, &[]);
        assert_golden!(name.as_str(), outputs(&t.dir()));
    }
}

#[test]
fn vsphere_legacy_ini_config_matches_its_golden_file() {
    for (name, t) in [
        ("vsphere-ini", Test::new().example("vsphere")),
        ("vsphere-one-failure-domain-ini", Test::new().fixture("vsphere/one-failure-domain")),
    ] {
        let t = create(t, &["--vsphere-config-format", "ini"]);
        assert_golden!(name, t.read("manifests/cloud-provider-config.yaml"));
    }
}

#[test]
fn no_secret_value_is_ever_logged() {
    for (name, t) in cases() {
        let run = pinned(&["--log-level", "debug"]);
        let run = with_credentials(t).create(&run).expect(0);
        let logs = format!("{}{}", run.stdout, run.stderr);
        assert!(!logs.contains("DO-NOT-LOG"), "{name}: a secret reached the logs:\n{logs}");
        assert!(!logs.contains("example-password"), "{name}: a password reached the logs");
    }
}

#[test]
fn platforms_without_a_cloud_config_write_no_ccm_and_say_so() {
    for case in ["none/plain", "baremetal/plain", "external/plain", "external/ccm-external"] {
        let t = with_credentials(Test::new().fixture(case));
        let run = pinned(&[]);
        let t = t.create(&run);
        let run = t.expect(0);
        assert!(run.stderr.contains("has no cloud-provider config"), "{case}: {}", run.stderr);
        for absent in
            ["manifests/cloud-provider-config.yaml", "manifests/ccm", "bootstrap/manifests"]
        {
            assert!(!t.dir().join(absent).exists(), "{case}: {absent} was written");
        }
        let infra = t.read("manifests/cluster-infrastructure-02-config.yml");
        assert!(infra.contains("  cloudConfig:\n    name: \"\"\n"), "{case}:\n{infra}");
        // The bootstrap stage still runs, and renders nothing.
        let out = t.dir().join("rendered");
        let run = Test::new()
            .args(&[
                "render",
                "--asset-dir",
                &t.dir().display().to_string(),
                "--dest-dir",
                &out.display().to_string(),
            ])
            .expect(0);
        assert!(run.stderr.contains("nothing to render"), "{case}: {}", run.stderr);
    }
}

/// One row per credentialsMode rule the installer validates: (example, mode, accepted).
const MODE_RULES: &[(&str, &str, bool)] = &[
    ("aws", "Mint", true),
    ("aws", "Passthrough", true),
    ("aws", "Manual", true),
    ("gcp", "Mint", true),
    ("gcp", "Passthrough", true),
    ("gcp", "Manual", true),
    ("azure", "Passthrough", true),
    ("azure", "Manual", true),
    ("azure", "Mint", false),
    ("ibmcloud", "Manual", true),
    ("ibmcloud", "Passthrough", false),
    ("powervs", "Manual", true),
    ("powervs", "Mint", false),
    ("nutanix", "Manual", true),
    ("nutanix", "Passthrough", false),
    ("vsphere", "Manual", false),
];

#[test]
fn credentials_mode_rules_decide_the_secret() {
    for &(platform, mode, accepted) in MODE_RULES {
        let t = Test::new().example(platform);
        let config = t.read("install-config.yaml").replace("credentialsMode: Manual\n", "");
        let config = format!("credentialsMode: {mode}\n{config}");
        let t = t.file("install-config.yaml", &config);
        let run = pinned(&[]);
        let t = with_credentials(t).create(&run);
        if !accepted {
            let run = t.expect(3);
            assert!(run.stderr.contains("credentialsMode: "), "{platform} {mode}: {}", run.stderr);
            continue;
        }
        t.expect(0);
        let secret = t.dir().join("openshift/99_cloud-creds-secret.yaml").exists();
        assert_eq!(secret, mode != "Manual", "{platform} {mode}: credentials Secret written?");
    }
}

#[test]
fn azure_stack_accepts_only_manual_credentials() {
    let t = Test::new().fixture("azure/stack");
    let config = format!("credentialsMode: Passthrough\n{}", t.read("install-config.yaml"));
    let run = pinned(&[]);
    let run = with_credentials(t.file("install-config.yaml", &config)).create(&run).expect(3);
    assert!(run.stderr.contains("supported values: \"Manual\""), "{}", run.stderr);
}

#[test]
fn missing_credentials_name_every_place_looked() {
    for (platform, expected) in [
        ("aws", "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        ("azure", "no Azure credentials: set AZURE_SUBSCRIPTION_ID"),
        ("gcp", "no GCP credentials: set GOOGLE_APPLICATION_CREDENTIALS"),
    ] {
        let run = pinned(&[]);
        let t = Test::new().example(platform).create(&run);
        let before = crate::support::tree(&t.dir());
        let run = t.expect(1);
        assert!(run.stderr.contains(expected), "{platform}: {}", run.stderr);
        assert_eq!(crate::support::tree(&t.dir()), before, "{platform}: nothing may be written");
    }
}

#[test]
fn ibm_offline_needs_the_account_id() {
    let t = with_credentials(Test::new().example("ibmcloud"))
        .create(&CreateManifests::offline().random_infra_id());
    let run = t.expect(1);
    assert!(run.stderr.contains("give it with --ibm-account-id"), "{}", run.stderr);
}

/// An upstream CCM reads its cloud config at start: an edit changes the pod template's
/// `ccm-assets.io/config-hash`, and the roll is what brings the edit to it (OpenStack's, which
/// reloads, is the other way round: tests/it/openstack.rs).
#[test]
fn an_edit_of_an_upstream_ccms_config_rolls_its_deployment() {
    let t = create(Test::new().example("aws"), &[]);
    let (path, deployment) =
        ("manifests/cloud-provider-config.yaml", "manifests/ccm/20-deployment.yaml");
    let hash = |t: &Test| {
        let text = t.read(deployment);
        text.lines().find(|l| l.contains("ccm-assets.io/config-hash:")).unwrap().to_owned()
    };
    let before = hash(&t);
    let edited = t.read(path).replace("[Global]\n", "[Global]\n    VPC = vpc-0123\n");
    assert_ne!(edited, t.read(path));
    std::fs::write(t.dir().join(path), &edited).unwrap();
    let run = t.expect(0);
    assert!(run.stderr.contains(&format!("INFO Wrote {deployment}\n")), "{}", run.stderr);
    assert_ne!(hash(&t), before);
}
