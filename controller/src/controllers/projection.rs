//! The Node as the controllers keep it: only the fields they read (STYLE d4), so the cache
//! costs a fraction of the Node's JSON (kubelet's images, node info, capacity, managed fields
//! and the other conditions are dropped as each watch event arrives). See: issue 16.

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::PROVIDED_NODE_IP;

/// Keeps name, uid and resourceVersion (patch preconditions, events), labels (the service
/// controller's node selector), kubelet's node-IP annotation, the deletion time, providerID,
/// taints, addresses and the `Ready` condition's status.
pub(crate) fn project(node: &mut Node) {
    let meta = std::mem::take(&mut node.metadata);
    let annotations = meta.annotations.map(|mut a| {
        a.retain(|k, _| k == PROVIDED_NODE_IP);
        a
    });
    node.metadata = ObjectMeta {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        annotations: annotations.filter(|a| !a.is_empty()),
        deletion_timestamp: meta.deletion_timestamp,
        ..ObjectMeta::default()
    };
    node.spec = node.spec.take().map(|spec| NodeSpec {
        provider_id: spec.provider_id,
        taints: spec.taints,
        ..NodeSpec::default()
    });
    node.status = node.status.take().map(|status| {
        let ready = status.conditions.into_iter().flatten().filter(|c| c.type_ == "Ready");
        let conditions = ready.map(|c| NodeCondition {
            type_: c.type_,
            status: c.status,
            ..NodeCondition::default()
        });
        NodeStatus {
            addresses: status.addresses,
            conditions: Some(conditions.collect()),
            ..NodeStatus::default()
        }
    });
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;
    use serde_json::json;
    use testkit::kube::NodeFixture;

    use super::*;
    use crate::controllers::{UNINITIALIZED_TAINT, has_taint, is_ready, lookup};

    #[test]
    fn the_projection_keeps_what_the_controllers_read_and_drops_the_rest() {
        let mut value = NodeFixture::tainted("w").provider_id("openstack:///abc").build();
        value["metadata"]["annotations"] =
            json!({PROVIDED_NODE_IP: "10.0.0.5", "node.alpha.kubernetes.io/ttl": "0"});
        value["metadata"]["labels"] = json!({"kubernetes.io/hostname": "w"});
        value["metadata"]["uid"] = json!("u-1");
        value["metadata"]["resourceVersion"] = json!("42");
        value["status"] = json!({
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "conditions": [{"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
            "images": [{"names": ["registry/image:tag"], "sizeBytes": 1}],
            "nodeInfo": {"kubeletVersion": "v1.31.0", "machineID": "m", "systemUUID": "s",
                "bootID": "b", "kernelVersion": "k", "osImage": "o", "containerRuntimeVersion": "c",
                "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
        });
        let mut node: Node = serde_json::from_value(value).unwrap();
        project(&mut node);
        assert_eq!(node.name_any(), "w");
        assert_eq!(node.uid().as_deref(), Some("u-1"));
        assert_eq!(node.resource_version().as_deref(), Some("42"));
        assert_eq!(node.labels()["kubernetes.io/hostname"], "w");
        assert_eq!(node.annotations().keys().collect::<Vec<_>>(), [PROVIDED_NODE_IP]);
        assert!(has_taint(&node, UNINITIALIZED_TAINT) && is_ready(&node));
        assert!(lookup(&node, None).is_ok());
        let status = serde_json::to_value(node.status.as_ref().unwrap()).unwrap();
        assert_eq!(
            status,
            json!({"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "conditions": [{"type": "Ready", "status": "True"}]})
        );
    }
}
