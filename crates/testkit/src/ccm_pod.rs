//! The CCM that `ccm-assets operator` deploys, run as a pod of the real Kubernetes of
//! scripts/kube-up.sh against the real OpenStack of scripts/openstack-up.sh: the kubelet's node
//! made a cloud node with a real server behind it, and what a scheduler and kube-proxy would
//! add to the operator's Deployment (this cluster has neither; README, "What is not real").

use std::process::Command;

use serde_json::{Value, json};

use crate::kube_stack::KubeStack;
use crate::stack::StackEnv;

/// The CCM's namespace, as the operator writes it.
pub const NAMESPACE: &str = "openshift-cloud-controller-manager";
/// The CCM's Deployment, as the operator writes it.
pub const DEPLOYMENT: &str = "openstack-cloud-controller-manager";
/// The label a control-plane node has, which the CCM's Deployment selects.
pub const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";

/// The kubelet's node registered afresh as a cloud node (tainted uninitialized), labelled as a
/// control-plane node, with a real Nova server of the same name. The server's fixed IPs are
/// added to this machine's loopback interface, as a real node has its own addresses: once the
/// CCM has made them the node's addresses, the kubelet probes host-network pods there (the
/// CCM's liveness probe), and without them those probes would leave the machine. On drop the
/// node is registered again as it was, the addresses removed and the server deleted (failures
/// printed, never a panic).
pub struct CloudNode {
    /// The node's (and the server's) name.
    pub name: String,
    /// The server as `openstack_scene.py server-create` prints it.
    pub server: Value,
    /// The server's ID.
    pub id: String,
    undo: Vec<Command>,
}

impl CloudNode {
    /// Boots the server (waits until ACTIVE), then registers the node afresh and labels it.
    pub fn register(cloud: &StackEnv, kube: &KubeStack) -> CloudNode {
        let name = kube["KUBE_NODE_NAME"].clone();
        let server = cloud.scene(&["server-create", "--name", &name, "--wait-active"]);
        let id = server["id"].as_str().expect("server-create prints the server").to_owned();
        let mut delete_server = cloud.scene_command();
        delete_server.args(["server-delete", &id, "--wait", "--missing-ok"]);
        // Built now, so that the undo runs even when the lines below panic.
        let mut node = CloudNode { name, server, id, undo: vec![kube.fresh_node(None)] };
        node.undo.push(delete_server);
        let ips: Vec<String> = node.server["fixed_ips"]
            .as_array()
            .map(|ips| {
                ips.iter().filter_map(|ip| ip.as_str()).map(|ip| format!("{ip}/32")).collect()
            })
            .unwrap_or_default();
        for ip in &ips {
            let mut remove = Command::new("ip");
            remove.args(["addr", "del", ip, "dev", "lo"]);
            node.undo.push(remove);
            run(Command::new("ip").args(["addr", "replace", ip, "dev", "lo"]));
        }
        run(&mut kube.fresh_node(Some("external")));
        kube.run(&["label", "node", &node.name, &format!("{CONTROL_PLANE}=")], None);
        node
    }
}

impl Drop for CloudNode {
    fn drop(&mut self) {
        for cmd in &mut self.undo {
            match cmd.output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => eprintln!("cleanup {cmd:?}: {}", String::from_utf8_lossy(&out.stderr)),
                Err(e) => eprintln!("cleanup {cmd:?}: {e}"),
            }
        }
    }
}

/// Adds what a scheduler and kube-proxy would give the CCM's Deployment, under a field manager
/// of its own (`test-scheduler`), so that the operator's fields stay the operator's: `nodeName`,
/// and the API server's address for in-cluster config (`KUBERNETES_SERVICE_HOST`/`_PORT`,
/// which kube-proxy makes reachable in a real cluster). `container` is the CCM's container's
/// name.
pub fn pin(kube: &KubeStack, node: &str, container: &str) {
    let api = kube.url().trim_start_matches("https://").to_owned();
    let (host, port) = api.split_once(':').expect("the API server's URL has a port");
    let pin = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
        "spec": {"template": {"spec": {"nodeName": node, "containers": [{
            "name": container,
            "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": host},
                    {"name": "KUBERNETES_SERVICE_PORT", "value": port}]}]}}}});
    kube.run(
        &["apply", "--server-side", "--field-manager=test-scheduler", "-f", "-"],
        Some(&pin.to_string()),
    );
}

/// The Running pod of the CCM's Deployment on `node`, not being deleted.
pub fn running_pod(kube: &KubeStack, node: &str) -> Option<Value> {
    let list = kube.run(&["get", "pods", "-n", NAMESPACE, "-o", "json"], None);
    let list: Value = serde_json::from_str(&list).expect("kubectl prints JSON");
    list["items"]
        .as_array()?
        .iter()
        .find(|p| {
            p["spec"]["nodeName"] == node
                && p["status"]["phase"] == "Running"
                && p["metadata"]["deletionTimestamp"].is_null()
        })
        .cloned()
}

/// How many cloud config changes the CCM's pod has logged as applied.
pub fn reloads(kube: &KubeStack) -> usize {
    let selector = format!("app={DEPLOYMENT}");
    let out = kube.run(&["logs", "-n", NAMESPACE, "-l", &selector, "--tail=-1"], None);
    out.matches("cloud config changed: applied").count()
}

/// The last lines of the CCM pod's log, as far as the kubelet has it (for failure messages).
pub fn log(kube: &KubeStack) -> String {
    let selector = format!("app={DEPLOYMENT}");
    let out = kube
        .kubectl()
        .args(["logs", "-n", NAMESPACE, "-l", &selector, "--tail=40"])
        .output()
        .map(|o| String::from_utf8_lossy(&[o.stdout, o.stderr].concat()).into_owned());
    format!("the CCM's log (last lines):\n{}", out.unwrap_or_default())
}

/// `config` with `[LoadBalancer] lb-method = method` (the section added when it has none).
pub fn with_lb_method(config: &str, method: &str) -> String {
    let kept: Vec<&str> = config.lines().filter(|l| !l.starts_with("lb-method")).collect();
    let config = kept.join("\n") + "\n";
    let line = format!("lb-method = {method}\n");
    match config.contains("[LoadBalancer]\n") {
        true => config.replace("[LoadBalancer]\n", &format!("[LoadBalancer]\n{line}")),
        false => format!("{config}\n[LoadBalancer]\n{line}"),
    }
}

/// Runs `cmd`; its stdout and stderr, or a panic showing them.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}", out.status);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lb_method_replaces_the_key_or_adds_the_section() {
        let with = "[Global]\nuse-clouds = true\n\n[LoadBalancer]\nlb-method = ROUND_ROBIN\n";
        assert_eq!(
            with_lb_method(with, "LEAST_CONNECTIONS"),
            "[Global]\nuse-clouds = true\n\n[LoadBalancer]\nlb-method = LEAST_CONNECTIONS\n"
        );
        assert_eq!(
            with_lb_method("[Global]\nuse-clouds = true\n", "SOURCE_IP_PORT"),
            "[Global]\nuse-clouds = true\n\n[LoadBalancer]\nlb-method = SOURCE_IP_PORT\n"
        );
    }
}
