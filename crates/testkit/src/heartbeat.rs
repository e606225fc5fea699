//! Nodes kept Ready on the real cluster as their kubelets would keep them: the Ready condition
//! set once, then each Node's Lease in `kube-node-lease` renewed every 10 s, so that the
//! kube-controller-manager never marks a test's Node `Unknown` (and the Node does not change
//! under the CCM while a test watches it).

use std::time::Duration;

use serde_json::json;

use crate::kube_stack::KubeStack;

/// Renews the Leases of its Nodes until dropped; then they are deleted.
#[derive(Debug)]
pub struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
    stack: KubeStack,
    nodes: Vec<String>,
}

impl Heartbeat {
    /// Sets `nodes` Ready (their status, as admin) and starts renewing their Leases.
    pub fn start(stack: &KubeStack, nodes: &[&str]) -> Heartbeat {
        for node in nodes {
            set_ready(stack, node, "True");
        }
        let (kube, names) = (stack.clone(), nodes.iter().map(|n| (*n).to_owned()).collect());
        let task = tokio::spawn(renew(kube, names));
        let nodes = nodes.iter().map(|n| (*n).to_owned()).collect();
        Heartbeat { task, stack: stack.clone(), nodes }
    }
}

async fn renew(kube: KubeStack, nodes: Vec<String>) {
    loop {
        let leases: Vec<_> = nodes
            .iter()
            .map(|node| {
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": node, "namespace": "kube-node-lease"},
                    "spec": {"holderIdentity": node, "leaseDurationSeconds": 40,
                             "renewTime": now()}})
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": leases});
        let mut apply = kube.kubectl();
        apply.args(["apply", "-f", "-"]);
        let applied = tokio::task::spawn_blocking(move || {
            crate::cluster::run_bounded(apply, Some(&list.to_string()))
        });
        // A failed renewal is said and tried again soon, never ends the renewals: a task that
        // panicked would stop them silently, and the Nodes would turn Unknown 40 s later.
        let next = match applied.await {
            Ok(out) if out.status.success() => Duration::from_secs(10),
            Ok(out) => {
                let why = String::from_utf8_lossy(&out.stderr);
                eprintln!("heartbeat: renewing the node leases failed ({}): {why}", out.status);
                Duration::from_secs(2)
            }
            Err(e) => {
                eprintln!("heartbeat: renewing the node leases failed: {e}");
                Duration::from_secs(2)
            }
        };
        tokio::time::sleep(next).await;
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
        let mut delete = self.stack.kubectl();
        delete.args(["delete", "lease", "-n", "kube-node-lease", "--ignore-not-found"]);
        delete.args(&self.nodes);
        let _ = crate::cluster::run_bounded(delete, None);
    }
}

/// Sets the Node's Ready condition (kubelet's part: a status write as admin).
pub fn set_ready(stack: &KubeStack, name: &str, status: &str) {
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": status,
        "reason": "Test", "lastHeartbeatTime": now(), "lastTransitionTime": now()}]}});
    stack.run(
        &["patch", "node", name, "--subresource=status", "--type=merge", "-p", &patch.to_string()],
        None,
    );
}

/// Now, as the API server writes times (microseconds, UTC).
fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}
