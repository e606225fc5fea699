//! The cloud config edited under a running CCM (issue 38), as a cluster administrator's edit
//! reaches it: the kubelet swaps the mounted ConfigMap (`..data` renamed to a new version). The
//! binary against the fake API server and the real Octavia of scripts/openstack-up.sh (ignored
//! by default; scripts/test.sh runs it).

use std::time::Duration;

use serde_json::json;
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::mount::KubeletMount;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{clouds_conf, ingress_ip, lb_list, node, reasons, until};
use crate::support::{Process, ccm_args, https, process_bin};

const CONF: &str = "cloud.conf";
/// Where the CCM says a refused edit: its Pod, as the downward API names it.
const POD: (&str, &str) = ("kube-system", "occm-live-0");

/// One gauge of the binary's /metrics on `port`.
async fn gauge(port: u16, name: &str) -> String {
    let url = format!("https://127.0.0.1:{port}/metrics");
    let text = https().get(url).send().await.unwrap().text().await.unwrap();
    let line = text.lines().find(|l| l.starts_with(&format!("{name} ")));
    line.and_then(|l| l.split(' ').nth(1)).unwrap_or_default().to_owned()
}

/// Waits for the pool of load balancer `name` to balance by `method`.
async fn method_is(env: &StackEnv, name: &str, process: &Process, method: &str) {
    until(&format!("the pool's method {method}"), process, async || {
        let lbs = lb_list(env, name).await;
        (lbs[0]["pools"][0]["lb_algorithm"] == method).then_some(())
    })
    .await;
}

/// The Warning Events of refused edits, with their notes.
fn rejections(fake: &Cluster) -> Vec<String> {
    let events = fake.list("events.k8s.io/v1", "events");
    let refused = events.iter().filter(|e| e["reason"] == "CloudConfigRejected");
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    refused.map(|e| format!("{} on {}", text(&e["note"]), text(&e["regarding"]["name"]))).collect()
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn an_edit_of_the_mounted_config_reaches_the_same_process_and_a_bad_one_never_does() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("live-a", "10.0.0.171"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "live", &[(80, 30171)]));
    let cluster = format!("live{}", std::process::id());
    testkit::sweep::watch(&cluster);
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let subnet = &env["OPENSTACK_INTERNAL_SUBNET_ID"];
    let conf = |method: &str| {
        clouds_conf(&env, cloud, &format!("subnet-id = {subnet}\nlb-method = {method}\n"))
    };
    let mut mount = KubeletMount::new(&[(CONF, &conf("ROUND_ROBIN"))]);
    let cluster_flag = format!("--cluster-name={cluster}");
    let flags = [
        "--controllers=service",
        cluster_flag.as_str(),
        "--leader-elect=false",
        "--load-balancer-resync-period=10m",
    ];
    let (args, port) = ccm_args(&fake.url(), &mount.path(CONF), mount.dir(), &flags);
    let pod = [("POD_NAMESPACE", POD.0), ("POD_NAME", POD.1)];
    let mut process = Process::start_with_env(&process_bin(), &args, &pod);
    let name = format!("kube_service_{cluster}_shop_live");
    ingress_ip(&fake, &process, "shop", "live").await;
    assert_eq!(lb_list(&env, &name).await[0]["pools"][0]["lb_algorithm"], "ROUND_ROBIN");

    // A changed default: the same process converges the pool, long before the 10 min resync.
    mount.swap(&[(CONF, &conf("LEAST_CONNECTIONS"))]);
    method_is(&env, &name, &process, "LEAST_CONNECTIONS").await;
    assert_eq!(gauge(port, "occm_config_generation").await, "2");
    assert_eq!(process.try_exit(), None, "the same process");

    // A syntax error: kept out, told once (a log line, one Warning on the Pod), still ready.
    let broken = format!("{}\n[Route\n", conf("SOURCE_IP"));
    let line = 1 + broken.lines().position(|l| l == "[Route").unwrap();
    mount.swap(&[(CONF, &broken)]);
    until("the refused edit's Warning", &process, async || {
        (!rejections(&fake).is_empty()).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let told = rejections(&fake);
    let [note] = told.as_slice() else { panic!("told once: {told:?}") };
    let file = mount.path(CONF).display().to_string();
    assert!(note.contains(&file) && note.contains(&format!("line {line}")), "{note}");
    assert!(note.ends_with(&format!("on {}", POD.1)), "on the Pod: {note}");
    assert_eq!(gauge(port, "occm_config_last_reload_success").await, "0");
    assert_eq!(gauge(port, "occm_config_generation").await, "2");
    let readyz = https().get(format!("https://127.0.0.1:{port}/readyz")).send().await.unwrap();
    assert_eq!(readyz.status(), 200, "the CCM still works");
    assert_eq!(lb_list(&env, &name).await[0]["pools"][0]["lb_algorithm"], "LEAST_CONNECTIONS");

    // The next good edit recovers.
    mount.swap(&[(CONF, &conf("SOURCE_IP"))]);
    method_is(&env, &name, &process, "SOURCE_IP").await;
    assert_eq!(gauge(port, "occm_config_last_reload_success").await, "1");
    assert_eq!(gauge(port, "occm_config_generation").await, "3");
    // No edit of [LoadBalancer] logs in to OpenStack again, so no reconcile it starts fails.
    let failed = reasons(&fake).iter().any(|r| r == "SyncLoadBalancerFailed");
    assert!(!failed, "{:?}\n{}", reasons(&fake), process.log());

    fake.delete("v1", "services", "shop", "live");
    until("the Service gone", &process, async || {
        fake.get("v1", "services", "shop", "live").is_none().then_some(())
    })
    .await;
    assert_eq!(lb_list(&env, &name).await, json!([]));
    assert_eq!(process.terminate().await, Some(0), "log:\n{}", process.log());
}
