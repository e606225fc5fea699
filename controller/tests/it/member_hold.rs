//! The second guard of issue 35, against the real Octavia with the fake API server: a node view
//! in which no node is eligible any more (every Node NotReady at once) never empties a pool that
//! has members; the Service is told why, once; a node Ready again is followed as usual.

use std::time::Duration;

use serde_json::json;
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{ingress_ip, lb_list, node, reasons, start, until};

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn every_node_not_ready_at_once_keeps_the_members_and_says_why() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    let (a, b) = ("10.0.0.71", "10.0.0.72");
    fake.create("v1", "nodes", "", node("hold-a", a));
    fake.create("v1", "nodes", "", node("hold-b", b));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "hold", &[(80, 30071)]));
    let (process, cluster, _dir) = start(&env, &fake, &env["OPENSTACK_CLOUD_APPCRED"], "hold");
    let name = format!("kube_service_{cluster}_shop_hold");
    ingress_ip(&fake, &process, "shop", "hold").await;
    let both = json!([format!("{a}:30071"), format!("{b}:30071")]);
    let before = until("both members", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["pools"][0]["members"] == both).then(|| lbs[0]["pools"][0].clone())
    })
    .await;

    let not_ready = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
    for n in ["hold-a", "hold-b"] {
        fake.patch("v1", "nodes", "", n, not_ready.clone());
    }
    until("the KeepingMembers Warning", &process, async || {
        reasons(&fake).iter().any(|r| r == "KeepingMembers").then_some(())
    })
    .await;
    // Past another node check (5 s) and the reconcile it starts: still both, the same IDs.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let lbs = lb_list(&env, &name).await;
    assert_eq!(lbs[0]["pools"][0]["member_details"], before["member_details"], "{}", process.log());
    // Said once (a log line and the Event), not once per reconcile.
    let told = process.log().matches("are kept rather than emptied").count();
    assert_eq!(told, 1, "{}", process.log());

    // One node back: the pool follows the view again (the other member goes, as it should).
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    fake.patch("v1", "nodes", "", "hold-a", ready);
    until("the pool following the nodes again", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["pools"][0]["members"] == json!([format!("{a}:30071")])).then_some(())
    })
    .await;
    crate::load_balancer::delete_service(&fake, &process, "shop", "hold").await;
}
