//! Kubernetes fixtures: Nodes as kubelet registers them, Services, and a kubeconfig for the
//! fake API server (`fake-kube-apiserver`, plain HTTP, no authentication).

use std::path::{Path, PathBuf};

use ccm_formats::kubeconfig::Kubeconfig;
use serde_json::{Value, json};

/// The taint kubelet sets with `--cloud-provider=external` until a CCM initializes the node.
pub const UNINITIALIZED_TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";

/// A Node as a test needs it, built from what kubelet registers.
#[derive(Debug, Clone)]
pub struct NodeFixture(Value);

impl NodeFixture {
    /// As kubelet registers it with `--cloud-provider=external`: the uninitialized taint, its
    /// host name as the only address and label, Ready.
    pub fn tainted(name: &str) -> NodeFixture {
        NodeFixture::initialized(name).taint(UNINITIALIZED_TAINT, Some("true"))
    }

    /// A node some CCM already initialized (no taint), Ready.
    pub fn initialized(name: &str) -> NodeFixture {
        NodeFixture(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"addresses": [{"type": "Hostname", "address": name}],
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
    }

    /// Adds a `NoSchedule` taint (a control-plane taint the CCM must keep, say).
    pub fn taint(mut self, key: &str, value: Option<&str>) -> NodeFixture {
        let mut taint = json!({"key": key, "effect": "NoSchedule"});
        if let Some(value) = value {
            taint["value"] = json!(value);
        }
        let spec = self.0["spec"].as_object_mut().expect("spec is an object");
        let taints = spec.entry("taints").or_insert_with(|| json!([]));
        taints.as_array_mut().expect("taints is a list").push(taint);
        self
    }

    /// Sets the Ready condition's status (`True`, `False`, `Unknown`).
    pub fn ready(mut self, status: &str) -> NodeFixture {
        self.0["status"]["conditions"] = json!([{"type": "Ready", "status": status}]);
        self
    }

    /// Sets `spec.providerID`.
    pub fn provider_id(mut self, id: &str) -> NodeFixture {
        self.0["spec"]["providerID"] = json!(id);
        self
    }

    /// The Node object.
    pub fn build(self) -> Value {
        self.0
    }
}

/// Whether `node` still carries the uninitialized taint.
pub fn is_tainted(node: &Value) -> bool {
    let taints = node.pointer("/spec/taints").and_then(Value::as_array);
    taints.is_some_and(|t| t.iter().any(|t| t["key"] == UNINITIALIZED_TAINT))
}

/// A `type: LoadBalancer` Service in `namespace` with one TCP port per `(port, node_port)`.
pub fn load_balancer_service(namespace: &str, name: &str, ports: &[(u16, u16)]) -> Value {
    let ports: Vec<Value> = ports
        .iter()
        .map(|(port, node_port)| {
            json!({"name": format!("p{port}"), "protocol": "TCP", "port": port,
                   "targetPort": port, "nodePort": node_port})
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "LoadBalancer", "ports": ports, "selector": {"app": name}},
    })
}

/// Writes `dir/kubeconfig` for the API server at `url` (no authentication) and returns its path.
pub fn kubeconfig(dir: &Path, url: &str) -> PathBuf {
    let text = Kubeconfig { server: url, server_ca: None, user: "fake", client: None }
        .to_yaml()
        .expect("a kubeconfig serializes");
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}
