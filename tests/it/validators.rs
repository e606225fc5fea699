//! Real validators over what `create manifests` writes (DESIGN §8): kubernetes-validate's strict
//! Kubernetes schemas, our own schemas in tests/schemas/ for the OpenShift kinds it has none for,
//! and openstacksdk loading the generated clouds.yaml.
//!
//! The tools are installed by scripts/test-tools.sh into `$CCM_TEST_TOOLS` (default
//! `target/test-tools`). A missing tool fails the test; it is never skipped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::support::{Test, repo, tree};

/// The cluster version the design targets; kubernetes-validate 1.37.0 bundles 1.25 … 1.37.
const KUBERNETES_VERSION: &str = "1.33.0";

/// Where the generator writes manifests a cluster applies (`bootstrap/manifests` only when it
/// exists).
const MANIFEST_DIRS: [&str; 3] = ["manifests", "openshift", "bootstrap/manifests"];

/// The CA path the Secret's clouds.yaml points at (DESIGN §4).
const IN_CLUSTER_CACERT: &str =
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";

fn create(t: Test) -> Test {
    let run = crate::platforms::pinned(&[]);
    let t = crate::platforms::with_credentials(t).create(&run);
    t.expect(0);
    t
}

/// The OpenStack example, every case directory under tests/fixtures/openstack, and every other
/// platform's example and variants, so a new case is validated without touching this file.
fn cases() -> Vec<(String, Test)> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("tests/fixtures/openstack"))
        .expect("tests/fixtures/openstack")
        .map(|e| e.expect("fixture entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = vec![("example".to_owned(), Test::new().example("openstack"))];
    out.extend(names.into_iter().map(|n| {
        let t = Test::new().fixture(&format!("openstack/{n}"));
        (n, t)
    }));
    out.extend(crate::platforms::cases());
    out
}

/// Every `*.yaml`/`*.yml` under the manifest directories, relative to `dir`, sorted.
fn manifest_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for sub in MANIFEST_DIRS {
        if !dir.join(sub).is_dir() {
            continue;
        }
        for (rel, _) in tree(&dir.join(sub)) {
            if rel.ends_with(".yaml") || rel.ends_with(".yml") {
                files.push(format!("{sub}/{rel}"));
            }
        }
    }
    files
}

/// Runs one validator and reads its report, one line per document:
/// `INFO <file> passed …`, `ERROR <file> …`, or a line `other` accepts. Returns the files it
/// named; every other line, and a non-zero exit that no line explains, goes to `failures`.
fn run(
    tool: &str,
    cmd: &mut Command,
    failures: &mut Vec<String>,
    mut other: impl FnMut(&str) -> bool,
) -> BTreeSet<String> {
    let out = cmd.output().unwrap_or_else(|e| panic!("could not run {tool}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let before = failures.len();
    let mut named = BTreeSet::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.splitn(3, ' ');
        let (level, file, rest) = (words.next(), words.next(), words.next().unwrap_or(""));
        named.extend(file.map(str::to_owned));
        match level {
            Some("INFO") if rest.starts_with("passed ") => {}
            _ if other(line) => {}
            _ => failures.push(format!("{tool}: {line}")),
        }
    }
    if !out.status.success() && failures.len() == before {
        failures.push(format!(
            "{tool} exited with {}:\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    named
}

/// Validates `files` (relative to `dir`) strictly; returns one message per problem.
fn validate(dir: &Path, files: &[String]) -> Vec<String> {
    let schemas = repo().join("tests/schemas");
    let mut failures = Vec::new();
    // kubernetes-validate only warns, exit 0, on a kind it has no schema for:
    // `WARN <file> Couldn't find schema for kind K with api version A …`. Such a file is
    // checked against tests/schemas/ instead, and fails when we have no schema either.
    let mut ours = BTreeSet::new();
    let mut unknown = Vec::new();
    let named = run(
        "kubernetes-validate",
        Command::new(testkit::tools::venv_bin("kubernetes-validate"))
            .current_dir(dir)
            .args(["-k", KUBERNETES_VERSION, "--strict"])
            .args(files),
        &mut failures,
        |line| {
            let Some((file, kind, api)) = no_schema_warning(line) else { return false };
            let schema = format!("{}_{}.json", kind.to_lowercase(), api.replace('/', "_"));
            if schemas.join(&schema).is_file() {
                ours.insert(file.to_owned());
            } else {
                unknown.push(format!(
                    "{file}: kubernetes-validate has no schema for {api} {kind} (it only warns) \
                     and there is no tests/schemas/{schema}: add one"
                ));
            }
            true
        },
    );
    failures.extend(unknown);
    for file in files.iter().filter(|f| !named.contains(*f)) {
        failures.push(format!("kubernetes-validate said nothing about {file} (no document?)"));
    }
    if !ours.is_empty() {
        let named = run(
            "tests/tools/validate_crd.py",
            Command::new(testkit::tools::venv_bin("python"))
                .current_dir(dir)
                .arg(repo().join("tests/tools/validate_crd.py"))
                .arg(&schemas)
                .args(&ours),
            &mut failures,
            |_| false,
        );
        for file in ours.difference(&named) {
            failures.push(format!("tests/tools/validate_crd.py did not check {file}"));
        }
    }
    failures
}

/// `(file, kind, apiVersion)` of kubernetes-validate's "no schema" warning.
fn no_schema_warning(line: &str) -> Option<(&str, &str, &str)> {
    let (file, msg) = line.strip_prefix("WARN ")?.split_once(" Couldn't find schema for kind ")?;
    let (kind, rest) = msg.split_once(" with api version ")?;
    Some((file, kind, rest.split(' ').next()?))
}

#[test]
fn every_generated_manifest_passes_strict_schema_validation() {
    let mut failures = Vec::new();
    for (case, t) in cases() {
        let t = create(t);
        let files = manifest_files(&t.dir());
        assert!(
            files.iter().any(|f| f.starts_with("manifests/")),
            "{case}: expected manifests/ files, got {files:?}"
        );
        failures.extend(validate(&t.dir(), &files).into_iter().map(|f| format!("[{case}] {f}")));
    }
    assert!(
        failures.is_empty(),
        "{} problem(s) in generated manifests (Kubernetes {KUBERNETES_VERSION}, strict):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The harness itself must fail on what it exists to catch, or a green run proves nothing.
#[test]
fn strict_validation_reports_unknown_fields_kinds_without_schema_and_bad_crd_values() {
    let t = Test::new()
        .file(
            "manifests/typo.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: y\ndatta: {}\n",
        )
        .file(
            "manifests/infra.yml",
            "apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata:\n  name: cluster\n\
             spec:\n  cloudConfig:\n    name: cloud-provider-config\n    kye: config\n  \
             platformSpec:\n    type: OpenStack\n    openstack:\n      ingressIPs:\n      - 10.0.0.700\n",
        )
        .file("openshift/empty.yaml", "---\n")
        .file(
            "manifests/network.yml",
            "apiVersion: config.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\nspec: {}\n",
        );
    let files = manifest_files(&t.dir());
    let failures = validate(&t.dir(), &files).join("\n");
    for expected in [
        "manifests/typo.yaml did not validate",
        "'datta' was unexpected",
        "spec.cloudConfig: Additional properties are not allowed ('kye' was unexpected)",
        "spec.platformSpec.openstack.ingressIPs.0: '10.0.0.700' is not a 'ip'",
        "manifests/network.yml: kubernetes-validate has no schema for config.openshift.io/v1 \
         Network",
        "kubernetes-validate said nothing about openshift/empty.yaml",
    ] {
        assert!(failures.contains(expected), "missing {expected:?} in:\n{failures}");
    }
}

/// The clouds.yaml of one Secret: `stringData` (in-cluster CCM) or base64 `data` (installer).
fn secret_clouds_yaml(t: &Test, rel: &str) -> String {
    let secret: Value =
        serde_saphyr::from_str(&t.read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    if let Some(text) = secret["stringData"]["clouds.yaml"].as_str() {
        return text.to_owned();
    }
    let b64 =
        secret["data"]["clouds.yaml"].as_str().unwrap_or_else(|| panic!("{rel}: no clouds.yaml"));
    let bytes = STANDARD.decode(b64).unwrap_or_else(|e| panic!("{rel}: clouds.yaml: {e}"));
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{rel}: clouds.yaml: {e}"))
}

/// Loads each clouds.yaml with openstacksdk's own config loader (no network, no environment,
/// no other config files) and returns what it resolved for cloud `openstack`.
fn load_with_openstacksdk(paths: &[PathBuf], home: &Path) -> Vec<Value> {
    const LOAD: &str = r#"
import json, sys
import openstack.config as oc
out = []
for path in sys.argv[1:]:
    c = oc.OpenStackConfig(config_files=[path], vendor_files=[], secure_files=[],
                           load_envvars=False).get_one(cloud="openstack")
    out.append({"auth_url": c.config["auth"].get("auth_url"), "auth_type": c.config.get("auth_type"),
                "region_name": c.region_name, "cacert": c.config.get("cacert"),
                "password": c.config["auth"].get("password")})
print(json.dumps(out))
"#;
    let out = Command::new(testkit::tools::venv_bin("python"))
        .env_clear()
        .env("HOME", home)
        .arg("-c")
        .arg(LOAD)
        .args(paths)
        .output()
        .expect("ran python");
    assert!(
        out.status.success(),
        "openstacksdk could not load the generated clouds.yaml:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("loader prints JSON")
}

#[test]
fn generated_clouds_yaml_loads_with_openstacksdk() {
    let cases = [
        (
            Test::new().example("openstack"),
            serde_json::json!({
                "auth_url": "https://keystone.example.com:5000/v3",
                "auth_type": "v3applicationcredential",
                "region_name": "RegionOne",
                "cacert": null,
                "password": null,
            }),
        ),
        (
            Test::new().fixture("openstack/ca"),
            serde_json::json!({
                "auth_url": "https://keystone.internal.example:13000/v3",
                "auth_type": "password",
                "region_name": "Region#1",
                "cacert": IN_CLUSTER_CACERT,
                "password": "p#ss;w\"rd\\n",
            }),
        ),
    ];
    let secrets =
        ["manifests/ccm/11-cloud-credentials.yaml", "openshift/99_cloud-creds-secret.yaml"];
    for (t, want) in cases {
        let t = create(t);
        let scratch = tempfile::tempdir().expect("tempdir");
        let paths: Vec<PathBuf> = secrets
            .iter()
            .enumerate()
            .map(|(i, rel)| {
                let path = scratch.path().join(format!("{i}-clouds.yaml"));
                std::fs::write(&path, secret_clouds_yaml(&t, rel)).expect("write clouds.yaml");
                path
            })
            .collect();
        let loaded = load_with_openstacksdk(&paths, scratch.path());
        assert_eq!(loaded.len(), secrets.len(), "one result per clouds.yaml");
        for (rel, got) in secrets.iter().zip(&loaded) {
            assert_eq!(got, &want, "{rel}: openstacksdk resolved cloud \"openstack\" differently");
        }
    }
}

/// Runs tests/tools/validate_crd.py on `files` (relative to `dir`); every file must be named.
fn validate_ours(dir: &Path, files: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    let named = run(
        "tests/tools/validate_crd.py",
        Command::new(testkit::tools::venv_bin("python"))
            .current_dir(dir)
            .arg(repo().join("tests/tools/validate_crd.py"))
            .arg(repo().join("tests/schemas"))
            .args(files),
        &mut failures,
        |_| false,
    );
    for file in files.iter().filter(|f| !named.contains(**f)) {
        failures.push(format!("tests/tools/validate_crd.py did not check {file}"));
    }
    failures
}

/// `--leader-migration` (issue 26): its manifests pass like every other, and each
/// LeaderMigrationConfiguration it writes (the two plain files, and the one in the ConfigMap)
/// passes our strict schema of the v1 type, which refuses what v1 does not have.
#[test]
fn leader_migration_outputs_pass_strict_validation() {
    let run = crate::platforms::pinned(&["--leader-migration"]);
    let t = crate::platforms::with_credentials(Test::new().example("openstack")).create(&run);
    t.expect(0);
    let mut failures = validate(&t.dir(), &manifest_files(&t.dir()));
    let map: Value =
        serde_saphyr::from_str(&t.read("manifests/ccm/12-leader-migration-config.yaml")).unwrap();
    let in_map = map["data"]["leader-migration.yaml"].as_str().expect("the CCM's configuration");
    std::fs::write(t.dir().join("in-config-map.yaml"), in_map).unwrap();
    let kcm = "leader-migration/kube-controller-manager.yaml";
    let files = [kcm, "leader-migration/cloud-controller-manager.yaml", "in-config-map.yaml"];
    failures.extend(validate_ours(&t.dir(), &files));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The harness must fail on what it exists to catch: v1 has no resourceLock.
    let bad = format!("{}resourceLock: leases\n", t.read(kcm));
    std::fs::write(t.dir().join("with-resource-lock.yaml"), bad).unwrap();
    let failures = validate_ours(&t.dir(), &["with-resource-lock.yaml"]).join("\n");
    assert!(failures.contains("'resourceLock' was unexpected"), "{failures}");
}
