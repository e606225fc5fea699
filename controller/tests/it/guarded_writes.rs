//! Neutron writes under the object's revision (`If-Match`), against the real Neutron of
//! scripts/openstack-up.sh (ignored by default): two service controllers putting their
//! security groups on the same member port at the same instant lose nothing.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri, header};
use serde_json::Value;
use testkit::cluster::Cluster;
use testkit::kube::load_balancer_service;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;
use tokio::sync::{Mutex, Notify};

use crate::load_balancer::{delete_service, ingress_ip, node, start_in_region};
use crate::proxy::relay;
use crate::support::scene;

/// What the barrier saw: the port updates held, and the answers they got.
#[derive(Default)]
struct Seen {
    held: usize,
    answers: Vec<u16>,
}

/// A front before the real Neutron that holds the first two updates of `port` until both
/// have arrived (each was made from the port as read before either went through), then lets
/// them through one after the other; everything else passes. What the second one is answered
/// decides: 412 when it carries the revision it read, success (and the first writer's change
/// lost) when it does not.
async fn barrier(real: String, port: String) -> (String, Arc<Mutex<Seen>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (both, one_at_a_time) = (Arc::new(Notify::new()), Arc::new(Mutex::new(())));
    let client = reqwest::Client::new();
    let (base, state) = (front.clone(), seen.clone());
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (client, real, base, port) =
                (client.clone(), real.clone(), base.clone(), port.clone());
            let (seen, both, one_at_a_time) = (state.clone(), both.clone(), one_at_a_time.clone());
            async move {
                let update =
                    method == Method::PUT && uri.path().ends_with(&format!("/ports/{port}"));
                let held = update && {
                    let mut seen = seen.lock().await;
                    seen.held += 1;
                    seen.held <= 2
                };
                if held {
                    let arrived = both.notified();
                    if seen.lock().await.held >= 2 {
                        both.notify_waiters();
                    } else {
                        // Bounded: a controller that never sends its update fails the test
                        // below (two held), not this front.
                        let _ = tokio::time::timeout(Duration::from_secs(20), arrived).await;
                    }
                }
                let _turn = if held { Some(one_at_a_time.lock().await) } else { None };
                let (status, content_type, text) =
                    relay(&client, &real, &base, method, &uri, &headers, body).await;
                if update {
                    seen.lock().await.answers.push(status.as_u16());
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
    (front, seen)
}

async fn port_groups(env: &StackEnv, id: &str) -> Vec<String> {
    let port = scene(env, &["port-show", id]).await;
    let groups = port["security_groups"].as_array().unwrap();
    groups.iter().map(|g| g.as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
#[ignore = "needs real OpenStack with Octavia (scripts/openstack-up.sh)"]
async fn two_controllers_setting_groups_on_one_port_at_once_lose_nothing() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let pid = std::process::id();
    let made = scene(&env, &["port-create", "--name", &format!("occm-guarded-{pid}")]).await;
    let port = made["id"].as_str().unwrap().to_owned();
    let address = made["fixed_ips"][0]["ip_address"].as_str().unwrap().to_owned();
    let region = format!("Guarded{pid}");
    let clusters: Vec<String> = (1..=2).map(|i| format!("guarded{i}x{pid}")).collect();
    for cluster in &clusters {
        testkit::sweep::watch(cluster); // what its CCM makes carries the cluster name
    }
    let before = port_groups(&env, &port).await;
    let real = env["OPENSTACK_NETWORK_URL"].trim_end_matches('/').trim_end_matches("/v2.0");
    let (front, seen) = barrier(real.to_owned(), port.clone()).await;
    let octavia = &env["OPENSTACK_LOADBALANCER_URL"];
    scene(
        &env,
        &["region-create", "--name", &region, "--load-balancer", octavia, "--network", &front],
    )
    .await;

    // Two clusters whose Services have a member on the same port: each controller reads the
    // port, and their updates reach Neutron together, made from the same revision.
    let mut runs = Vec::new();
    for (i, nodeport) in [(1, 30231), (2, 30232)] {
        let fake = Cluster::start();
        fake.create("v1", "nodes", "", node("shared", &address));
        let service = fake.create(
            "v1",
            "services",
            "shop",
            load_balancer_service("shop", "web", &[(80, nodeport)]),
        );
        let uid = service["metadata"]["uid"].as_str().unwrap().to_owned();
        let lb = format!(
            "subnet-id = {}\nmanage-security-groups = true\n",
            env["OPENSTACK_INTERNAL_SUBNET_ID"]
        );
        let (process, dir) = start_in_region(&env, &fake, &region, &clusters[i - 1], &lb);
        runs.push((fake, process, dir, format!("lb-sg-{uid}-shop-web")));
    }
    for (fake, process, _, _) in &runs {
        ingress_ip(fake, process, "shop", "web").await;
    }
    let mut groups = Vec::new();
    for (_, _, _, name) in &runs {
        let found = scene(&env, &["security-group-list", "--name", name]).await;
        let [group] = found.as_array().unwrap().as_slice() else { panic!("one {name}: {found}") };
        groups.push(group["id"].as_str().unwrap().to_owned());
    }
    let on_port = port_groups(&env, &port).await;
    let seen_now = {
        let s = seen.lock().await;
        (s.held, s.answers.clone())
    };
    assert!(seen_now.0 >= 2, "the two updates never met at the barrier: {seen_now:?}");
    assert!(
        seen_now.1.contains(&412),
        "the second update was not refused for its old revision: {seen_now:?}"
    );
    for group in &groups {
        assert!(
            on_port.contains(group),
            "a controller's group was lost from the port: {on_port:?} (want {groups:?}), updates \
             answered {:?}\n{}\n{}",
            seen_now.1,
            runs[0].1.log(),
            runs[1].1.log()
        );
    }
    for group in &before {
        assert!(on_port.contains(group), "the port lost its own group {group}: {on_port:?}");
    }

    // Both Services go: each group is off the port (the other's kept until it goes too), and
    // the port has what it had.
    for (fake, process, _, _) in &runs {
        delete_service(fake, process, "shop", "web").await;
    }
    let mut after = port_groups(&env, &port).await;
    after.sort();
    let mut want: Vec<String> = before.clone();
    want.sort();
    assert_eq!(after, want, "the port kept a Service's group");
    for (_, _, _, name) in &runs {
        assert_eq!(
            scene(&env, &["security-group-list", "--name", name]).await,
            Value::Array(vec![])
        );
    }
    scene(&env, &["port-delete", &port]).await;
    scene(&env, &["region-delete", "--name", &region]).await;
}
