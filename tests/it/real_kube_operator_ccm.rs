//! The OpenStack CCM that `ccm-assets operator` deploys, run for real (issue 39): the operator
//! renders and applies its objects from what `create manifests` wrote online for the real
//! OpenStack of scripts/openstack-up.sh; the Deployment controller of scripts/kube-up.sh makes
//! its pod, the kubelet runs it from the project's image (scripts/image.sh), and the CCM
//! initializes the kubelet's own node from a real Nova server named like it.
//!
//! This cluster has no scheduler and no kube-proxy (README, "What is not real"), so another
//! field manager adds to the operator's Deployment what they would give: `nodeName`, and the
//! API server's address for in-cluster config (`KUBERNETES_SERVICE_HOST`/`_PORT`, which
//! kube-proxy makes reachable in a real cluster). Nothing of the operator's is changed: its
//! fields stay its own, and the operator lets fields of another manager be (server-side apply).
//! The node gets the control-plane label the Deployment selects, as a control-plane node has.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::create::CreateManifests;
use testkit::image::Image;
use testkit::kube::is_tainted;
use testkit::kube_stack::KubeStack;
use testkit::stack::StackEnv;

use crate::real_kube_operator::{CCM_NAMESPACE, DEPLOYMENT, Installed, Operator, wait_for};
use crate::support::Test;

const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh) and OpenStack (scripts/openstack-up.sh)"]
fn real_kube_operator_deploys_a_ccm_whose_pod_initializes_a_real_node() {
    let cloud = StackEnv::load();
    let kube = KubeStack::load();
    let image = Image::built();
    image.import(&kube);
    let node = kube["KUBE_NODE_NAME"].clone();

    // A real server named like the node; the node registered afresh as a cloud node, labelled
    // as a control-plane node. Undone in reverse order (guards drop last first).
    let server = cloud.scene(&["server-create", "--name", &node, "--wait-active"]);
    let id = server["id"].as_str().expect("server-create prints the server").to_owned();
    let mut delete_server = cloud.scene_command();
    delete_server.args(["server-delete", &id, "--wait", "--missing-ok"]);
    let _server = Undo(vec![delete_server]);
    run(&mut kube.fresh_node(Some("external")));
    let _node = Undo(vec![kube.fresh_node(None)]);
    kube.run(&["label", "node", &node, &format!("{CONTROL_PLANE}=")], None);
    assert!(is_tainted(&kube.get("node", None, &node).unwrap()));

    // What `create manifests` writes online for the real cloud, on a single-node topology.
    let install_config = testkit::install_config::text(&testkit::install_config::openstack(
        &cloud["OPENSTACK_CLOUD_APPCRED"],
        &cloud["OPENSTACK_EXTERNAL_NETWORK"],
    ));
    let test = Test::new()
        .file("install-config.yaml", &install_config)
        .env("OS_CLIENT_CONFIG_FILE", &cloud["OPENSTACK_CLOUDS_YAML"])
        .create(&CreateManifests::online());
    test.expect(0);
    let installed = Installed::from(test, |infra| {
        infra["status"]["controlPlaneTopology"] = json!("SingleReplica");
    });
    let dir = tempfile::tempdir().unwrap();
    let operator = Operator::start(&kube, dir.path(), "operator-ccm");

    let deployment = wait_for(Duration::from_secs(60), "the operator's Deployment", || {
        kube.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT)
    });
    assert_eq!(deployment["spec"]["replicas"], 1, "SingleReplica: {}", operator.log());
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], image.name.as_str());

    // What a scheduler and kube-proxy would give, under another field manager.
    let api = kube.url().trim_start_matches("https://").to_owned();
    let (host, port) = api.split_once(':').unwrap();
    let pin = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": CCM_NAMESPACE},
        "spec": {"template": {"spec": {"nodeName": node, "containers": [{
            "name": container["name"],
            "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": host},
                    {"name": "KUBERNETES_SERVICE_PORT", "value": port}]}]}}}});
    kube.run(
        &["apply", "--server-side", "--field-manager=test-scheduler", "-f", "-"],
        Some(&pin.to_string()),
    );

    // The kubelet runs the Deployment's pod from our image; its CCM initializes the node.
    let log = || format!("{}\n{}", ccm_log(&kube), operator.log());
    let pod =
        wait_for(Duration::from_secs(120), "the CCM's pod Running", || running_pod(&kube, &node));
    let image_id = pod["status"]["containerStatuses"][0]["imageID"].as_str().unwrap_or_default();
    assert!(image_id.ends_with(&image.id), "{image_id} is not our image {}", image.id);
    let initialized = wait_for_or(Duration::from_secs(120), "the node initialized", &log, || {
        kube.get("node", None, &node).filter(|n| !is_tainted(n))
    });
    assert_eq!(initialized["spec"]["providerID"], format!("openstack:///{id}"));
    let labels = &initialized["metadata"]["labels"];
    assert_eq!(labels["node.kubernetes.io/instance-type"], server["flavor"]);
    let addresses = &initialized["status"]["addresses"];
    for ip in server["fixed_ips"].as_array().unwrap() {
        let internal = json!({"type": "InternalIP", "address": ip});
        assert!(addresses.as_array().unwrap().contains(&internal), "{ip} not in {addresses}");
    }

    // The operator kept its own fields and left the other manager's alone: the pod is the
    // Deployment's one, never rolled by a fight over the template.
    let now = kube.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT).unwrap();
    assert_eq!(now["spec"]["template"]["spec"]["nodeName"], node.as_str());
    assert_eq!(now["metadata"]["generation"], 2, "rolled more than once: {}", operator.log());
    assert_eq!(running_pod(&kube, &node).unwrap()["metadata"]["uid"], pod["metadata"]["uid"]);

    // An edit of cloud-provider-config reaches the running CCM in seconds: the operator writes
    // cloud-conf and annotates the pod that mounts it, so the kubelet refreshes the volume at
    // once (its own sync comes every 60 to 90 s), and the CCM reloads it. Twice, each within
    // 10 s: by the kubelet's sync alone, both would be that quick about once in fifty runs.
    for method in ["SOURCE_IP_PORT", "LEAST_CONNECTIONS"] {
        let applied = reloads(&kube);
        let edited = Instant::now();
        installed.edit_config(|c| with_lb_method(c, method));
        let conf = wait_for(Duration::from_secs(5), "the edit in cloud-conf", || {
            kube.get("configmap", Some(CCM_NAMESPACE), "cloud-conf").filter(|m| {
                m["data"]["cloud.conf"].as_str().unwrap().contains(&format!("lb-method = {method}"))
            })
        });
        let version = conf["metadata"]["resourceVersion"].clone();
        wait_for_or(Duration::from_secs(10), "the CCM reloaded the edit", &log, || {
            (reloads(&kube) > applied).then_some(())
        });
        let took = edited.elapsed();
        assert!(took < Duration::from_secs(10), "{method}: reloaded {took:?} after the edit");
        let now = running_pod(&kube, &node).expect("the CCM's pod still Running");
        let annotations = &now["metadata"]["annotations"];
        assert_eq!(annotations["mounted.ccm-assets.io/cloud-conf"], version, "{annotations}");
        assert_eq!(now["metadata"]["uid"], pod["metadata"]["uid"], "the pod was replaced");
        let restarts = &now["status"]["containerStatuses"][0]["restartCount"];
        assert_eq!(restarts, &pod["status"]["containerStatuses"][0]["restartCount"], "{}", log());
    }
    drop(operator);
    drop(installed);
}

/// `config` with `[LoadBalancer] lb-method = method` (the section added when it has none).
fn with_lb_method(config: &str, method: &str) -> String {
    let kept: Vec<&str> = config.lines().filter(|l| !l.starts_with("lb-method")).collect();
    let config = kept.join("\n") + "\n";
    let line = format!("lb-method = {method}\n");
    match config.contains("[LoadBalancer]\n") {
        true => config.replace("[LoadBalancer]\n", &format!("[LoadBalancer]\n{line}")),
        false => format!("{config}\n[LoadBalancer]\n{line}"),
    }
}

/// How many cloud config changes the CCM's pod has logged as applied.
fn reloads(kube: &KubeStack) -> usize {
    let selector = format!("app={DEPLOYMENT}");
    let out = kube.run(&["logs", "-n", CCM_NAMESPACE, "-l", &selector, "--tail=-1"], None);
    out.matches("cloud config changed: applied").count()
}

/// The Running pod of the CCM's Deployment on `node`.
fn running_pod(kube: &KubeStack, node: &str) -> Option<Value> {
    let list = kube.run(&["get", "pods", "-n", CCM_NAMESPACE, "-o", "json"], None);
    let list: Value = serde_json::from_str(&list).unwrap();
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

/// [`wait_for`] whose timeout shows `context()`.
fn wait_for_or<T>(
    limit: Duration,
    what: &str,
    context: &dyn Fn() -> String,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}\n{}", context());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The CCM pod's log, as far as the kubelet has it.
fn ccm_log(kube: &KubeStack) -> String {
    let selector = format!("app={DEPLOYMENT}");
    let out = kube
        .kubectl()
        .args(["logs", "-n", CCM_NAMESPACE, "-l", &selector, "--tail=40"])
        .output()
        .map(|o| String::from_utf8_lossy(&[o.stdout, o.stderr].concat()).into_owned());
    format!("the CCM's log (last lines):\n{}", out.unwrap_or_default())
}

/// Runs `cmd`; its stdout and stderr, or a panic showing them.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}", out.status);
    text
}

/// Commands run when the guard drops (on failure too); a failing one is printed, not a panic.
struct Undo(Vec<Command>);

impl Drop for Undo {
    fn drop(&mut self) {
        for cmd in &mut self.0 {
            match cmd.output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => eprintln!("cleanup {cmd:?}: {}", String::from_utf8_lossy(&out.stderr)),
                Err(e) => eprintln!("cleanup {cmd:?}: {e}"),
            }
        }
    }
}
