//! The RBAC `create manifests` gives `ccm-assets operator` (manifests/ccm-operator/02-…, 03-…)
//! under the real API server's authorizer (issue 39): its service account may do exactly what
//! the operator does, no more (the rules the authorizer reports for it, less those of a service
//! account bound to nothing, are the list below, namespace by namespace), and with `bind` and
//! `escalate` it applies and deletes the CCM's objects (manifests/ccm/), RBAC that grants what
//! it does not hold included, as the operator does.
//!
//! The namespaces and objects are the generated ones, with fixed names (nextest group
//! `real-kube-ccm`); what the test created is deleted at its end, failed or not.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::cluster::{run_bounded, try_run_bounded};
use testkit::kube_stack::{KubeStack, unique};

use crate::platforms::{pinned, with_credentials};
use crate::support::{Test, tree};

/// The operator's namespace and service account, as the generator names them.
const NAMESPACE: &str = "openshift-cloud-controller-manager-operator";
const ACCOUNT: &str = "ccm-assets-operator";
/// The CCM's namespace.
const CCM: &str = "openshift-cloud-controller-manager";
/// The field manager of the operator's applies.
const MANAGER: &str = "ccm-assets-operator";

/// Every verb of an object the operator applies and deletes.
const WRITE: &[&str] = &["get", "list", "watch", "create", "patch", "update", "delete"];
const READ: &[&str] = &["get", "list", "watch"];

/// `(namespace, group, resource, verbs)`: what the operator does (issue 39); `""` namespace:
/// cluster-wide.
fn granted() -> Vec<(&'static str, &'static str, &'static str, &'static [&'static str])> {
    let mut out = vec![
        ("", "config.openshift.io", "infrastructures", READ),
        ("", "config.openshift.io", "proxies", READ),
        ("", "config.openshift.io", "networks", READ),
        (
            "",
            "config.openshift.io",
            "clusteroperators",
            &["get", "list", "watch", "create", "patch", "update"][..],
        ),
        ("", "config.openshift.io", "clusteroperators/status", &["patch", "update"][..]),
        ("", "", "namespaces", WRITE),
        ("", "rbac.authorization.k8s.io", "clusterroles", WRITE),
        ("", "rbac.authorization.k8s.io", "clusterroles", &["bind", "escalate"][..]),
        ("", "rbac.authorization.k8s.io", "clusterrolebindings", WRITE),
        ("openshift-config", "", "configmaps", READ),
        ("kube-system", "", "secrets", READ),
        (CCM, "", "pods", &["list", "watch", "patch"][..]),
        (NAMESPACE, "coordination.k8s.io", "leases", &["get", "create", "update"][..]),
        (NAMESPACE, "events.k8s.io", "events", &["create", "patch"][..]),
    ];
    for namespace in [CCM, "kube-system"] {
        out.push((namespace, "rbac.authorization.k8s.io", "roles", WRITE));
        out.push((namespace, "rbac.authorization.k8s.io", "rolebindings", WRITE));
        out.push((namespace, "rbac.authorization.k8s.io", "roles", &["bind", "escalate"][..]));
    }
    for (group, resource) in [
        ("", "configmaps"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("", "services"),
        ("apps", "deployments"),
        ("apps", "daemonsets"),
        ("policy", "poddisruptionbudgets"),
    ] {
        out.push((CCM, group, resource, WRITE));
    }
    out
}

/// `(namespace, verb, group, resource)` the operator never does, each refused.
const REFUSED: &[(&str, &str, &str, &str)] = &[
    ("default", "get", "", "secrets"),
    ("openshift-config", "list", "", "secrets"),
    ("openshift-config", "create", "", "configmaps"),
    ("kube-system", "create", "", "secrets"),
    ("kube-system", "create", "apps", "deployments"),
    ("kube-system", "get", "", "configmaps"),
    (CCM, "create", "", "pods"),
    (CCM, "delete", "", "pods"),
    (NAMESPACE, "delete", "coordination.k8s.io", "leases"),
    (NAMESPACE, "list", "coordination.k8s.io", "leases"),
    ("kube-system", "get", "coordination.k8s.io", "leases"),
    ("default", "create", "events.k8s.io", "events"),
    ("", "delete", "", "nodes"),
    ("", "patch", "", "nodes"),
    ("", "update", "config.openshift.io", "infrastructures"),
    ("", "patch", "config.openshift.io", "proxies"),
    ("", "create", "config.openshift.io", "networks"),
    ("", "delete", "config.openshift.io", "clusteroperators"),
    ("", "impersonate", "", "users"),
];

/// The namespaces the checks look at: those of the grants, and one with none.
const NAMESPACES: [&str; 5] = [NAMESPACE, CCM, "openshift-config", "kube-system", "default"];

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn the_operators_service_account_may_do_what_the_operator_does_and_no_more() {
    let stack = KubeStack::load();
    stack.install_crds();
    let t = with_credentials(Test::new().example("openstack")).create(&pinned(&[]));
    t.expect(0);
    let mut cleanup = Cleanup { stack: &stack, objects: Vec::new(), namespaces: Vec::new() };
    for namespace in [NAMESPACE, CCM, "openshift-config"] {
        if ensure_namespace(&stack, namespace) {
            cleanup.namespaces.push(namespace.to_owned());
        }
    }
    let rbac = files(&t.dir(), "manifests/ccm-operator/", |name| {
        ["01-", "02-", "03-"].iter().any(|prefix| name.starts_with(prefix))
    });
    assert_eq!(rbac.len(), 11, "service account, five roles, five bindings: {rbac:?}");
    let rbac_stream = stream(&rbac);
    cleanup.objects.push(rbac_stream.clone());
    stack.run(
        &["apply", "--server-side", "--field-manager", "ccm-assets-test", "-f", "-"],
        Some(&rbac_stream),
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let operator = stack.token_kubeconfig(dir.path(), NAMESPACE, ACCOUNT);
    // A service account bound to nothing: what every authenticated identity may do.
    let baseline_ns = stack.namespace("op-rbac");
    stack.run(&["create", "serviceaccount", "nobody", "-n", &baseline_ns.name], None);
    let nobody = stack.token_kubeconfig(dir.path(), &baseline_ns.name, "nobody");
    wait_until_granted(&stack, &operator);

    let mut wrong = Vec::new();
    for namespace in NAMESPACES {
        let baseline = rules(&stack, &nobody, namespace);
        let ours: BTreeSet<Grant> =
            rules(&stack, &operator, namespace).difference(&baseline).cloned().collect();
        let expected: BTreeSet<Grant> = granted()
            .into_iter()
            .filter(|(ns, ..)| ns.is_empty() || *ns == namespace)
            .flat_map(|(_, group, resource, verbs)| {
                verbs.iter().map(move |verb| Grant::new(verb, group, resource))
            })
            .collect();
        wrong.extend(
            ours.difference(&expected)
                .map(|g| format!("{namespace}: granted beyond the list: {g:?}")),
        );
        wrong
            .extend(expected.difference(&ours).map(|g| format!("{namespace}: not granted: {g:?}")));
    }
    for (namespace, verb, group, resource) in REFUSED {
        let namespace = if namespace.is_empty() { "default" } else { namespace };
        let all = rules(&stack, &operator, namespace);
        if all.iter().any(|g| g.allows(verb, group, resource)) {
            wrong.push(format!("{namespace}: {verb} {group}/{resource} is allowed"));
        }
    }
    assert!(wrong.is_empty(), "the operator's RBAC is not what it does:\n{}", wrong.join("\n"));

    // What the authorizer's rules cannot show: applying RBAC that grants more than the
    // operator holds takes `escalate`, binding a role it does not hold takes `bind`. Applied
    // as the operator applies them (server-side, its field manager), then deleted.
    let ccm = files(&t.dir(), "manifests/ccm/", |_| true);
    let objects: Vec<&(String, String)> =
        ccm.iter().filter(|(_, text)| !text.contains("\nkind: Namespace\n")).collect();
    assert!(objects.len() >= 10, "{objects:?}");
    let ccm_stream = stream(objects.iter().copied());
    cleanup.objects.push(ccm_stream.clone());
    as_operator(
        &stack,
        &operator,
        &["apply", "--server-side", "--field-manager", MANAGER, "-f", "-"],
        Some(&ccm_stream),
    )
    .expect("the operator applies the CCM's objects");
    let pending = ["delete", "--ignore-not-found", "--wait=false", "-f", "-"];
    as_operator(&stack, &operator, &pending, Some(&ccm_stream))
        .expect("the operator deletes the CCM's objects");

    // Its own Lease, Events and ClusterOperator status, as it writes them.
    let lease = unique("op-rbac-lease");
    let lease_object = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": lease, "namespace": NAMESPACE},
        "spec": {"holderIdentity": "test", "leaseDurationSeconds": 137},
    })
    .to_string();
    cleanup.objects.push(lease_object.clone());
    as_operator(&stack, &operator, &["create", "-f", "-"], Some(&lease_object))
        .expect("create its Lease");
    as_operator(&stack, &operator, &["get", "lease", &lease, "-n", NAMESPACE], None)
        .expect("get its Lease");
    as_operator(&stack, &operator, &["replace", "-f", "-"], Some(&lease_object))
        .expect("update its Lease");
    let refused =
        as_operator(&stack, &operator, &["delete", "lease", &lease, "-n", NAMESPACE], None);
    assert!(refused.is_err_and(|e| e.contains("forbidden")), "deleting its Lease");

    let event = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": unique("op-rbac-event"), "namespace": NAMESPACE},
        "eventTime": "2026-01-02T03:04:05.000000Z",
        "reportingController": MANAGER,
        "reportingInstance": "test",
        "action": "Reconcile",
        "reason": "Test",
        "type": "Warning",
        "regarding": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "namespace": NAMESPACE, "name": lease},
    })
    .to_string();
    cleanup.objects.push(event.clone());
    as_operator(&stack, &operator, &["create", "-f", "-"], Some(&event)).expect("create an Event");

    let co = json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": {"name": unique("op-rbac-co")},
        "spec": {},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "AsExpected",
            "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}]},
    })
    .to_string();
    cleanup.objects.push(co.clone());
    as_operator(&stack, &operator, &["create", "-f", "-"], Some(&co))
        .expect("create a ClusterOperator");
    let status =
        ["apply", "--server-side", "--field-manager", MANAGER, "--subresource=status", "-f", "-"];
    as_operator(&stack, &operator, &status, Some(&co)).expect("write its status");

    // And a few things it may not do, asked for for real (dry run: nothing happens if allowed).
    for args in [
        &["get", "secrets", "-n", "default"][..],
        &["get", "secrets", "-n", "openshift-config"][..],
        &["delete", "node", "--all", "--dry-run=server"][..],
        &["delete", "-f", "-", "--dry-run=server"][..],
    ] {
        let refused = as_operator(&stack, &operator, args, Some(&co));
        assert!(refused.is_err_and(|e| e.contains("forbidden")), "kubectl {}", args.join(" "));
    }
}

/// One permission: a verb on a resource of a group, on every object of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    verb: String,
    group: String,
    resource: String,
}

impl Grant {
    fn new(verb: &str, group: &str, resource: &str) -> Grant {
        Grant { verb: verb.to_owned(), group: group.to_owned(), resource: resource.to_owned() }
    }

    fn allows(&self, verb: &str, group: &str, resource: &str) -> bool {
        let any = |mine: &str, asked: &str| mine == "*" || mine == asked;
        any(&self.verb, verb) && any(&self.group, group) && any(&self.resource, resource)
    }
}

/// What the authorizer lets `kubeconfig`'s identity do in `namespace` (cluster-wide rules
/// included): a SelfSubjectRulesReview, each rule expanded to its grants. Rules limited to
/// named objects are left out (none of the operator's is).
fn rules(stack: &KubeStack, kubeconfig: &Path, namespace: &str) -> BTreeSet<Grant> {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    });
    let out = as_operator(
        stack,
        kubeconfig,
        &["create", "-o", "json", "-f", "-"],
        Some(&review.to_string()),
    )
    .expect("a SelfSubjectRulesReview");
    let review: Value = serde_json::from_str(&out).expect("JSON");
    assert_ne!(review["status"]["incomplete"], true, "{}", review["status"]);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect()
    };
    let mut out = BTreeSet::new();
    for rule in review["status"]["resourceRules"].as_array().into_iter().flatten() {
        if !strings(&rule["resourceNames"]).is_empty() {
            continue;
        }
        for verb in strings(&rule["verbs"]) {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    out.insert(Grant::new(&verb, &group, &resource));
                }
            }
        }
    }
    out
}

/// Makes `name` exist, waiting first for an earlier test's copy to finish terminating;
/// whether this test created it.
fn ensure_namespace(stack: &KubeStack, name: &str) -> bool {
    let start = Instant::now();
    loop {
        match stack.get("namespace", None, name) {
            None => {
                stack.run(&["create", "namespace", name], None);
                return true;
            }
            Some(ns) if ns["status"]["phase"] != "Terminating" => return false,
            Some(_) => {
                assert!(start.elapsed() < Duration::from_secs(90), "{name} stayed Terminating");
                let gone = ["wait", "--for=delete", &format!("namespace/{name}"), "--timeout=30s"];
                let mut cmd = stack.kubectl();
                cmd.args(gone);
                let _ = try_run_bounded(cmd, None);
            }
        }
    }
}

/// RBAC takes effect when the API server's informers see the bindings: a moment after the
/// apply.
fn wait_until_granted(stack: &KubeStack, operator: &Path) {
    let start = Instant::now();
    let wanted = Grant::new("get", "config.openshift.io", "infrastructures");
    while !rules(stack, operator, "default").contains(&wanted) {
        assert!(start.elapsed() < Duration::from_secs(30), "the bindings took no effect in 30 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// kubectl as the identity of `kubeconfig` (the operator, or the baseline): its stdout, or
/// its stderr.
fn as_operator(
    stack: &KubeStack,
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, String> {
    let mut cmd: Command = stack.kubectl_as(kubeconfig);
    cmd.args(args);
    // kubectl's own validation lists the CRDs, which the operator may not (nor needs to):
    // the server still decodes and checks every object.
    if matches!(args.first(), Some(&("create" | "apply" | "replace"))) {
        cmd.arg("--validate=false");
    }
    let out = run_bounded(cmd, stdin);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The generated files under `prefix` whose names `keep` takes, with their text, in order.
fn files(dir: &Path, prefix: &str, keep: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    tree(dir)
        .into_iter()
        .filter_map(|(path, bytes)| {
            let name = path.strip_prefix(prefix)?;
            keep(name).then(|| (path.clone(), String::from_utf8(bytes).expect("UTF-8")))
        })
        .collect()
}

/// The files as one YAML stream.
fn stream<'a>(files: impl IntoIterator<Item = &'a (String, String)>) -> String {
    files
        .into_iter()
        .map(|(path, text)| format!("# {path}\n{text}"))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// What the test made, deleted when it ends (as admin; namespaces last, waited for, so that the
/// next test can make them again).
struct Cleanup<'a> {
    stack: &'a KubeStack,
    /// YAML or JSON streams of objects.
    objects: Vec<String>,
    namespaces: Vec<String>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        for objects in self.objects.iter().rev() {
            let mut cmd = self.stack.kubectl();
            cmd.args(["delete", "--ignore-not-found", "--wait=false", "-f", "-"]);
            let _ = try_run_bounded(cmd, Some(objects));
        }
        if !self.namespaces.is_empty() {
            let mut cmd = self.stack.kubectl();
            cmd.args(["delete", "namespace", "--ignore-not-found", "--timeout=50s"]);
            cmd.args(&self.namespaces);
            let _ = try_run_bounded(cmd, None);
        }
    }
}
