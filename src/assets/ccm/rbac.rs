//! The CCM's namespace, service account and RBAC: the same shape on every platform, named
//! after the platform's CCM (`app`) and its credentials Secrets.

use serde_json::{Value, json};

use super::NAMESPACE;
use crate::assets::credentials;

/// What the names depend on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Names<'a> {
    /// The CCM's app name (ClusterRole, Role and bindings are named after it).
    pub(super) app: &'a str,
    /// The `kube-system` credentials Secret the bootstrap CCM reads, when the platform has one.
    pub(super) secret: Option<&'a str>,
    /// The platform name (`openstack`), which names the reader and watcher Roles.
    pub(super) platform: &'a str,
    /// The Secret the in-cluster CCM reads in its own namespace, when it reads one.
    pub(super) in_cluster_secret: Option<&'a str>,
    /// Whether the in-cluster CCM also reads the `kube-system` Secret through the API.
    pub(super) reads_credentials_secret: bool,
    /// Whether the CCM is our own (the image's binary): it gets exactly the grants it uses,
    /// which the real-cluster RBAC test measures (controller/tests/it/real_kube_rbac.rs).
    pub(super) own_ccm: bool,
}

const SA: &str = "cloud-controller-manager";
/// The built-in ClusterRole that may create TokenReviews and SubjectAccessReviews.
const AUTH_DELEGATOR: &str = "system:auth-delegator";
const CCM_USER: &str = "system:cloud-controller-manager";

fn user() -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": CCM_USER})
}

/// The in-cluster CCM's service account, as a subject.
pub(super) fn service_account() -> Value {
    json!({"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE})
}

/// A (Cluster)RoleBinding named after the (Cluster)Role it binds.
pub(super) fn binding(kind: &str, name: &str, namespace: Option<&str>, subjects: Value) -> Value {
    binding_to(kind, name, name, namespace, subjects)
}

/// A (Cluster)RoleBinding `name` of the (Cluster)Role `role`.
fn binding_to(
    kind: &str,
    name: &str,
    role: &str,
    namespace: Option<&str>,
    subjects: Value,
) -> Value {
    let role_kind = if kind == "ClusterRoleBinding" { "ClusterRole" } else { "Role" };
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects,
    })
}

/// A Role (in `namespace`) or ClusterRole.
pub(super) fn role(kind: &str, name: &str, namespace: Option<&str>, rules: Value) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "rules": rules,
    })
}

/// Leases: `create` for any (RBAC cannot restrict `create` by name) and `verbs` on lease `name`.
pub(super) fn lease_rules(verbs: &[&str], name: &str) -> Vec<Value> {
    vec![
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]}),
        json!({"apiGroups": ["coordination.k8s.io"], "resourceNames": [name],
               "resources": ["leases"], "verbs": verbs}),
    ]
}

/// What the CCM's leader election needs on its main lease (named after its service account):
/// our CCM's elector reads, creates and replaces it (never patches it); client-go's also
/// patches.
pub(super) fn main_lease_rules(own_ccm: bool) -> Vec<Value> {
    let verbs: &[&str] = if own_ccm { &["get", "update"] } else { &["get", "patch", "update"] };
    lease_rules(verbs, SA)
}

/// The ClusterRole's rules for an upstream CCM (client-go: core Events, updates as well as
/// patches).
fn upstream_cluster_rules() -> Value {
    json!([
        {"apiGroups": [""], "resources": ["nodes"],
         "verbs": ["delete", "get", "list", "patch", "update", "watch"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch", "update"]},
        // The service controller: load balancers for type LoadBalancer Services,
        // with their finalizer and status.
        {"apiGroups": [""], "resources": ["services"],
         "verbs": ["get", "list", "patch", "update", "watch"]},
        {"apiGroups": [""], "resources": ["services/status"], "verbs": ["patch", "update"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
         "verbs": ["create", "patch", "update"]},
    ])
}

/// The ClusterRole's rules for our own CCM: what it asks, measured against the real API
/// server. It watches Nodes and Services (list + watch), writes them by merge patch only
/// (never get, never update), deletes the Node of a server gone, and writes `events.k8s.io`
/// Events (kube-rs's recorder creates one, then patches it when the same one recurs).
fn own_cluster_rules() -> Value {
    json!([
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["delete", "list", "patch", "watch"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "patch", "watch"]},
        {"apiGroups": [""], "resources": ["services/status"], "verbs": ["patch"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    ])
}

/// A namespace of the control plane's management workloads (the CCM's, its operator's):
/// scheduled on control-plane nodes whatever the cluster's default node selector, a
/// management workload, run level 0 (no security context constraints).
pub fn management_namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "annotations": {
                "openshift.io/node-selector": "",
                "workload.openshift.io/allowed": "management",
            },
            "labels": {
                "openshift.io/cluster-monitoring": "true",
                "openshift.io/run-level": "0",
            },
            "name": name,
        },
    })
}

/// The objects, each with its file name under `manifests/ccm/`, in apply order.
pub(super) fn objects(names: &Names<'_>) -> Vec<(String, Value)> {
    let Names { app, secret, platform, in_cluster_secret, reads_credentials_secret, own_ccm } =
        *names;
    let cluster_rules = if own_ccm { own_cluster_rules() } else { upstream_cluster_rules() };
    let mut out = vec![
        ("00-namespace.yaml".to_owned(), management_namespace(NAMESPACE)),
        (
            "01-serviceaccount.yaml".to_owned(),
            json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": SA, "namespace": NAMESPACE},
            }),
        ),
        ("02-clusterrole.yaml".to_owned(), role("ClusterRole", app, None, cluster_rules)),
        (
            "03-clusterrolebinding.yaml".to_owned(),
            binding("ClusterRoleBinding", app, None, json!([service_account(), user()])),
        ),
    ];
    // Our CCM reads its credentials from the mounted Secret's file only (the kubelet mounts it).
    let mut rules = main_lease_rules(own_ccm);
    if let Some(name) = in_cluster_secret.filter(|_| !own_ccm) {
        rules.push(json!({"apiGroups": [""], "resourceNames": [name],
                          "resources": ["secrets"], "verbs": ["get"]}));
    }
    out.push(("04-role.yaml".to_owned(), role("Role", app, Some(NAMESPACE), json!(rules))));
    out.push((
        "05-rolebinding.yaml".to_owned(),
        binding("RoleBinding", app, Some(NAMESPACE), json!([service_account()])),
    ));
    if let Some(secret) = secret {
        let ns = Some(credentials::NAMESPACE);
        let readers = if reads_credentials_secret {
            json!([service_account(), user()])
        } else {
            json!([user()])
        };
        let reader = credentials::reader_role(platform);
        out.push((
            "06-creds-reader-rolebinding.yaml".to_owned(),
            binding("RoleBinding", &reader, ns, readers.clone()),
        ));
        // The bootstrap CCM watches the credentials Secret (list + watch by name) to follow a
        // rotation; the installer's reader Role only grants `get`.
        let watcher = format!("{platform}-creds-secret-watcher");
        out.push((
            "07-creds-watcher-role.yaml".to_owned(),
            role(
                "Role",
                &watcher,
                ns,
                json!([{"apiGroups": [""], "resourceNames": [secret],
                        "resources": ["secrets"], "verbs": ["list", "watch"]}]),
            ),
        ));
        out.push((
            "08-creds-watcher-rolebinding.yaml".to_owned(),
            binding("RoleBinding", &watcher, ns, readers),
        ));
    }
    // `/metrics` is served to whom the API server says (TokenReview, SubjectAccessReview), as
    // every controller manager delegates: both identities (the bootstrap static pod's user too)
    // may ask it. See: issue 36.
    out.push((
        "09-auth-delegator-clusterrolebinding.yaml".to_owned(),
        binding_to(
            "ClusterRoleBinding",
            &format!("{app}:{AUTH_DELEGATOR}"),
            AUTH_DELEGATOR,
            None,
            json!([service_account(), user()]),
        ),
    ));
    out
}
