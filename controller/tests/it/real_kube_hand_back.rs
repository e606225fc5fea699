//! Handing a Service back to upstream's CCM (issue 36 item 3b), against the real Kubernetes of
//! scripts/kube-up.sh, the real Octavia and Neutron of scripts/openstack-up.sh and upstream's
//! own `openstack-cloud-controller-manager` (v1.36.0, built by scripts/upstream-occm.sh, its
//! path in `CCM_UPSTREAM_OCCM`; scripts/test.sh sets it): ours makes the Service's load
//! balancer, floating IP and security group and stops; upstream's takes the Service over; the
//! Service is deleted, and nothing of it is left. Upstream releases only the floating IPs
//! described as it describes its own (`deleteFIPIfCreatedByProvider`, its
//! `pkg/openstack/loadbalancer.go`): before ours were described so, this one stayed allocated.

use serde_json::{Value, json};
use testkit::kube::{NodeFixture, load_balancer_service};
use testkit::kube_stack::{KubeStack, unique};
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{FINALIZER, OWNER_TAG, WAIT, clouds_conf, lb_list, until};
use crate::real_kube_services::Cleanup;
use crate::support::{Process, scene, start_with_kubeconfig};

/// The variable naming upstream's binary.
const UPSTREAM: &str = "CCM_UPSTREAM_OCCM";

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh), real OpenStack and upstream's CCM (scripts/upstream-occm.sh)"]
async fn a_service_handed_back_to_upstreams_ccm_and_deleted_leaves_nothing_behind() {
    let upstream = std::env::var_os(UPSTREAM).unwrap_or_else(|| {
        panic!("{UPSTREAM} is not set: `export {UPSTREAM}=$(scripts/upstream-occm.sh)`")
    });
    let _sweep = Sweep::start();
    let (stack, env) = (KubeStack::load(), StackEnv::load());
    let namespace = stack.namespace("ccm-hand-back");
    let ns = namespace.name.clone();
    let dir = tempfile::tempdir().unwrap();
    let cluster = unique("back").replace('-', "");
    let lb_name = format!("kube_service_{cluster}_{ns}_web");
    let node_name = unique("occm-back");
    let _cleanup = Cleanup::new(&stack, &env, &node_name, &ns, &cluster);
    // The member's port (for the security group) and its Node; upstream needs a provider ID
    // (it looks the node's ports up by server).
    let address = "10.0.0.241";
    let port = scene(&env, &["port-create", "--fixed-ip", address]).await;
    let port_id = port["id"].as_str().unwrap();
    let provider_id = format!("openstack:///{port_id}");
    let mut node = NodeFixture::initialized(&node_name).provider_id(&provider_id).build();
    node["status"]["addresses"] = json!([{"type": "InternalIP", "address": address}]);
    stack.create(&node.to_string());
    let mut service = load_balancer_service(&ns, "web", &[(80, 0)]);
    service["spec"]["ports"][0].as_object_mut().unwrap().remove("nodePort");
    // Only this Node: upstream fails on the cluster's own, which has no provider ID.
    let selector = format!("kubernetes.io/hostname={node_name}");
    service["metadata"]["annotations"] =
        json!({"loadbalancer.openstack.org/node-selector": selector});
    stack.create(&service.to_string());
    let uid = stack.get("service", Some(&ns), "web").unwrap()["metadata"]["uid"].clone();
    let group_name = format!("lb-sg-{}-{ns}-web", uid.as_str().unwrap());

    // The same cloud config for both: a floating IP and a security group per Service.
    let conf = dir.path().join("cloud.conf");
    let lb = format!(
        "subnet-id = {}\nfloating-network-id = {}\nmanage-security-groups = true\n",
        env["OPENSTACK_INTERNAL_SUBNET_ID"], env["OPENSTACK_EXTERNAL_NETWORK_ID"]
    );
    std::fs::write(&conf, clouds_conf(&env, &env["OPENSTACK_CLOUD_APPCRED"], &lb)).unwrap();
    let cluster_flag = format!("--cluster-name={cluster}");

    // Ours: the load balancer, its floating IP in the status, the group on the member's port.
    let kubeconfig = stack.client_kubeconfig(dir.path(), &unique("ccm-ours"), &["system:masters"]);
    let flags = ["--leader-elect=false", "--controllers=service", cluster_flag.as_str()];
    let mut ours = start_with_kubeconfig(&conf, &kubeconfig, &flags);
    let get = || stack.get("service", Some(&ns), "web");
    let fip = until("our floating IP in the Service's status", &ours, async || {
        let ip = get()?.pointer("/status/loadBalancer/ingress/0/ip")?.as_str()?.to_owned();
        let fips = scene(&env, &["floating-ip-list"]).await;
        fips.as_array()?.iter().find(|f| f["floating_ip_address"] == ip).cloned()
    })
    .await;
    let ingress = fip["floating_ip_address"].as_str().unwrap().to_owned();
    let lbs = lb_list(&env, &lb_name).await;
    let [made] = lbs.as_array().unwrap().as_slice() else { panic!("one load balancer: {lbs}") };
    assert!(made["tags"].as_array().unwrap().contains(&json!(OWNER_TAG)), "{made}");
    until("our group on the member's port", &ours, async || {
        let groups = scene(&env, &["security-group-list", "--name", &group_name]).await;
        let port = scene(&env, &["port-show", port_id]).await;
        port["security_groups"].as_array()?.contains(&groups[0]["id"]).then_some(())
    })
    .await;
    assert_eq!(ours.terminate().await, Some(0), "log:\n{}", ours.log());

    // Upstream's, with the same cloud config and cluster name: it finds the load balancer by
    // its name and keeps it, with its floating IP (its annotation says it is done).
    let kubeconfig =
        stack.client_kubeconfig(dir.path(), &unique("ccm-upstream"), &["system:masters"]);
    let args: Vec<String> = [
        "--cloud-provider=openstack",
        &format!("--cloud-config={}", conf.display()),
        &format!("--kubeconfig={}", kubeconfig.display()),
        &cluster_flag,
        "--leader-elect=false",
        "--controllers=service-lb-controller",
        "--secure-port=0",
        "--v=2",
    ]
    .map(str::to_owned)
    .to_vec();
    let theirs = Process::start_program(&upstream, &args);
    let annotation = "loadbalancer.openstack.org/load-balancer-id";
    until("upstream's annotation on the Service", &theirs, async || {
        let svc = get()?;
        (svc["metadata"]["annotations"][annotation] == made["id"]).then_some(())
    })
    .await;
    theirs.wait_line("EnsuredLoadBalancer", WAIT).await;
    let svc = get().unwrap();
    assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ip"], ingress.as_str(), "{svc}");
    assert_eq!(svc["metadata"]["finalizers"], json!([FINALIZER]), "{svc}");
    // Ours, where it was, and no other floating IP for the Service (the project's list holds
    // other tests' too: those of this cluster are described with its name).
    let fips = scene(&env, &["floating-ip-list"]).await;
    let described = |f: &&Value| f["description"].as_str().is_some_and(|d| d.contains(&cluster));
    let mine: Vec<&Value> = fips.as_array().unwrap().iter().filter(described).collect();
    let kept = mine.iter().map(|f| (&f["floating_ip_address"], &f["port_id"]));
    let want = (&fip["floating_ip_address"], &fip["port_id"]);
    assert_eq!(kept.collect::<Vec<_>>(), [want], "{fips}\n{}", theirs.log());

    // Deleted: upstream deletes the load balancer, releases the floating IP, deletes the group.
    stack.run(&["delete", "service", "web", "-n", &ns, "--wait=false"], None);
    until("the Service gone", &theirs, async || get().is_none().then_some(())).await;
    assert_eq!(lb_list(&env, &lb_name).await, json!([]), "{}", theirs.log());
    let fips = scene(&env, &["floating-ip-list"]).await;
    let left =
        fips.as_array().unwrap().iter().find(|f| f["floating_ip_address"] == ingress.as_str());
    assert!(left.is_none(), "floating IP left allocated: {left:?}\n{}", theirs.log());
    let groups = scene(&env, &["security-group-list", "--name", &group_name]).await;
    assert_eq!(groups, json!([]), "{}", theirs.log());
    drop(theirs);
    scene(&env, &["port-delete", port_id]).await;
}
