//! The CCM's pods told at once that what they mount changed, so the edit reaches the CCM in
//! seconds rather than at the kubelet's next sync.
//!
//! The kubelet refreshes a mounted ConfigMap or Secret only when it syncs the pod: every
//! `syncFrequency` (1 minute by default, plus jitter), or at once when the pod itself changes
//! (a new annotation is such a change). So after the operator writes a ConfigMap or Secret of
//! the CCM's namespace (`cloud-conf`, `ccm-trusted-ca`, the credentials Secret), it sets
//! `mounted.ccm-assets.io/<name>` on each pod that mounts it to the object's new
//! `resourceVersion` (not a digest of its data: a hash of a Secret's password on a pod, which
//! many can read, could be guessed offline): the kubelet syncs the pod, swaps the volume's `..data`, and the CCM, which watches
//! that swap, reloads (DESIGN, "Day 2, in the CCM"). The annotation is on the pod, not on its
//! template: nothing rolls and nothing restarts. A pod that already carries the version is left
//! alone, so a pass that writes nothing new costs no request here. A failure is logged and left
//! to the kubelet's own sync, which brings the same content a minute later: this only hastens.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::assets::ccm::NAMESPACE;

/// The prefix of the annotation naming what a pod mounts.
pub const ANNOTATION_PREFIX: &str = "mounted.ccm-assets.io/";

/// Tells the pods of the CCM's namespace that mount `object` (just written, as the API server
/// returned it) that its data changed. Does nothing for other kinds and namespaces.
pub async fn tell_pods(client: &kube::Client, object: &Value) {
    let Some((kind, name)) = mounted_kind(object) else { return };
    let api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let pods = match api.list(&ListParams::default()).await {
        Ok(pods) => pods.items,
        Err(error) => {
            let error = ccm_tls_explain::chain(&error);
            tracing::warn!(object = name, %error, "cannot list the CCM's pods to have the kubelet refresh what they mount; the kubelet's own sync will");
            return;
        }
    };
    let Some(version) = object["metadata"]["resourceVersion"].as_str() else { return };
    let key = annotation(name);
    for pod in pods {
        let pod = serde_json::to_value(pod).expect("a pod from the API is JSON");
        if !needs_telling(&pod, kind, name, &key, version) {
            continue;
        }
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let patch = json!({"metadata": {"annotations": {&key: version}}});
        match api.patch(pod_name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => tracing::info!(
                pod = pod_name,
                object = name,
                "pod told of the change, for the kubelet to refresh its volume now"
            ),
            Err(error) => {
                let error = ccm_tls_explain::chain(&error);
                tracing::warn!(pod = pod_name, object = name, %error, "cannot annotate the pod to have the kubelet refresh its volume; the kubelet's own sync will");
            }
        }
    }
}

/// `(kind, name)` of a ConfigMap or Secret of the CCM's namespace.
fn mounted_kind(object: &Value) -> Option<(&str, &str)> {
    let kind = object["kind"].as_str().filter(|k| ["ConfigMap", "Secret"].contains(k))?;
    (object["metadata"]["namespace"] == NAMESPACE).then_some(())?;
    Some((kind, object["metadata"]["name"].as_str()?))
}

/// The annotation for the object `name`.
pub fn annotation(name: &str) -> String {
    format!("{ANNOTATION_PREFIX}{name}")
}

/// Whether `pod` mounts the `kind` `name`, is not going away, and lacks `version` at `key`.
fn needs_telling(pod: &Value, kind: &str, name: &str, key: &str, version: &str) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["metadata"]["annotations"][key] != version
        && mounts(pod, kind, name)
}

/// Whether `pod` has a volume of the `kind` (ConfigMap or Secret) `name`, directly or
/// projected.
pub fn mounts(pod: &Value, kind: &str, name: &str) -> bool {
    let names = |source: &Value| match kind {
        "ConfigMap" => source["configMap"]["name"] == name,
        _ => source["secret"]["secretName"] == name || source["secret"]["name"] == name,
    };
    let volumes = pod["spec"]["volumes"].as_array().map(Vec::as_slice).unwrap_or_default();
    volumes.iter().any(|volume| {
        names(volume)
            || volume["projected"]["sources"]
                .as_array()
                .is_some_and(|sources| sources.iter().any(names))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(volumes: Value, annotations: Value) -> Value {
        json!({"metadata": {"name": "ccm-1", "annotations": annotations},
            "spec": {"volumes": volumes}})
    }

    #[test]
    fn only_a_pod_that_mounts_the_object_and_lacks_its_version_is_told() {
        let volumes = json!([{"name": "config", "configMap": {"name": "cloud-conf"}},
            {"name": "secret", "secret": {"secretName": "openstack-cloud-credentials"}},
            {"name": "ca", "projected": {"sources": [{"configMap": {"name": "ccm-trusted-ca"}}]}}]);
        let key = annotation("cloud-conf");
        let fresh = pod(volumes.clone(), json!({}));
        assert!(needs_telling(&fresh, "ConfigMap", "cloud-conf", &key, "d1"));
        let told = pod(volumes.clone(), json!({&key: "d1"}));
        assert!(!needs_telling(&told, "ConfigMap", "cloud-conf", &key, "d1"), "already told");
        assert!(needs_telling(&told, "ConfigMap", "cloud-conf", &key, "d2"), "a newer version");
        assert!(mounts(&fresh, "Secret", "openstack-cloud-credentials"));
        assert!(mounts(&fresh, "ConfigMap", "ccm-trusted-ca"), "projected");
        assert!(!mounts(&fresh, "Secret", "cloud-conf"), "a ConfigMap is not a Secret");
        assert!(!mounts(&fresh, "ConfigMap", "other"));
        let mut going = fresh.clone();
        going["metadata"]["deletionTimestamp"] = json!("2026-12-02T00:00:00Z");
        assert!(!needs_telling(&going, "ConfigMap", "cloud-conf", &key, "d1"), "being deleted");
    }

    #[test]
    fn only_configmaps_and_secrets_of_the_ccms_namespace_are_told() {
        let object = |kind: &str, namespace: &str| json!({"kind": kind, "metadata": {"name": "n", "namespace": namespace}});
        assert_eq!(mounted_kind(&object("ConfigMap", NAMESPACE)), Some(("ConfigMap", "n")));
        assert_eq!(mounted_kind(&object("Secret", NAMESPACE)), Some(("Secret", "n")));
        assert_eq!(mounted_kind(&object("Deployment", NAMESPACE)), None);
        assert_eq!(mounted_kind(&object("ConfigMap", "kube-system")), None);
    }
}
