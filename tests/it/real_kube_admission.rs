//! Admission by the real kube-apiserver (issue 25): every Kubernetes object `create manifests`
//! writes, for every platform example and variant, applied server-side with strict field
//! validation (an unknown or mistyped field is refused, not pruned) and read back with every
//! field of ours intact (tests/it/readback.rs).
//!
//! The generated objects have fixed names (namespace `openshift-cloud-controller-manager`,
//! ClusterRoles, Infrastructure `cluster`), so the cases run one after another in one test, in
//! the nextest group `real-kube-ccm` with the other tests that touch them; each case's objects
//! are deleted before the next, and the namespaces the test created at its end (on failure too).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use testkit::cluster::run_bounded;
use testkit::kube_stack::KubeStack;

use crate::platforms::{cases, pinned, with_credentials};
use crate::readback::{compare, describe};
use crate::support::{Test, repo, tree};

/// The field manager of the test's applies.
const MANAGER: &str = "ccm-assets-admission";

/// Where generated Kubernetes objects are: each file below is one object, and all must be
/// admitted. `bootstrap/manifests/` holds static pods, which the kubelet reads from disk; the
/// API server admits them as the Pods their mirror pods are.
const OBJECT_DIRS: [&str; 3] = ["manifests/", "openshift/", "bootstrap/manifests/"];

/// Generated files that are not API objects, and why they are not applied:
const NOT_OBJECTS: [&str; 5] = [
    // a shell script the bootkube service runs;
    "bootkube/",
    // files the bootstrap static pod reads from disk (cloud.conf, CA bundle);
    "bootstrap/configs/",
    // its kubeconfig (`kind: Config` is a client file, not a resource), certificate and key;
    "bootstrap/secrets/",
    // LeaderMigrationConfiguration files for the controller managers' --leader-migration-config
    // flag: component configuration, not served by any API (their in-cluster copy is ConfigMap
    // manifests/ccm/12-leader-migration-config.yaml, which is admitted; tests/it/validators.rs
    // checks them against their schema);
    "leader-migration/",
    // the run's own state.
    ".ccm-assets-state.json",
];

/// Our inputs, copied into the directory.
const INPUTS: [&str; 3] = ["install-config.yaml", "clouds.yaml", "ca.pem"];

/// CRDs of ours for the OpenShift kinds the generator writes (each file says what it holds).
const CRDS: &str = "tests/crds";

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn every_generated_object_is_admitted_and_read_back_as_written() {
    let stack = KubeStack::load();
    let kubectl = Kubectl::new(&stack);
    install_crds(&kubectl);
    let mut namespaces =
        Namespaces { kubectl: &kubectl, seen: BTreeSet::new(), created: Vec::new() };
    let mut admitted = 0;
    for (name, t) in all_cases() {
        t.expect(0);
        let objects = objects(&t.dir());
        assert!(!objects.is_empty(), "{name}: no Kubernetes object generated");
        namespaces.ensure(&objects);
        let applied = Applied::apply(&kubectl, &name, &objects);
        let read = applied.read_back(&name);
        let mismatches: Vec<String> = objects
            .iter()
            .zip(&read)
            .flat_map(|(written, read)| compare(&written.value, read))
            .map(|m| m.to_string())
            .collect();
        assert!(
            mismatches.is_empty(),
            "{name}: the API server did not keep what we wrote:\n{}",
            mismatches.join("\n")
        );
        admitted += objects.len();
    }
    // A floor, so that a walk that found nothing cannot pass: 32 cases, 475 objects today.
    assert!(admitted > 400, "only {admitted} objects admitted");
}

/// Every example and fixture variant of every platform (tests/it/platforms.rs and
/// tests/it/openstack.rs), OpenStack with leader migration, and vSphere's INI config.
fn all_cases() -> Vec<(String, Test)> {
    let mut out = cases();
    out.push(("openstack".to_owned(), Test::new().example("openstack")));
    for case in ["ca", "no-region", "manual", "single-replica", "user-managed", "routes"] {
        out.push((format!("openstack-{case}"), Test::new().fixture(&format!("openstack/{case}"))));
    }
    let out = out.into_iter().map(|(name, t)| (name, with_credentials(t).create(&pinned(&[]))));
    let migration = Test::new().example("openstack").create(&pinned(&["--leader-migration"]));
    let ini = with_credentials(Test::new().example("vsphere"))
        .create(&pinned(&["--vsphere-config-format", "ini"]));
    out.chain([
        ("openstack-leader-migration".to_owned(), migration),
        ("vsphere-ini".to_owned(), ini),
    ])
    .collect()
}

/// One generated object: its file, its text as written and its value.
struct Object {
    path: String,
    text: String,
    value: Value,
}

/// The generated objects of `dir`, Namespaces first (kubectl applies them in order); fails on a
/// generated file that is neither an object nor known not to be one.
fn objects(dir: &Path) -> Vec<Object> {
    let mut out = Vec::new();
    for (path, bytes) in tree(dir) {
        if INPUTS.contains(&path.as_str()) || NOT_OBJECTS.iter().any(|p| path.starts_with(p)) {
            continue;
        }
        assert!(
            OBJECT_DIRS.iter().any(|d| path.starts_with(d)),
            "{path}: a generated file this test does not know: apply it or list it in NOT_OBJECTS"
        );
        let text = String::from_utf8(bytes).expect("manifests are UTF-8");
        let value: Value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{path}: not one YAML object: {e}"));
        assert!(value["apiVersion"].is_string() && value["kind"].is_string(), "{path}");
        out.push(Object { path, text, value });
    }
    out.sort_by_key(|o| o.value["kind"] != "Namespace");
    out
}

/// The objects' files as one YAML stream, byte for byte as written.
fn stream<'a>(objects: impl IntoIterator<Item = &'a Object>) -> String {
    objects
        .into_iter()
        .map(|o| format!("# {}\n{}", o.path, o.text))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// kubectl as admin with a discovery cache of this test's own (a cache from before the CRDs
/// were installed would not know their kinds).
struct Kubectl<'a> {
    stack: &'a KubeStack,
    cache: tempfile::TempDir,
}

impl<'a> Kubectl<'a> {
    fn new(stack: &'a KubeStack) -> Kubectl<'a> {
        Kubectl { stack, cache: tempfile::tempdir().expect("tempdir") }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.stack.kubectl();
        cmd.arg("--cache-dir").arg(self.cache.path()).args(args);
        cmd
    }

    /// stdout, or a panic with `what` and the stderr (Secret values hidden) when kubectl fails
    /// or the API server warns (a deprecated field or API is found here, not by a user).
    fn run(&self, what: &str, args: &[&str], stdin: Option<&str>, hide: &[String]) -> String {
        let out = run_bounded(self.command(args), stdin);
        let mut err = String::from_utf8_lossy(&out.stderr).into_owned();
        for secret in hide {
            err = err.replace(secret.as_str(), "<secret>");
        }
        let args = args.join(" ");
        assert!(out.status.success(), "{what}: kubectl {args} failed ({}):\n{err}", out.status);
        let warned = err.lines().any(|l| l.starts_with("Warning:"));
        assert!(!warned, "{what}: the API server warned about kubectl {args}:\n{err}");
        String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
    }
}

/// Installs (or updates) the CRDs of tests/crds, shared by every test: applied, never deleted.
fn install_crds(kubectl: &Kubectl<'_>) {
    let dir = repo().join(CRDS).display().to_string();
    let args = ["apply", "--server-side", "--field-manager", MANAGER, "--force-conflicts", "-f"];
    kubectl.run("installing the CRDs", &[&args[..], &[dir.as_str()]].concat(), None, &[]);
    let wait = ["wait", "--for=condition=Established", "--timeout=45s", "-f", dir.as_str()];
    kubectl.run("waiting for the CRDs", &wait, None, &[]);
}

/// The namespaces the objects live in that the cluster lacked: created, and deleted (waiting,
/// so that the next test can create them again) when the test ends.
struct Namespaces<'a> {
    kubectl: &'a Kubectl<'a>,
    /// Every namespace looked up, whether it was there or created.
    seen: BTreeSet<String>,
    created: Vec<String>,
}

impl Namespaces<'_> {
    fn ensure(&mut self, objects: &[Object]) {
        let wanted: BTreeSet<&str> = objects
            .iter()
            .filter_map(|o| match o.value["kind"].as_str() {
                Some("Namespace") => o.value["metadata"]["name"].as_str(),
                _ => o.value["metadata"]["namespace"].as_str(),
            })
            .collect();
        for ns in wanted {
            if !self.seen.insert(ns.to_owned()) {
                continue;
            }
            let get = ["get", "namespace", ns, "--ignore-not-found", "-o", "name"];
            if self.kubectl.run("looking up a namespace", &get, None, &[]).trim().is_empty() {
                self.kubectl.run("creating a namespace", &["create", "namespace", ns], None, &[]);
                self.created.push(ns.to_owned());
            }
        }
    }
}

impl Drop for Namespaces<'_> {
    fn drop(&mut self) {
        if self.created.is_empty() {
            return;
        }
        let mut args = vec!["delete", "namespace", "--ignore-not-found", "--timeout=50s"];
        args.extend(self.created.iter().map(String::as_str));
        let _ = run_bounded(self.kubectl.command(&args), None);
    }
}

/// One case's objects on the cluster; deleted (but for Namespaces, see [`Namespaces`]) when
/// dropped, whether the case passed or not.
struct Applied<'a> {
    kubectl: &'a Kubectl<'a>,
    objects: &'a [Object],
    /// Every Secret value, plain and base64, hidden from kubectl's messages.
    hide: Vec<String>,
}

impl<'a> Applied<'a> {
    /// Applies every object server-side with strict field validation; then the `status` of
    /// those that carry one, through the status subresource (the main resource ignores it), as
    /// OpenShift's bootstrap does for Infrastructure `cluster`.
    fn apply(kubectl: &'a Kubectl<'a>, case: &str, objects: &'a [Object]) -> Applied<'a> {
        let applied = Applied { kubectl, objects, hide: secrets(objects) };
        let apply = ["apply", "--server-side", "--field-manager", MANAGER, "--validate=strict"];
        let args = [&apply[..], &["-f", "-"]].concat();
        applied.run(&format!("{case}: applying"), &args, &stream(objects));
        let with_status: Vec<&Object> =
            objects.iter().filter(|o| o.value.get("status").is_some()).collect();
        if !with_status.is_empty() {
            let args = [&apply[..], &["--subresource=status", "-f", "-"]].concat();
            applied.run(&format!("{case}: applying status"), &args, &stream(with_status));
        }
        applied
    }

    /// Each object as the server returns it, in the order written (one request per case).
    fn read_back(&self, case: &str) -> Vec<Value> {
        let args = ["get", "-o", "json", "-f", "-"];
        let out = self.run(&format!("{case}: reading back"), &args, &stream(self.objects));
        let read: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
        let items = match read["kind"].as_str() {
            Some("List") => read["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![read],
        };
        let find = |key: &str| items.iter().find(|r| describe(r) == key).cloned();
        let read = self
            .objects
            .iter()
            .map(|o| describe(&o.value))
            .map(|key| find(&key).unwrap_or_else(|| panic!("{case}: {key} was not read back")));
        read.collect()
    }

    fn run(&self, what: &str, args: &[&str], stdin: &str) -> String {
        self.kubectl.run(what, args, Some(stdin), &self.hide)
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        let rest = self.objects.iter().filter(|o| o.value["kind"] != "Namespace");
        let text = stream(rest);
        let args = ["delete", "--ignore-not-found", "--wait=false", "-f", "-"];
        let _ = run_bounded(self.kubectl.command(&args), Some(&text));
        // The next case applies the same names: wait until these are gone (a watch, no poll).
        let args = ["wait", "--for=delete", "--timeout=45s", "-f", "-"];
        let _ = run_bounded(self.kubectl.command(&args), Some(&text));
    }
}

/// Every Secret value of the objects, plain and base64.
fn secrets(objects: &[Object]) -> Vec<String> {
    use base64::Engine as _;
    let mut out = Vec::new();
    for object in objects.iter().filter(|o| o.value["kind"] == "Secret") {
        for (key, decode) in [("data", true), ("stringData", false)] {
            let Some(values) = object.value[key].as_object() else { continue };
            for value in values.values().filter_map(Value::as_str).filter(|v| !v.is_empty()) {
                out.push(value.to_owned());
                let engine = base64::engine::general_purpose::STANDARD;
                let other = if decode {
                    engine.decode(value).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
                } else {
                    Some(engine.encode(value))
                };
                out.extend(other.filter(|o| !o.is_empty()));
            }
        }
    }
    out
}
