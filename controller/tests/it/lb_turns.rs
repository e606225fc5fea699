//! A locked load balancer (Octavia refuses every change with 409 while it is `PENDING_*`),
//! against the real Octavia of scripts/openstack-up.sh (ignored by default): Services sharing a
//! load balancer change it one at a time, and a lock taken by someone else is waited out, in
//! both cases without a failed reconcile and its backoff.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri, header};
use serde_json::{Value, json};
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::load_balancer::{
    delete_service, ingress_ip, lb_list, node, reasons, start_behind, start_with_flags, until,
};
use crate::proxy::relay;
use crate::support::scene;

/// Says a reconcile failed, or met a 409 and waited it out.
const FAILED: &str = "load balancer sync failed";
const WAITED: &str = "answered 409";

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn services_sharing_a_load_balancer_change_it_in_turn_without_a_conflict() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("turn-a", "10.0.0.131"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "first", &[(80, 30131)]));
    let lb_conf =
        format!("subnet-id = {}\nmax-shared-lb = 3\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
    let cloud = &env["OPENSTACK_CLOUD_APPCRED"];
    let syncs = ["--concurrent-service-syncs=3"];
    let (process, cluster, _port, _dir) =
        start_with_flags(&env, &fake, cloud, "turn", &lb_conf, &syncs);
    let name = format!("kube_service_{cluster}_shop_first");
    let lb = until("the first Service's load balancer", &process, async || {
        let lbs = lb_list(&env, &name).await;
        (lbs[0]["provisioning_status"] == "ACTIVE").then(|| lbs[0].clone())
    })
    .await;
    let vip = lb["vip_address"].clone();
    let annotation = "loadbalancer.openstack.org/load-balancer-id";
    // Two Services join at once, then a node joins: each time every Service on the load
    // balancer is reconciled at the same moment, and Octavia locks it after the first change.
    for (svc, port) in [("second", 8080), ("third", 9090)] {
        let mut shared = load_balancer_service("shop", svc, &[(port, port + 22000)]);
        shared["metadata"]["annotations"] = json!({annotation: lb["id"]});
        fake.create("v1", "services", "shop", shared);
    }
    until("the shared VIP on all three Services", &process, async || {
        ["first", "second", "third"]
            .iter()
            .all(|svc| {
                fake.get("v1", "services", "shop", svc)
                    .is_some_and(|s| s.pointer("/status/loadBalancer/ingress/0/ip") == Some(&vip))
            })
            .then_some(())
    })
    .await;
    fake.create("v1", "nodes", "", node("turn-b", "10.0.0.132"));
    until("both nodes in all three pools", &process, async || {
        let lb = lb_list(&env, &name).await[0].clone();
        let pools = lb["pools"].as_array()?.clone();
        let both = |p: &Value| p["members"].as_array().is_some_and(|m| m.len() == 2);
        (pools.len() == 3 && pools.iter().all(both)).then_some(())
    })
    .await;
    for svc in ["first", "second", "third"] {
        fake.delete("v1", "services", "shop", svc);
    }
    until("the Services and their load balancer gone", &process, async || {
        let gone = |n| fake.get("v1", "services", "shop", n).is_none();
        let lbs = lb_list(&env, &name).await;
        (gone("first") && gone("second") && gone("third") && lbs == json!([])).then_some(())
    })
    .await;
    let log = process.log();
    assert!(
        !log.contains(FAILED) && !log.contains(WAITED),
        "a reconcile met the load balancer locked by another one:\n{log}"
    );
    assert!(!reasons(&fake).iter().any(|r| r == "SyncLoadBalancerFailed"), "{log}");
}

/// A front before the real Octavia that, once armed, makes the load balancer busy right before
/// the next member update goes through: it updates that pool itself (a real write, with the
/// controller's own token), so the real Octavia answers the controller's call with its 409.
/// The answers to member updates are kept.
async fn busy_front(real: String) -> (String, Arc<Mutex<bool>>, Arc<Mutex<Vec<u16>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = format!("http://{}", listener.local_addr().unwrap());
    let (armed, answers) = (Arc::new(Mutex::new(false)), Arc::new(Mutex::new(Vec::new())));
    let client = reqwest::Client::new();
    let (base, arm, seen) = (front.clone(), armed.clone(), answers.clone());
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (client, real, base) = (client.clone(), real.clone(), base.clone());
            let (armed, answers) = (arm.clone(), seen.clone());
            async move {
                let path = uri.path().to_owned();
                let members = method == Method::PUT && path.ends_with("/members");
                if members && std::mem::take(&mut *armed.lock().unwrap()) {
                    let pool = path.trim_end_matches("/members");
                    let busy = client
                        .put(format!("{real}{pool}"))
                        .header("X-Auth-Token", headers["x-auth-token"].clone())
                        .json(&json!({"pool": {"admin_state_up": true}}))
                        .send()
                        .await
                        .unwrap();
                    assert!(busy.status().is_success(), "the front's own pool update: {busy:?}");
                }
                let (status, content_type, text) =
                    relay(&client, &real, &base, method, &uri, &headers, body).await;
                if members {
                    answers.lock().unwrap().push(status.as_u16());
                }
                let mut answer = HeaderMap::new();
                if let Some(value) = content_type {
                    answer.insert(header::CONTENT_TYPE, value);
                }
                (status, answer, text)
            }
        },
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (front, armed, answers)
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn a_load_balancer_locked_by_someone_else_is_waited_out_not_failed() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let (front, armed, answers) = busy_front(env["OPENSTACK_LOADBALANCER_URL"].to_owned()).await;
    let region = format!("BusyOctavia{}", std::process::id());
    let fake = Cluster::start();
    fake.create("v1", "nodes", "", node("busy-a", "10.0.0.141"));
    fake.create("v1", "services", "shop", load_balancer_service("shop", "busy", &[(80, 30141)]));
    let (process, cluster, _dir) = start_behind(&env, &fake, &front, &region, "busy").await;
    let name = format!("kube_service_{cluster}_shop_busy");
    ingress_ip(&fake, &process, "shop", "busy").await;

    // A node joins: the member update meets the load balancer locked by the front's write.
    *armed.lock().unwrap() = true;
    fake.create("v1", "nodes", "", node("busy-b", "10.0.0.142"));
    until("both nodes members", &process, async || {
        let lb = lb_list(&env, &name).await[0].clone();
        let members = lb["pools"][0]["members"].as_array()?.len();
        (members == 2 && lb["provisioning_status"] == "ACTIVE").then_some(())
    })
    .await;
    let seen = answers.lock().unwrap().clone();
    assert_eq!(
        seen.first(),
        Some(&409),
        "the real Octavia did not refuse the member update made while it was busy (the test \
         cannot tell anything then): {seen:?}"
    );
    let log = process.log();
    assert!(log.contains(WAITED) && !log.contains(FAILED), "{log}");
    assert!(!reasons(&fake).iter().any(|r| r == "SyncLoadBalancerFailed"), "{log}");

    delete_service(&fake, &process, "shop", "busy").await;
    assert_eq!(lb_list(&env, &name).await, json!([]), "left behind:\n{}", process.log());
    scene(&env, &["region-delete", "--name", &region]).await;
}
