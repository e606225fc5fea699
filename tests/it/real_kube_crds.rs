//! Our CRDs of OpenShift's config kinds (tests/crds, installed by
//! `testkit::kube_stack::KubeStack::install_crds`) on the real kube-apiserver: they install
//! twice over, the Infrastructure the generator writes is admitted strictly and read back
//! whole with the status set through the status subresource, and the Proxy, Network and
//! ClusterOperator keep the fields `ccm-assets operator` reads and writes, in the shapes
//! OpenShift gives them (a ClusterOperator's conditions merge per type across field managers;
//! a Network has no status subresource).
//!
//! Every object here has a name of its own (`unique`), not `cluster` or
//! `cloud-controller-manager`, so that it never meets an operator test's objects; each is
//! deleted when its test ends, failed or not.

use serde_json::{Value, json};
use testkit::cluster::{run_bounded, try_run_bounded};
use testkit::kube_stack::{KubeStack, unique};

use crate::platforms::{pinned, with_credentials};
use crate::readback::compare;
use crate::support::Test;

/// The field manager of this test's applies.
const MANAGER: &str = "ccm-assets-crds-test";

/// The generator's Infrastructure, as `create manifests` writes it for the OpenStack example.
const INFRASTRUCTURE: &str = "manifests/cluster-infrastructure-02-config.yml";

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn the_generated_infrastructure_is_admitted_strictly_and_read_back_with_its_status() {
    let stack = KubeStack::load();
    // Twice: a second install over the first changes nothing and fails nothing.
    stack.install_crds();
    stack.install_crds();

    let t = with_credentials(Test::new().example("openstack")).create(&pinned(&[]));
    t.expect(0);
    let mut written: Value = serde_saphyr::from_str(&t.read(INFRASTRUCTURE)).expect("YAML");
    let name = unique("crds-infra");
    written["metadata"]["name"] = json!(name);
    let _gone = Gone::new(&stack, "infrastructures.config.openshift.io", &name);

    let applied = apply(&stack, &written, false);
    assert!(applied.success(), "the generated Infrastructure was refused: {}", applied.stderr);
    let read = get(&stack, "infrastructures.config.openshift.io", &name);
    assert!(
        read["status"]["platformStatus"].is_null(),
        "status is a subresource: the object's apply must not set it, read {}",
        read["status"]
    );
    let status = apply(&stack, &written, true);
    assert!(status.success(), "the generated status was refused: {}", status.stderr);

    let read = get(&stack, "infrastructures.config.openshift.io", &name);
    let mismatches: Vec<String> = compare(&written, &read).iter().map(|m| m.to_string()).collect();
    assert!(mismatches.is_empty(), "not kept as written:\n{}", mismatches.join("\n"));
    assert_eq!(read["status"]["platformStatus"]["type"], "OpenStack");
    assert_eq!(read["spec"]["cloudConfig"]["name"], "cloud-provider-config");

    // Strict where declared: a misspelled field of a platform block is refused, not kept.
    let mut misspelled = written.clone();
    misspelled["status"]["platformStatus"]["openstack"]["apiServerInternalIps"] = json!([]);
    let refused = apply(&stack, &misspelled, true);
    assert!(!refused.success(), "a misspelled status field was admitted");
    assert!(refused.stderr.contains("apiServerInternalIps"), "{}", refused.stderr);
}

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn proxy_and_network_keep_what_the_operator_reads() {
    let stack = KubeStack::load();
    stack.install_crds();

    let proxy_name = unique("crds-proxy");
    let _gone = Gone::new(&stack, "proxies.config.openshift.io", &proxy_name);
    let proxy = json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "Proxy",
        "metadata": {"name": proxy_name},
        "spec": {
            "httpProxy": "http://proxy.example.com:3128",
            "httpsProxy": "http://proxy.example.com:3128",
            "noProxy": ".cluster.local,10.0.0.0/16",
            "readinessEndpoints": ["http://www.example.com"],
            "trustedCA": {"name": "user-ca-bundle"},
        },
        "status": {
            "httpProxy": "http://proxy.example.com:3128",
            "httpsProxy": "http://proxy.example.com:3128",
            "noProxy": ".cluster.local,10.0.0.0/16,localhost",
        },
    });
    for status in [false, true] {
        let out = apply(&stack, &proxy, status);
        assert!(out.success(), "Proxy (status: {status}) refused: {}", out.stderr);
    }
    let read = get(&stack, "proxies.config.openshift.io", &proxy_name);
    let mismatches: Vec<String> = compare(&proxy, &read).iter().map(|m| m.to_string()).collect();
    assert!(mismatches.is_empty(), "Proxy not kept:\n{}", mismatches.join("\n"));

    let network_name = unique("crds-network");
    let _gone_too = Gone::new(&stack, "networks.config.openshift.io", &network_name);
    let entries = json!([{"cidr": "10.128.0.0/14", "hostPrefix": 23}]);
    let network = json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "Network",
        "metadata": {"name": network_name},
        "spec": {
            "clusterNetwork": entries,
            "serviceNetwork": ["172.30.0.0/16"],
            "networkType": "OVNKubernetes",
        },
        "status": {
            "clusterNetwork": entries,
            "serviceNetwork": ["172.30.0.0/16"],
            "networkType": "OVNKubernetes",
            "clusterNetworkMTU": 1400,
        },
    });
    // As on OpenShift, the network operator's status goes in with the object: no subresource.
    let out = apply(&stack, &network, false);
    assert!(out.success(), "Network refused: {}", out.stderr);
    let read = get(&stack, "networks.config.openshift.io", &network_name);
    let mismatches: Vec<String> = compare(&network, &read).iter().map(|m| m.to_string()).collect();
    assert!(mismatches.is_empty(), "Network not kept:\n{}", mismatches.join("\n"));
    let out = apply(&stack, &network, true);
    assert!(!out.success(), "a Network status subresource answered; OpenShift's has none");
}

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn a_cluster_operators_conditions_merge_by_type_across_field_managers() {
    let stack = KubeStack::load();
    stack.install_crds();
    let name = unique("crds-co");
    let _gone = Gone::new(&stack, "clusteroperators.config.openshift.io", &name);
    let object = |status: Value| {
        json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterOperator",
            "metadata": {"name": name},
            "spec": {},
            "status": status,
        })
    };
    let condition = |kind: &str, status: &str| {
        json!({"type": kind, "status": status, "reason": "AsExpected", "message": "",
            "lastTransitionTime": "2026-01-02T03:04:05Z"})
    };
    // As the CVO creates it: an empty status.
    let out = apply(&stack, &object(json!({})), false);
    assert!(out.success(), "ClusterOperator refused: {}", out.stderr);

    let ours = object(json!({
        "conditions": [condition("Available", "True"), condition("Degraded", "False")],
        "versions": [{"name": "operator", "version": "0.1.0"}],
        "relatedObjects": [
            {"group": "", "resource": "namespaces", "name": "openshift-cloud-controller-manager"},
            {"group": "config.openshift.io", "resource": "clusteroperators", "name": name},
        ],
        "extension": {"anything": {"at": ["all", 1]}},
    }));
    let out = apply(&stack, &ours, true);
    assert!(out.success(), "status refused: {}", out.stderr);
    // Another writer's condition (as the config-sync controllers' are) merges with ours.
    let theirs =
        object(json!({"conditions": [condition("CloudConfigControllerAvailable", "True")]}));
    let out = apply_as(&stack, &theirs, true, "another-controller");
    assert!(out.success(), "the other manager's status refused: {}", out.stderr);

    let read = get(&stack, "clusteroperators.config.openshift.io", &name);
    let mismatches: Vec<String> = compare(&ours, &read).iter().map(|m| m.to_string()).collect();
    assert!(mismatches.is_empty(), "ours not kept:\n{}", mismatches.join("\n"));
    let types: Vec<&str> = (read["status"]["conditions"].as_array().expect("conditions").iter())
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, ["Available", "Degraded", "CloudConfigControllerAvailable"]);

    // `kubectl get co` prints the columns monitors and people read.
    let table = stack.run(&["get", "co", &name], None);
    let header = table.lines().next().unwrap_or_default();
    for column in ["VERSION", "AVAILABLE", "PROGRESSING", "DEGRADED", "SINCE"] {
        assert!(header.contains(column), "{table}");
    }
    assert!(table.contains("0.1.0"), "{table}");

    // A condition without its required lastTransitionTime is refused.
    let mut bad = condition("Progressing", "False");
    bad.as_object_mut().expect("an object").remove("lastTransitionTime");
    let out = apply(&stack, &object(json!({"conditions": [bad]})), true);
    assert!(!out.success(), "a condition without lastTransitionTime was admitted");
}

/// What a kubectl run said.
struct Outcome {
    code: Option<i32>,
    stderr: String,
}

impl Outcome {
    fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Server-side apply of `object` as this test's manager with strict field validation; its
/// status through the status subresource when `status`.
fn apply(stack: &KubeStack, object: &Value, status: bool) -> Outcome {
    apply_as(stack, object, status, MANAGER)
}

fn apply_as(stack: &KubeStack, object: &Value, status: bool, manager: &str) -> Outcome {
    let mut cmd = stack.kubectl();
    cmd.args(["apply", "--server-side", "--validate=strict", "--field-manager", manager]);
    if status {
        cmd.arg("--subresource=status");
    }
    cmd.args(["-f", "-"]);
    let out = run_bounded(cmd, Some(&object.to_string()));
    Outcome { code: out.status.code(), stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

/// A cluster-scoped object that must be there, as JSON.
fn get(stack: &KubeStack, resource: &str, name: &str) -> Value {
    stack.get(resource, None, name).unwrap_or_else(|| panic!("{resource} {name} is not there"))
}

/// A cluster-scoped object of the test, deleted (without waiting) when dropped.
struct Gone<'a> {
    stack: &'a KubeStack,
    resource: &'static str,
    name: String,
}

impl<'a> Gone<'a> {
    fn new(stack: &'a KubeStack, resource: &'static str, name: &str) -> Gone<'a> {
        Gone { stack, resource, name: name.to_owned() }
    }
}

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        let mut cmd = self.stack.kubectl();
        cmd.args(["delete", self.resource, &self.name, "--ignore-not-found", "--wait=false"]);
        // Never a second panic while a failed test unwinds.
        let _ = try_run_bounded(cmd, None);
    }
}
