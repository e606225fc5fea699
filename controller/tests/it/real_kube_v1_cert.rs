//! A kubeconfig whose client certificate is X.509 version 1, made as the Kubernetes docs make a
//! user (`openssl x509 -req`, no extension file), against the real API server
//! (scripts/kube-up.sh), which accepts it, and the real Nova (scripts/openstack-up.sh): the CCM
//! starts with it and initializes a node, its requests made as that certificate's user. It used
//! to exit at start with `UnsupportedCertVersion` (see: issue 36).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::kube::{NodeFixture, is_tainted};
use testkit::kube_stack::{KubeStack, request, unique};
use testkit::stack::StackEnv;

use crate::in_cluster::OnDrop;
use crate::support::{Process, scene, start_with_kubeconfig};

/// The cloud config: the second region, which no other test's CCM uses, so that only this CCM
/// acts on a Node whose providerID names it.
fn cloud_conf(env: &StackEnv) -> String {
    format!(
        "[Global]\nauth-url = {}\nusername = {}\npassword = {}\ntenant-name = {}\n\
         user-domain-name = Default\ntenant-domain-name = Default\nregion = {}\n",
        env["OPENSTACK_AUTH_URL"],
        env["OPENSTACK_USER"],
        env["OPENSTACK_PASSWORD"],
        env["OPENSTACK_PROJECT"],
        env["OPENSTACK_REGION_NO_LB"]
    )
}

/// Waits (bounded) until the node has lost the uninitialized taint; the node.
async fn initialized(stack: &KubeStack, name: &str, ccm: &Process) -> Value {
    let start = Instant::now();
    loop {
        let node = stack.get("node", None, name).expect("the node exists");
        if !is_tainted(&node) {
            return node;
        }
        let log = ccm.log();
        assert!(!log.contains(": exiting"), "the CCM exited:\n{log}");
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{name} was not initialized: {node}\nCCM log:\n{}",
            ccm.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn a_v1_client_certificate_in_the_kubeconfig_initializes_a_node() {
    let (stack, env) = (KubeStack::load(), StackEnv::load());
    let dir = tempfile::tempdir().unwrap();
    let user = unique("ccm-v1-cert");
    let kubeconfig = stack.v1_client_kubeconfig(dir.path(), &user, &["system:masters"]);
    let name = unique("occm-v1-cert");
    let server = scene(&env, &["server-create", "--name", &name, "--wait-active"]).await;
    let id = server["id"].as_str().unwrap().to_owned();
    let mut delete_server = Command::new(&env["OPENSTACK_SCENE"]);
    delete_server.args(["server-delete", &id, "--wait", "--missing-ok"]);
    let mut delete_node = stack.kubectl();
    delete_node.args(["delete", "node", &name, "--ignore-not-found", "--wait=false"]);
    let _cleanup = OnDrop(vec![delete_node, delete_server]);
    let provider_id = format!("openstack://{}/{id}", env["OPENSTACK_REGION_NO_LB"]);
    let node = NodeFixture::tainted(&name).ready("False").provider_id(&provider_id);
    stack.create(&node.build().to_string());

    let conf = dir.path().join("cloud.conf");
    std::fs::write(&conf, cloud_conf(&env)).unwrap();
    let audit = stack.audit();
    let flags = ["--leader-elect=false", "--controllers=cloud-node"];
    let mut ccm = start_with_kubeconfig(&conf, &kubeconfig, &flags);
    let node = initialized(&stack, &name, &ccm).await;
    assert_eq!(node["spec"]["providerID"], provider_id.as_str());
    let fixed = server["fixed_ips"][0].as_str().unwrap();
    let addresses = node["status"]["addresses"].as_array().unwrap();
    assert!(
        addresses.iter().any(|a| a["type"] == "InternalIP" && a["address"] == fixed),
        "{addresses:?}"
    );
    // The API server took the v1 certificate as its user: the node was patched by that user.
    let patched = |events: &[Value]| {
        events.iter().any(|e| {
            e["user"]["username"] == user.as_str()
                && e["objectRef"]["name"] == name.as_str()
                && request(e) == "patch /nodes"
        })
    };
    audit.wait_for(Duration::from_secs(10), patched);
    assert_eq!(ccm.terminate().await, Some(0), "log:\n{}", ccm.log());
}
