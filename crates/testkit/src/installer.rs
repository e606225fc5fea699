//! What `create manifests` wrote, put in the real Kubernetes of scripts/kube-up.sh as an
//! installer would for `ccm-assets operator`: its Infrastructure (spec and status),
//! cloud-provider-config and credentials Secret, with a Network and a Proxy; and the clean-up
//! of all of that and of what the operator applies. The operator's tests and benchmarks use
//! these fixed names, so they run one at a time.

use serde_json::{Value, json};

use crate::kube_stack::KubeStack;

/// Puts the generated files that `read` gives (by path relative to the asset directory) in the
/// cluster; `edit_infra` edits the Infrastructure (spec and status) first. Creates the
/// namespaces `openshift-config` and the operator's.
pub fn install(
    stack: &KubeStack,
    read: &dyn Fn(&str) -> String,
    edit_infra: impl FnOnce(&mut Value),
) {
    for namespace in ["openshift-config", "openshift-cloud-controller-manager-operator"] {
        stack.run(&["create", "namespace", namespace], None);
    }
    for file in ["manifests/cloud-provider-config.yaml", "openshift/99_cloud-creds-secret.yaml"] {
        apply(stack, &read(file));
    }
    let mut infra: Value =
        serde_saphyr::from_str(&read("manifests/cluster-infrastructure-02-config.yml"))
            .expect("the Infrastructure is YAML");
    edit_infra(&mut infra);
    apply(stack, &infra.to_string());
    let status = ["apply", "--server-side", "--subresource=status", "--field-manager=installer"];
    stack.run(&[&status[..], &["-f", "-"]].concat(), Some(&infra.to_string()));
    let network = json!({"apiVersion": "config.openshift.io/v1", "kind": "Network",
        "metadata": {"name": "cluster"},
        "spec": {"clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                 "serviceNetwork": ["172.30.0.0/16"], "networkType": "OVNKubernetes"}});
    apply(stack, &network.to_string());
    let proxy = json!({"apiVersion": "config.openshift.io/v1", "kind": "Proxy",
        "metadata": {"name": "cluster"}, "spec": {}});
    apply(stack, &proxy.to_string());
}

/// A server-side apply as the installer (field manager `installer`).
pub fn apply(stack: &KubeStack, text: &str) {
    stack.run(&["apply", "--server-side", "--field-manager=installer", "-f", "-"], Some(text));
}

/// Deletes what [`install`] made and what the operator applies (and what an earlier run left),
/// each waited for.
pub fn clean(stack: &KubeStack) {
    let gone = ["--ignore-not-found", "--wait=true", "--timeout=60s"];
    for (kind, name) in [
        ("infrastructures.config.openshift.io", "cluster"),
        ("networks.config.openshift.io", "cluster"),
        ("proxies.config.openshift.io", "cluster"),
        ("clusteroperators.config.openshift.io", "cloud-controller-manager"),
        ("clusterrole", "openstack-cloud-controller-manager"),
        ("clusterrolebinding", "openstack-cloud-controller-manager"),
        ("namespace", "openshift-cloud-controller-manager"),
        ("namespace", "openshift-cloud-controller-manager-operator"),
        ("namespace", "openshift-config"),
    ] {
        stack.run(&[&["delete", kind, name][..], &gone[..]].concat(), None);
    }
    let secret = ["delete", "secret", "-n", "kube-system", "openstack-credentials"];
    stack.run(&[&secret[..], &gone[..]].concat(), None);
}
