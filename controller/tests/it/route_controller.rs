//! The route controller against the real Neutron of scripts/openstack-up.sh (ignored by
//! default): its router `OPENSTACK_ROUTER_ID` (with `extraroute-atomic` and
//! `revision-if-match`), real ports and servers, and the fake API server for the Nodes.
//!
//! The router is shared: each test works inside a cluster CIDR of its own (10.2xx.0.0/16), so
//! that it never removes a route it did not add, and removes what it added at the end. They
//! run one at a time (.config/nextest.toml, group `neutron-router`): Neutron allows 30 routes
//! per router. Dual stack runs on a network of its own with an IPv4 and an IPv6 subnet on the
//! router (`openstack_scene.py dual-stack-network-create`), removed at the end.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use fake_kube_apiserver::FakeApiServer;
use kube::api::Api;
use occm::cloud::OpenStack;
use occm::cloud::routes::{ExtraRoute, Routes, Support};
use occm::controllers::projection::{self, CachedNode};
use occm::controllers::route::{self, Memory, RouteContext, Settings};
use occm::metrics::Metrics;
use serde_json::{Value, json};
use testkit::kube::NodeFixture;
use testkit::mount::KubeletMount;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::real_openstack::credentials;
use crate::support::{Process, ccm_args, scene, start_ccm};

/// A node of `server` (when it is one) with this pod CIDR and InternalIP.
fn node(name: &str, pod_cidr: &str, ip: &str, server: Option<&str>) -> Value {
    let mut node = NodeFixture::initialized(name).build();
    if let Some(server) = server {
        node["spec"]["providerID"] = json!(format!("openstack:///{server}"));
    }
    node["spec"]["podCIDRs"] = json!([pod_cidr]);
    node["status"]["addresses"] = json!([{"type": "InternalIP", "address": ip}]);
    node
}

/// Ports (and servers) of these tests are named `occm-route-…`, so that what a failed run
/// leaves is easy to find.
fn port_name(test: &str, i: usize) -> String {
    format!("occm-route-{test}-{}-{i}", std::process::id())
}

/// A port made for test `test` (named by [`port_name`]): its ID and its address.
async fn test_port(env: &StackEnv, test: &str) -> (String, String) {
    let port = scene(env, &["port-create", "--name", &port_name(test, 0)]).await;
    let id = port["id"].as_str().unwrap().to_owned();
    (id, port["fixed_ips"][0]["ip_address"].as_str().unwrap().to_owned())
}

/// A session on the stack's password cloud, counted in `metrics`.
async fn connect(env: &StackEnv, metrics: &Arc<Metrics>) -> Arc<OpenStack> {
    let cloud = OpenStack::new(metrics.clone(), Duration::from_secs(30));
    cloud.set_credentials(credentials(env, "ccm-password"));
    tokio::spawn(cloud.clone().keep_connected());
    let mut ready = cloud.subscribe_ready();
    tokio::time::timeout(Duration::from_secs(60), ready.wait_for(|r| *r)).await.unwrap().unwrap();
    cloud
}

fn route(destination: &str, nexthop: &str) -> ExtraRoute {
    ExtraRoute { destination: destination.into(), nexthop: nexthop.into() }
}

/// One test's piece of the shared router: the routes inside its cluster CIDR (and the ones it
/// made outside it by hand) are removed when it ends, whatever happened.
struct Share {
    cloud: Arc<OpenStack>,
    router: String,
    cluster: ipnet::IpNet,
    own: Vec<ExtraRoute>,
}

impl Share {
    fn new(env: &StackEnv, cloud: &Arc<OpenStack>, cluster: &str) -> Share {
        let router = env["OPENSTACK_ROUTER_ID"].clone();
        testkit::sweep::watch_routes(cluster); // removed by the test's guard, on a panic too
        Share { cloud: cloud.clone(), router, cluster: cluster.parse().unwrap(), own: Vec::new() }
    }

    /// The router's routes inside this test's cluster CIDR (and its own outside it).
    async fn routes(&self) -> BTreeSet<(String, String)> {
        let router = self.cloud.router(&self.router).await.unwrap();
        let mine = |r: &&ExtraRoute| {
            r.destination.parse::<ipnet::IpNet>().is_ok_and(|d| self.cluster.contains(&d))
                || self.own.contains(r)
        };
        router
            .routes
            .iter()
            .filter(mine)
            .map(|r| (r.destination.clone(), r.nexthop.clone()))
            .collect()
    }

    /// Adds a route by hand, as a user would.
    async fn add_by_hand(&mut self, route: ExtraRoute) {
        self.cloud.add_routes(&self.router, std::slice::from_ref(&route)).await.unwrap();
        self.own.push(route);
    }

    /// Removes every route this test made or owns (inside its cluster CIDR).
    async fn clean(&self) {
        let router = self.cloud.router(&self.router).await.unwrap();
        let mine: Vec<ExtraRoute> = router
            .routes
            .into_iter()
            .filter(|r| {
                r.destination.parse::<ipnet::IpNet>().is_ok_and(|d| self.cluster.contains(&d))
                    || self.own.contains(r)
            })
            .collect();
        if !mine.is_empty() {
            self.cloud.remove_routes(&self.router, &mine).await.unwrap();
        }
    }
}

fn set(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter().map(|(d, n)| ((*d).to_owned(), (*n).to_owned())).collect()
}

/// The pairs on the port holding `ip`.
async fn pairs(cloud: &OpenStack, ip: &str) -> Vec<String> {
    let ports = cloud.ports_with_addresses(&[ip.to_owned()]).await.unwrap();
    assert_eq!(ports.len(), 1, "one port holds {ip}: {ports:?}");
    ports[0].allowed_address_pairs.iter().map(|p| p.ip_address.clone()).collect()
}

fn context(
    env: &StackEnv,
    fake: &FakeApiServer,
    cloud: Arc<OpenStack>,
    metrics: Arc<Metrics>,
    cluster: &str,
) -> RouteContext<OpenStack> {
    context_with(env, fake, cloud, metrics, cluster, Duration::from_secs(10))
}

fn context_with(
    env: &StackEnv,
    fake: &FakeApiServer,
    cloud: Arc<OpenStack>,
    metrics: Arc<Metrics>,
    cluster: &str,
    period: Duration,
) -> RouteContext<OpenStack> {
    let (reader, _writer) = kube::runtime::reflector::store::<CachedNode>();
    let settings = Settings {
        router_id: env["OPENSTACK_ROUTER_ID"].clone(),
        cluster: vec![cluster.parse().unwrap()],
        period,
    };
    RouteContext::new(fake.client(), cloud, metrics, reader, settings)
}

/// Every node, projected as the controller's cache keeps it.
async fn nodes(fake: &FakeApiServer) -> Vec<Arc<CachedNode>> {
    let list = Api::<CachedNode>::all(fake.client()).list(&Default::default()).await.unwrap();
    let project = |mut n: CachedNode| {
        projection::project(&mut n);
        Arc::new(n)
    };
    list.items.into_iter().map(project).collect()
}

/// `NetworkUnavailable` of a node: (status, reason).
fn condition(fake: &FakeApiServer, name: &str) -> Option<(String, String)> {
    let node = fake.get("v1", "nodes", "", name)?;
    let conditions = node["status"]["conditions"].as_array()?.clone();
    let found = conditions.into_iter().find(|c| c["type"] == "NetworkUnavailable")?;
    Some((found["status"].as_str()?.to_owned(), found["reason"].as_str()?.to_owned()))
}

fn created() -> Option<(String, String)> {
    Some(("False".into(), "RouteCreated".into()))
}

/// Requests by operation the metrics counted since `before`.
fn network_calls(metrics: &Metrics, ops: &[&'static str]) -> Vec<(&'static str, u64)> {
    ops.iter()
        .map(|op| {
            let all: u64 = ["ok", "not_found", "server_error", "error"]
                .iter()
                .map(|r| metrics.calls("network", op, r))
                .sum();
            (*op, all)
        })
        .collect()
}

const OPS: [&str; 5] = [
    "router_get",
    "router_add_extraroutes",
    "router_remove_extraroutes",
    "port_list",
    "port_update",
];

/// Every operation of the route controller, in the order [`network_calls`] reports them.
const ALL_OPS: [&str; 8] = [
    "router_get",
    "router_add_extraroutes",
    "router_remove_extraroutes",
    "router_update",
    "port_list",
    "port_get",
    "port_update",
    "extension_list",
];

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_routes_and_pairs_follow_the_nodes_and_leave_other_routes_alone() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let prefix = format!("occm-route-{}", std::process::id());
    let a =
        scene(&env, &["server-create", "--name", &format!("{prefix}-a"), "--wait-active"]).await;
    let b =
        scene(&env, &["server-create", "--name", &format!("{prefix}-b"), "--wait-active"]).await;
    let ip = |s: &Value| s["fixed_ips"][0].as_str().unwrap().to_owned();
    let id = |s: &Value| s["id"].as_str().unwrap().to_owned();
    let (ip_a, ip_b) = (ip(&a), ip(&b));
    let metrics = Metrics::shared();
    let cloud = connect(&env, &metrics).await;
    let support = cloud.route_support().await.unwrap();
    assert!(support.atomic && support.if_match && support.address_pairs, "{support:?}");
    let cluster = "10.201.0.0/16";
    let mut share = Share::new(&env, &cloud, cluster);
    share.clean().await;
    // A user's route outside the cluster CIDR, and a stale one inside it.
    share.add_by_hand(route("10.251.7.0/24", &ip_a)).await;
    share.add_by_hand(route("10.201.99.0/24", &ip_b)).await;

    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", node("ra", "10.201.1.0/24", &ip_a, Some(&id(&a))));
    fake.create("v1", "nodes", "", node("rb", "10.201.2.0/24", &ip_b, Some(&id(&b))));
    let ctx = context(&env, &fake, cloud.clone(), metrics.clone(), cluster);
    let mut memory = Memory::default();
    let report = route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!((report.added, report.removed, report.failed), (2, 1, 0), "{report:?}");
    let want = set(&[("10.201.1.0/24", &ip_a), ("10.201.2.0/24", &ip_b), ("10.251.7.0/24", &ip_a)]);
    assert_eq!(share.routes().await, want);
    assert_eq!(pairs(&cloud, &ip_a).await, ["10.201.1.0/24"]);
    assert_eq!(pairs(&cloud, &ip_b).await, ["10.201.2.0/24"]);
    assert_eq!(condition(&fake, "ra"), created());
    assert_eq!(condition(&fake, "rb"), created());

    // Nothing changed: one router read, nothing written.
    let before = network_calls(&metrics, &OPS);
    let writes = fake.writes().len();
    route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    let after = network_calls(&metrics, &OPS);
    let diff: Vec<_> = after.iter().zip(&before).map(|((op, n), (_, m))| (*op, n - m)).collect();
    assert_eq!(
        diff,
        [
            ("router_get", 1),
            ("router_add_extraroutes", 0),
            ("router_remove_extraroutes", 0),
            ("port_list", 0),
            ("port_update", 0)
        ]
    );
    assert_eq!(fake.writes().len(), writes);

    // rb's node goes: its route and its pair go; the user's route stays.
    fake.delete("v1", "nodes", "", "rb");
    let report = route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!(report.removed, 1);
    assert_eq!(share.routes().await, set(&[("10.201.1.0/24", &ip_a), ("10.251.7.0/24", &ip_a)]));
    assert!(pairs(&cloud, &ip_b).await.is_empty());
    assert_eq!(pairs(&cloud, &ip_a).await, ["10.201.1.0/24"]);

    share.clean().await;
    for server in [&a, &b] {
        scene(&env, &["server-delete", &id(server), "--wait"]).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_two_controllers_writing_at_once_lose_nothing() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let metrics = Metrics::shared();
    let cloud = connect(&env, &metrics).await;
    let (one, two) = ("10.203.0.0/16", "10.204.0.0/16");
    let shares = [Share::new(&env, &cloud, one), Share::new(&env, &cloud, two)];
    for share in &shares {
        share.clean().await;
    }
    let mut ports = Vec::new();
    for i in 0..8 {
        let port = scene(&env, &["port-create", "--name", &port_name("two", i)]).await;
        ports.push((
            port["id"].as_str().unwrap().to_owned(),
            port["fixed_ips"][0]["ip_address"].as_str().unwrap().to_owned(),
        ));
    }
    let support = cloud.route_support().await.unwrap();
    // Atomic calls, then the fallback's guarded rewrites: each round adds a node to each
    // cluster and both controllers resync at the same instant.
    for (mode, support) in [("atomic", support), ("fallback", Support { atomic: false, ..support })]
    {
        let fakes = [FakeApiServer::start().await.unwrap(), FakeApiServer::start().await.unwrap()];
        let ctxs = [
            context(&env, &fakes[0], cloud.clone(), Metrics::shared(), one),
            context(&env, &fakes[1], cloud.clone(), Metrics::shared(), two),
        ];
        let mut memories = [Memory::default(), Memory::default()];
        for round in 0..4 {
            for (c, fake) in fakes.iter().enumerate() {
                let (_, ip) = &ports[round * 2 + c];
                let cidr = format!("10.20{}.{}.0/24", 3 + c, round + 1);
                fake.create("v1", "nodes", "", node(&format!("n{round}"), &cidr, ip, None));
            }
            let (nodes_one, nodes_two) = (nodes(&fakes[0]).await, nodes(&fakes[1]).await);
            let [m1, m2] = &mut memories;
            let (r1, r2) = tokio::join!(
                route::resync(&ctxs[0], support, &nodes_one, m1),
                route::resync(&ctxs[1], support, &nodes_two, m2),
            );
            assert_eq!(r1.unwrap().failed, 0, "{mode} round {round}");
            assert_eq!(r2.unwrap().failed, 0, "{mode} round {round}");
        }
        for (c, share) in shares.iter().enumerate() {
            let want: BTreeSet<(String, String)> = (0..4)
                .map(|round| {
                    (format!("10.20{}.{}.0/24", 3 + c, round + 1), ports[round * 2 + c].1.clone())
                })
                .collect();
            assert_eq!(share.routes().await, want, "{mode}: controller {c} lost a route");
        }
        for (c, _) in shares.iter().enumerate() {
            for round in 0..4 {
                let want = format!("10.20{}.{}.0/24", 3 + c, round + 1);
                assert_eq!(pairs(&cloud, &ports[round * 2 + c].1).await, [want], "{mode}");
            }
        }
        if mode == "fallback" {
            // The guarded rewrites did collide (412, counted as a failed router_update), and
            // each was read again and redone.
            let refused = metrics.calls("network", "router_update", "error");
            assert!(refused > 0, "no concurrent rewrite met another: the test proves nothing");
        }
        // Start the next mode from an empty router and bare ports.
        for share in &shares {
            share.clean().await;
        }
        for (id, _) in &ports {
            cloud.set_address_pairs(id, &[], None).await.unwrap();
        }
    }
    for (id, _) in &ports {
        scene(&env, &["port-delete", id]).await;
    }
}

/// A front before the real Neutron that, once, lets an `add_extraroutes` through and answers
/// 502 as a gateway that lost the answer does (the routes are there; the client's limit does
/// not send such a write again) and, once, answers 503 to a port update without passing it on
/// (sent again by the limit after its backoff).
async fn flaky_neutron(real: String) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = format!("http://{}", listener.local_addr().unwrap());
    let failed = Arc::new(AtomicUsize::new(0));
    let (count, base) = (failed.clone(), front.clone());
    let client = reqwest::Client::new();
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let (client, real, base, count) =
                (client.clone(), real.clone(), base.clone(), count.clone());
            async move {
                let path = uri.path().to_owned();
                let port_update = method == Method::PUT && path.contains("/ports/");
                if port_update && count.load(Ordering::SeqCst) == 1 {
                    count.fetch_add(1, Ordering::SeqCst);
                    return (
                        StatusCode::SERVICE_UNAVAILABLE,
                        HeaderMap::new(),
                        Bytes::from_static(b"{}"),
                    );
                }
                let target =
                    format!("{real}{}", uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
                let mut request = client.request(method.clone(), target).body(body);
                for (name, value) in headers.iter().filter(|(n, _)| *n != header::HOST) {
                    request = request.header(name, value);
                }
                let response = request.send().await.unwrap();
                let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
                let mut answer = HeaderMap::new();
                if let Some(value) = response.headers().get(header::CONTENT_TYPE) {
                    answer.insert(header::CONTENT_TYPE, value.clone());
                }
                let text = response.bytes().await.unwrap();
                if path.ends_with("/add_extraroutes") && count.load(Ordering::SeqCst) == 0 {
                    count.fetch_add(1, Ordering::SeqCst);
                    return (StatusCode::BAD_GATEWAY, answer, Bytes::from_static(b"{}"));
                }
                let fixed = String::from_utf8_lossy(&text).replace(&real, &base);
                (status, answer, Bytes::from(fixed))
            }
        },
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (front, failed)
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_neutron_failing_mid_batch_converges() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let real = env["OPENSTACK_NETWORK_URL"].trim_end_matches("/v2.0").to_owned();
    let (front, failed) = flaky_neutron(real).await;
    let cloud = OpenStack::new(Metrics::shared(), Duration::from_secs(30));
    cloud.set_endpoint_override("network", &front);
    cloud.set_credentials(credentials(&env, "ccm-password"));
    tokio::spawn(cloud.clone().keep_connected());
    let mut ready = cloud.subscribe_ready();
    tokio::time::timeout(Duration::from_secs(60), ready.wait_for(|r| *r)).await.unwrap().unwrap();
    let cluster = "10.205.0.0/16";
    let share = Share::new(&env, &cloud, cluster);
    share.clean().await;
    let mut ports = Vec::new();
    for i in 0..3 {
        let port = scene(&env, &["port-create", "--name", &port_name("flaky", i)]).await;
        ports.push((
            port["id"].as_str().unwrap().to_owned(),
            port["fixed_ips"][0]["ip_address"].as_str().unwrap().to_owned(),
        ));
    }
    let fake = FakeApiServer::start().await.unwrap();
    for (i, (_, ip)) in ports.iter().enumerate() {
        fake.create(
            "v1",
            "nodes",
            "",
            node(&format!("f{i}"), &format!("10.205.{i}.0/24"), ip, None),
        );
    }
    let support = cloud.route_support().await.unwrap();
    let period = Duration::from_secs(1);
    let ctx = context_with(&env, &fake, cloud.clone(), Metrics::shared(), cluster, period);
    let mut memory = Memory::default();

    // The batch went through but its answer was lost: every node is told, none is served.
    let report = route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!((report.added, report.failed), (0, 3), "{report:?}");
    assert_eq!(condition(&fake, "f0"), Some(("True".into(), "NoRouteCreated".into())));
    // After the backoff: the routes are found in place and the pairs made (the port update
    // refused with 503 was sent again by the client's limit).
    let mut converged = false;
    for _ in 0..30 {
        tokio::time::sleep(period).await;
        route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
        if (0..3).all(|i| condition(&fake, &format!("f{i}")) == created()) {
            converged = true;
            break;
        }
    }
    assert!(
        converged,
        "conditions: {:?}",
        (0..3).map(|i| condition(&fake, &format!("f{i}"))).collect::<Vec<_>>()
    );
    assert_eq!(failed.load(Ordering::SeqCst), 2, "both faults were injected");
    let want: BTreeSet<_> = ports
        .iter()
        .enumerate()
        .map(|(i, (_, ip))| (format!("10.205.{i}.0/24"), ip.clone()))
        .collect();
    assert_eq!(share.routes().await, want);
    for (i, (_, ip)) in ports.iter().enumerate() {
        assert_eq!(pairs(&cloud, ip).await, [format!("10.205.{i}.0/24")]);
    }
    share.clean().await;
    for (id, _) in &ports {
        scene(&env, &["port-delete", id]).await;
    }
}

fn conf(env: &StackEnv, router: &str) -> String {
    format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = ccm-password\n\n[Route]\nrouter-id = {router}\n",
        env["OPENSTACK_CLOUDS_YAML"]
    )
}

async fn wait_for<T>(what: &str, process: &Process, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {what} within 60 s; log:\n{}",
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_binary_names_a_wrong_router_then_routes_with_the_right_one() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let (port_id, ip) = test_port(&env, "binary").await;
    let cloud = connect(&env, &Metrics::shared()).await;
    let cluster = "10.206.0.0/16";
    let share = Share::new(&env, &cloud, cluster);
    share.clean().await;
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", node("bin-a", "10.206.1.0/24", &ip, None));
    let flags = [
        "--controllers=route",
        "--leader-elect=false",
        "--cluster-cidr=10.206.0.0/16",
        "--route-reconciliation-period=2s",
    ];

    let wrong = "00000000-0000-4000-8000-0000000000ee";
    let (process, _port, _dir) = start_ccm(&fake.url(), &conf(&env, wrong), &flags);
    let line = process
        .wait_line("the route controller cannot use the router", Duration::from_secs(60))
        .await;
    assert!(
        line.contains(&format!("router {wrong} not found")) && line.contains("[Route] router-id"),
        "{line}"
    );
    let note = wait_for("a FailedToCreateRoute Event", &process, || {
        let events = fake.list("events.k8s.io/v1", "events");
        events.into_iter().find(|e| e["reason"] == "FailedToCreateRoute").map(|e| e["note"].clone())
    })
    .await;
    assert!(note.as_str().unwrap().contains("not found"), "{note}");
    drop(process);

    let (process, _port, _dir) =
        start_ccm(&fake.url(), &conf(&env, &env["OPENSTACK_ROUTER_ID"]), &flags);
    wait_for("NetworkUnavailable=False", &process, || {
        (condition(&fake, "bin-a") == created()).then_some(())
    })
    .await;
    assert_eq!(share.routes().await, set(&[("10.206.1.0/24", &ip)]));
    assert_eq!(pairs(&cloud, &ip).await, ["10.206.1.0/24"]);
    drop(process);
    share.clean().await;
    scene(&env, &["port-delete", &port_id]).await;
}

/// `[Route] router-id` given to a running CCM in a kubelet-style swap of its mounted config: the
/// route controller starts in place and the node's route appears; taken away again: it stops
/// and leaves the routes as they are (a node deleted afterwards keeps its route), as a CCM
/// started without a router would.
#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_router_id_given_to_a_running_ccm_starts_the_routes_and_taken_away_stops_them() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let (port_id, ip) = test_port(&env, "live").await;
    let cloud = connect(&env, &Metrics::shared()).await;
    let share = Share::new(&env, &cloud, "10.207.0.0/16");
    share.clean().await;
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", node("live-r", "10.207.1.0/24", &ip, None));
    let without = conf(&env, "x").replace("\n[Route]\nrouter-id = x\n", "\n");
    let mut mount = KubeletMount::new(&[("cloud.conf", &without)]);
    let flags = [
        "--controllers=route",
        "--leader-elect=false",
        "--cluster-cidr=10.207.0.0/16",
        "--route-reconciliation-period=2s",
    ];
    let (args, _port) = ccm_args(&fake.url(), &mount.path("cloud.conf"), mount.dir(), &flags);
    let process = Process::start(&args);
    process.wait_line("the route controller stays off", Duration::from_secs(60)).await;
    process.wait_line("starting controllers", Duration::from_secs(60)).await;

    mount.swap(&[("cloud.conf", &conf(&env, &env["OPENSTACK_ROUTER_ID"]))]);
    process.wait_line("turned on by the cloud config: starting it", Duration::from_secs(30)).await;
    wait_for("the node's route", &process, || {
        (condition(&fake, "live-r") == created()).then_some(())
    })
    .await;
    assert_eq!(share.routes().await, set(&[("10.207.1.0/24", &ip)]));

    mount.swap(&[("cloud.conf", &without)]);
    process.wait_line("turned off by the cloud config: stopping it", Duration::from_secs(30)).await;
    fake.delete("v1", "nodes", "", "live-r");
    // Three periods of a controller that would have removed it.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(share.routes().await, set(&[("10.207.1.0/24", &ip)]), "left as it was");
    drop(process);
    share.clean().await;
    scene(&env, &["port-delete", &port_id]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_requests_per_route_resync_at_20_nodes_of_real_servers() {
    let _sweep = Sweep::start();
    const N: usize = 20;
    let env = StackEnv::load();
    let real = crate::real::Real::start(env.clone()).await;
    let prefix = format!("occm-route-n20-{}", std::process::id());
    let servers = real.create_servers(&prefix, N).await;
    let metrics = Metrics::shared();
    let cloud = connect(&env, &metrics).await;
    let cluster = "10.207.0.0/16";
    let share = Share::new(&env, &cloud, cluster);
    share.clean().await;
    let ids: Vec<String> = servers.iter().map(|s| s.id.clone()).collect();
    let ports = occm::cloud::Cloud::ports(cloud.as_ref(), Some(&ids)).await.unwrap();
    let fake = FakeApiServer::start().await.unwrap();
    let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    for (i, server) in servers.iter().enumerate() {
        let port = ports.iter().find(|p| p.device_id == server.id).unwrap();
        let ip = &port.fixed_ips[0].ip_address;
        fake.create(
            "v1",
            "nodes",
            "",
            node(&names[i], &format!("10.207.{i}.0/24"), ip, Some(&server.id)),
        );
    }
    let support = cloud.route_support().await.unwrap();
    let ctx = context(&env, &fake, cloud.clone(), metrics.clone(), cluster);
    let mut memory = Memory::default();
    let mut last = network_calls(&metrics, &ALL_OPS);
    let mut step = async |what: &str, memory: &mut Memory| {
        let started = std::time::Instant::now();
        let report = route::resync(&ctx, support, &nodes(&fake).await, memory).await.unwrap();
        let took = started.elapsed();
        let now = network_calls(&metrics, &ALL_OPS);
        let made: Vec<(&str, u64)> = now
            .iter()
            .zip(&last)
            .map(|((op, n), (_, m))| (*op, n - m))
            .filter(|(_, d)| *d > 0)
            .collect();
        eprintln!("N = {N}, {what}: {made:?} in {:.0} ms; {report:?}", took.as_secs_f64() * 1000.0);
        last = now;
        made
    };
    let first = step("first resync", &mut memory).await;
    assert_eq!(
        first,
        [
            ("router_get", 1),
            ("router_add_extraroutes", 1),
            ("port_list", 1),
            ("port_update", N as u64)
        ]
    );
    for i in 1..route::VERIFY_EVERY {
        let steady = step(&format!("steady resync {i}"), &mut memory).await;
        assert_eq!(steady, [("router_get", 1)]);
    }
    let verify = step("10th resync", &mut memory).await;
    assert_eq!(verify, [("router_get", 1), ("port_list", 1)]);
    fake.delete("v1", "nodes", "", &names[3]);
    let gone = step("one node deleted", &mut memory).await;
    assert_eq!(
        gone,
        [("router_get", 1), ("router_remove_extraroutes", 1), ("port_list", 1), ("port_update", 1)]
    );
    assert_eq!(share.routes().await.len(), N - 1);
    for name in &names {
        if name != &names[3] {
            assert_eq!(condition(&fake, name), created(), "{name}");
        }
    }
    share.clean().await;
    real.delete_servers(&prefix, &servers).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_dual_stack_nodes_get_a_route_and_a_pair_per_family() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let name = format!("occm-route-dual-{}", std::process::id());
    // A network of the test's own; the Sweep deletes it (router interfaces first) on failure.
    let args = ["dual-stack-network-create", "--name", &name, "--cidr4", "10.9.0.0/24"];
    scene(&env, &[&args[..], &["--cidr6", "fd00:9::/64"]].concat()).await;
    let port = scene(&env, &["port-create", "--network", &name, "--name", &name]).await;
    let address = |family: &str| {
        let ips = port["fixed_ips"].as_array().unwrap().iter();
        let ips: Vec<&str> = ips.map(|f| f["ip_address"].as_str().unwrap()).collect();
        let found = ips.iter().find(|ip| ip.contains(if family == "v6" { ':' } else { '.' }));
        (*found.unwrap_or_else(|| panic!("the port has no {family} address: {ips:?}"))).to_owned()
    };
    let (ip4, ip6) = (address("v4"), address("v6"));
    let metrics = Metrics::shared();
    let cloud = connect(&env, &metrics).await;
    let support = cloud.route_support().await.unwrap();
    let (cluster4, cluster6) = ("10.208.0.0/16", "fd00:208::/48");
    let shares = [Share::new(&env, &cloud, cluster4), Share::new(&env, &cloud, cluster6)];
    for share in &shares {
        share.clean().await;
    }

    let fake = FakeApiServer::start().await.unwrap();
    let (pod4, pod6) = ("10.208.1.0/24", "fd00:208:0:1::/64");
    let mut dual = node("dual", pod4, &ip4, None);
    dual["spec"]["podCIDRs"] = json!([pod4, pod6]);
    dual["status"]["addresses"] =
        json!([{"type": "InternalIP", "address": ip4}, {"type": "InternalIP", "address": ip6}]);
    fake.create("v1", "nodes", "", dual);
    let (reader, _writer) = kube::runtime::reflector::store::<CachedNode>();
    let settings = Settings {
        router_id: env["OPENSTACK_ROUTER_ID"].clone(),
        cluster: vec![cluster4.parse().unwrap(), cluster6.parse().unwrap()],
        period: Duration::from_secs(10),
    };
    let ctx = RouteContext::new(fake.client(), cloud.clone(), metrics.clone(), reader, settings);
    let mut memory = Memory::default();
    let report = route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!((report.added, report.removed, report.failed), (2, 0, 0), "{report:?}");
    // Each family's pod CIDR goes through the node's address of that family.
    assert_eq!(shares[0].routes().await, set(&[(pod4, &ip4)]));
    assert_eq!(shares[1].routes().await, set(&[(pod6, &ip6)]));
    let mut held = pairs(&cloud, &ip4).await;
    held.sort();
    assert_eq!(held, [pod4, pod6], "one port holds both addresses, and both pod CIDRs");
    assert_eq!(condition(&fake, "dual"), created());

    fake.delete("v1", "nodes", "", "dual");
    let report = route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!((report.removed, report.failed), (2, 0), "{report:?}");
    for share in &shares {
        assert!(share.routes().await.is_empty());
    }
    assert!(pairs(&cloud, &ip6).await.is_empty());
    scene(&env, &["dual-stack-network-delete", "--name", &name]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_port_security_off_gets_its_route_and_no_pair() {
    let _sweep = Sweep::start();
    // The real Neutron refuses allowed address pairs on such a port (409); the controller reads
    // port_security_enabled and writes none, and the node is routed all the same.
    let env = StackEnv::load();
    let name = format!("occm-route-nosec-{}", std::process::id());
    let args = ["port-create", "--name", name.as_str(), "--no-port-security"];
    let port = scene(&env, &args).await;
    assert_eq!(port["port_security_enabled"], false, "{port}");
    let ip = port["fixed_ips"][0]["ip_address"].as_str().unwrap().to_owned();
    let metrics = Metrics::shared();
    let cloud = connect(&env, &metrics).await;
    let support = cloud.route_support().await.unwrap();
    let cluster = "10.209.0.0/16";
    let share = Share::new(&env, &cloud, cluster);
    share.clean().await;
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", node("nosec", "10.209.1.0/24", &ip, None));
    let ctx = context(&env, &fake, cloud.clone(), metrics.clone(), cluster);
    let mut memory = Memory::default();
    let report = route::resync(&ctx, support, &nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!((report.added, report.failed), (1, 0), "{report:?}");
    assert_eq!(share.routes().await, set(&[("10.209.1.0/24", &ip)]));
    assert!(pairs(&cloud, &ip).await.is_empty());
    assert_eq!(network_calls(&metrics, &["port_update"]), [("port_update", 0)]);
    assert_eq!(condition(&fake, "nosec"), created());
    share.clean().await;
    scene(&env, &["port-delete", port["id"].as_str().unwrap()]).await;
}
