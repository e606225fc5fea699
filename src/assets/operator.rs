//! `manifests/ccm-operator/`: `ccm-assets operator` in the cluster (issue 39), written where the
//! platform has a CCM of ours, beside the CCM it keeps (`manifests/ccm/`).
//!
//! Its namespace, service account, RBAC, Deployment and an empty `ClusterOperator`, as
//! OpenShift's release manifests create CCCMO's. The RBAC grants what the operator does and
//! no more: it reads the config kinds and the inputs it renders from by name
//! (`openshift-config` ConfigMaps, `kube-system` Secrets), server-side applies the CCM's
//! objects (namespace, ClusterRoles and bindings cluster-wide; Roles and bindings in the CCM's
//! namespace and in `kube-system`; the rest in the CCM's namespace), lists the CCM's pods (to
//! wait for them on removal) and annotates those that mount a ConfigMap or Secret it has just
//! written (for the kubelet to refresh the files at once), and writes its Lease, its Events
//! and the ClusterOperator. It may
//! `bind` and `escalate` roles, so that it can apply the CCM's RBAC without holding every
//! permission that grants. tests/it/real_kube_operator_rbac.rs checks each grant, and a few
//! refusals, under the real API server's authorizer.
//!
//! The Role in the CCM's namespace lives and dies with that namespace, which
//! `manifests/ccm/00-namespace.yaml` creates (every platform with a CCM writes it).

use serde_json::{Value, json};

use super::ccm;
use super::images::Images;
use super::install_config;
use super::platform;
use super::provider::own_image_security_context;
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "ccm-operator";

/// The operator's namespace: its Deployment, Lease and Events.
pub const NAMESPACE: &str = "openshift-cloud-controller-manager-operator";

/// Its service account, and the name of its Deployment and of every RBAC object it is given.
pub const NAME: &str = "ccm-assets-operator";

/// The ClusterOperator it reports on.
pub const CLUSTER_OPERATOR: &str = "cloud-controller-manager";

/// Where it serves `/healthz`, `/readyz` and `/metrics`: on the node's loopback only (the pod
/// shares the host's network).
pub const HEALTH_ADDR: &str = "127.0.0.1:9259";

/// The namespace of the cloud-provider ConfigMap and the proxy's trusted CA.
const CONFIG_NAMESPACE: &str = "openshift-config";

/// The namespace of the cloud credentials Secret.
const CREDENTIALS_NAMESPACE: &str = super::credentials::NAMESPACE;

/// Every verb of an object the operator applies, and deletes on `operator remove`.
const WRITE: [&str; 7] = ["get", "list", "watch", "create", "patch", "update", "delete"];

/// What the operator reads by name (a watch with a `metadata.name` field selector).
const READ: [&str; 3] = ["get", "list", "watch"];

/// Writes the operator's manifests where the platform has a CCM of ours.
#[derive(Debug)]
pub struct OperatorAsset {
    images: Images,
}

impl OperatorAsset {
    /// `images`: the operator runs ccm-assets' own image (`--ccm-assets-image` overrides it).
    pub fn new(images: Images) -> OperatorAsset {
        OperatorAsset { images }
    }
}

impl Asset for OperatorAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Controller Manager Operator"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        if platform::of(&config)?.provider.ccm().is_none() {
            return Ok(Output::default());
        }
        let mut output = Output::default();
        for (path, value) in objects(&self.images.assets) {
            output = output.with_file(File::new(path, to_yaml(&value)?));
        }
        Ok(output)
    }
}

/// The operator's objects, each with the file it is written to, in apply order: namespace,
/// service account, roles, bindings, Deployment, ClusterOperator. `image`: ccm-assets' own.
pub fn objects(image: &str) -> Vec<(String, Value)> {
    let file = |name: &str| format!("manifests/ccm-operator/{name}");
    let mut out = vec![
        (file("00-namespace.yaml"), crate::assets::ccm::management_namespace(NAMESPACE)),
        (
            file("01-service-account.yaml"),
            json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
            }),
        ),
        (file("02-clusterrole.yaml"), role("ClusterRole", None, &cluster_rules())),
    ];
    let roles = namespaced_rules();
    for (short, namespace, rules) in &roles {
        out.push((file(&format!("02-role-{short}.yaml")), role("Role", Some(namespace), rules)));
    }
    out.push((file("03-clusterrolebinding.yaml"), binding("ClusterRoleBinding", None)));
    for (short, namespace, _) in &roles {
        let name = file(&format!("03-rolebinding-{short}.yaml"));
        out.push((name, binding("RoleBinding", Some(namespace))));
    }
    out.push((file("10-deployment.yaml"), deployment(image)));
    out.push((file("20-clusteroperator.yaml"), cluster_operator()));
    out
}

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": [group], "resources": resources, "verbs": verbs})
}

/// What the operator does cluster-wide.
fn cluster_rules() -> Value {
    json!([
        // Its inputs: the platform and cloud config reference, the proxy, the cluster networks.
        rule("config.openshift.io", &["infrastructures", "networks", "proxies"], &READ),
        // Its status (created when missing), and the management-state annotation it reads.
        rule(
            "config.openshift.io",
            &["clusteroperators"],
            &["get", "list", "watch", "create", "patch", "update"],
        ),
        rule("config.openshift.io", &["clusteroperators/status"], &["patch", "update"]),
        // The CCM's namespace and cluster-wide RBAC.
        rule("", &["namespaces"], &WRITE),
        rule("rbac.authorization.k8s.io", &["clusterroles", "clusterrolebindings"], &WRITE),
        rule("rbac.authorization.k8s.io", &["clusterroles"], &["bind", "escalate"]),
    ])
}

/// What the operator does in each namespace, with the short name of its Role's file.
fn namespaced_rules() -> Vec<(&'static str, &'static str, Value)> {
    let roles = || rule("rbac.authorization.k8s.io", &["roles", "rolebindings"], &WRITE);
    let bind = || rule("rbac.authorization.k8s.io", &["roles"], &["bind", "escalate"]);
    vec![
        (
            "ccm",
            ccm::NAMESPACE,
            json!([
                rule("", &["configmaps", "secrets", "serviceaccounts", "services"], &WRITE),
                roles(),
                bind(),
                rule("apps", &["deployments", "daemonsets"], &WRITE),
                rule("policy", &["poddisruptionbudgets"], &WRITE),
                // `operator remove` waits for the CCM's pods to be gone; a pod that mounts
                // what was just written is annotated, for the kubelet to refresh it now.
                rule("", &["pods"], &["list", "watch", "patch"]),
            ]),
        ),
        // The cloud-provider config and the proxy's trusted CA bundle.
        ("cloud-config", CONFIG_NAMESPACE, json!([rule("", &["configmaps"], &READ)])),
        // The credentials Secret; the CCM's Roles that read it.
        (
            "credentials",
            CREDENTIALS_NAMESPACE,
            json!([rule("", &["secrets"], &READ), roles(), bind()]),
        ),
        // Its Lease and the Warning Events on its pod.
        (
            "operator",
            NAMESPACE,
            json!([
                rule("coordination.k8s.io", &["leases"], &["get", "create", "update"]),
                rule("events.k8s.io", &["events"], &["create", "patch"]),
            ]),
        ),
    ]
}

/// `metadata` of the operator's RBAC objects: its name, in `namespace` when there is one.
fn metadata(namespace: Option<&str>) -> Value {
    let mut metadata = json!({"name": NAME});
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    metadata
}

fn role(kind: &str, namespace: Option<&str>, rules: &Value) -> Value {
    let metadata = metadata(namespace);
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "rules": rules,
    })
}

/// Binds the role of the same kind and name to the operator's service account.
fn binding(kind: &str, namespace: Option<&str>) -> Value {
    let role_kind = if namespace.is_some() { "Role" } else { "ClusterRole" };
    let metadata = metadata(namespace);
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
    })
}

/// One replica (one Lease holder at a time; a second would only wait), rolled like the CCM's
/// Deployment (`RollingUpdate`, `maxSurge: 0`, `maxUnavailable: 1`: see
/// [`ccm::deployment`]), on the control-plane nodes the CCM runs on, with the same
/// tolerations, so that it runs before any node is initialized. In-cluster config: no flag
/// but where to serve health. Its pod's name and namespace, from the downward API, are where
/// it tells a refused edit as a Warning Event.
fn deployment(image: &str) -> Value {
    let labels = json!({"app": NAME});
    let field = |path: &str| json!({"fieldRef": {"fieldPath": path}});
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"labels": labels, "name": NAME, "namespace": NAMESPACE},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{
                        "name": "operator",
                        "image": image,
                        "command": ["ccm-assets", "operator"],
                        "args": [format!("--health-addr={HEALTH_ADDR}")],
                        "env": [
                            {"name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace")},
                            {"name": "POD_NAME", "valueFrom": field("metadata.name")},
                        ],
                        "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                        "securityContext": own_image_security_context(),
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                    }],
                    "hostNetwork": true,
                    "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": NAME,
                    "tolerations": ccm::tolerations(),
                },
            },
        },
    })
}

/// Created empty, as OpenShift's release manifests create every ClusterOperator: the operator
/// writes its status.
fn cluster_operator() -> Value {
    json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterOperator",
        "metadata": {"name": CLUSTER_OPERATOR},
        "spec": {},
        "status": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects() -> Vec<(String, Value)> {
        super::objects("quay.io/ccm-assets/ccm-assets:v0.1.0")
    }

    #[test]
    fn every_file_holds_one_object_and_sorts_in_apply_order() {
        let objects = objects();
        let paths: Vec<&str> = objects.iter().map(|(path, _)| path.as_str()).collect();
        let mut sorted = paths.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(paths, sorted, "a file per object, named in apply order");
        let kinds: Vec<&str> = objects.iter().filter_map(|(_, v)| v["kind"].as_str()).collect();
        assert_eq!(kinds.first(), Some(&"Namespace"));
        assert_eq!(kinds.last(), Some(&"ClusterOperator"));
        assert_eq!(kinds.len(), objects.len());
    }

    #[test]
    fn every_role_is_bound_to_the_operators_service_account_only() {
        let objects = objects();
        let roles: Vec<&Value> = objects
            .iter()
            .map(|(_, v)| v)
            .filter(|v| v["kind"] == "Role" || v["kind"] == "ClusterRole")
            .collect();
        assert_eq!(roles.len(), 5, "a ClusterRole and four Roles");
        for role in roles {
            let namespace = &role["metadata"]["namespace"];
            let bound = objects.iter().map(|(_, v)| v).find(|v| {
                v["roleRef"]["kind"] == role["kind"] && v["metadata"]["namespace"] == *namespace
            });
            let binding = bound.unwrap_or_else(|| panic!("{role} is bound"));
            assert_eq!(binding["roleRef"]["name"], NAME);
            assert_eq!(
                binding["subjects"],
                json!([{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}])
            );
        }
    }

    #[test]
    fn the_deployment_runs_the_operator_with_in_cluster_config() {
        let objects = objects();
        let (_, deployment) = objects.iter().find(|(_, v)| v["kind"] == "Deployment").unwrap();
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["command"], json!(["ccm-assets", "operator"]));
        assert_eq!(container["args"], json!(["--health-addr=127.0.0.1:9259"]));
        assert_eq!(container["image"], "quay.io/ccm-assets/ccm-assets:v0.1.0");
        assert_eq!(deployment["spec"]["replicas"], 1);
        assert_eq!(deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
        assert_eq!(deployment["spec"]["template"]["spec"]["tolerations"], ccm::tolerations());
    }
}
