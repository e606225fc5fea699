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

use std::time::{Duration, Instant};

use serde_json::json;
use testkit::ccm_pod::{self, CloudNode, running_pod};
use testkit::create::CreateManifests;
use testkit::image::Image;
use testkit::kube::is_tainted;
use testkit::kube_stack::KubeStack;
use testkit::stack::StackEnv;
use testkit::wait::until;

use crate::real_kube_operator::{CCM_NAMESPACE, DEPLOYMENT, Installed, Operator, wait_for};
use crate::support::Test;

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh) and OpenStack (scripts/openstack-up.sh)"]
fn real_kube_operator_deploys_a_ccm_whose_pod_initializes_a_real_node() {
    let cloud = StackEnv::load();
    let kube = KubeStack::load();
    let image = Image::built();
    image.import(&kube);
    // A real server named like the node; the node registered afresh as a cloud node, labelled
    // as a control-plane node; undone when the test ends.
    let cloud_node = CloudNode::register(&cloud, &kube);
    let (node, id, server) = (&cloud_node.name, &cloud_node.id, &cloud_node.server);
    assert!(is_tainted(&kube.get("node", None, node).unwrap()));

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
    ccm_pod::pin(&kube, node, container["name"].as_str().unwrap());

    // The kubelet runs the Deployment's pod from our image; its CCM initializes the node.
    let log = || format!("{}\n{}", ccm_pod::log(&kube), operator.log());
    let pod =
        wait_for(Duration::from_secs(120), "the CCM's pod Running", || running_pod(&kube, node));
    let image_id = pod["status"]["containerStatuses"][0]["imageID"].as_str().unwrap_or_default();
    assert!(image_id.ends_with(&image.id), "{image_id} is not our image {}", image.id);
    let initialized = until(Duration::from_secs(120), "the node initialized", &log, || {
        kube.get("node", None, node).filter(|n| !is_tainted(n))
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
    assert_eq!(running_pod(&kube, node).unwrap()["metadata"]["uid"], pod["metadata"]["uid"]);

    // An edit of cloud-provider-config reaches the running CCM in seconds: the operator writes
    // cloud-conf and annotates the pod that mounts it, so the kubelet refreshes the volume at
    // once (its own sync comes every 60 to 90 s), and the CCM reloads it. Twice, each within
    // 10 s: by the kubelet's sync alone, both would be that quick about once in fifty runs.
    for method in ["SOURCE_IP_PORT", "LEAST_CONNECTIONS"] {
        let applied = ccm_pod::reloads(&kube);
        let edited = Instant::now();
        installed.edit_config(|c| ccm_pod::with_lb_method(c, method));
        let conf = wait_for(Duration::from_secs(5), "the edit in cloud-conf", || {
            kube.get("configmap", Some(CCM_NAMESPACE), "cloud-conf").filter(|m| {
                m["data"]["cloud.conf"].as_str().unwrap().contains(&format!("lb-method = {method}"))
            })
        });
        let version = conf["metadata"]["resourceVersion"].clone();
        until(Duration::from_secs(10), "the CCM reloaded the edit", &log, || {
            (ccm_pod::reloads(&kube) > applied).then_some(())
        });
        let took = edited.elapsed();
        assert!(took < Duration::from_secs(10), "{method}: reloaded {took:?} after the edit");
        let now = running_pod(&kube, node).expect("the CCM's pod still Running");
        let annotations = &now["metadata"]["annotations"];
        assert_eq!(annotations["mounted.ccm-assets.io/cloud-conf"], version, "{annotations}");
        assert_eq!(now["metadata"]["uid"], pod["metadata"]["uid"], "the pod was replaced");
        let restarts = &now["status"]["containerStatuses"][0]["restartCount"];
        assert_eq!(restarts, &pod["status"]["containerStatuses"][0]["restartCount"], "{}", log());
    }
    drop(operator);
    drop(installed);
}
