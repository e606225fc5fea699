//! The OpenStack requests of one address resync and one lifecycle tick at N = 3,000, counted by
//! operation against the scale benchmark's replay (benches/scale/replay.rs), so that a change
//! cannot bring back a cost linear in N. See: issue 16.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_kube_apiserver::FakeApiServer;
use kube::api::Api;
use occm::cloud::OpenStack;
use occm::config::Credentials;
use occm::controllers::projection::{CachedCondition, CachedNode};
use occm::controllers::resync::{self, Cursor};
use occm::controllers::{Context, lifecycle};
use occm::metrics::Metrics;
use serde_json::json;
use testkit::kube::NodeFixture;

use crate::replay::{self, Replay};

const N: usize = 3000;

/// The replay with N servers, N initialized nodes already holding their addresses, and a
/// controller context logged in to the replay.
async fn scene()
-> (Replay, FakeApiServer, Arc<Context<OpenStack>>, Vec<Arc<CachedNode>>, Arc<Metrics>) {
    let replay = Replay::start(N).await;
    let fake = FakeApiServer::start().await.unwrap();
    for i in 0..N {
        let name = replay::server_name(i);
        let mut node = NodeFixture::initialized(&name)
            .provider_id(&format!("openstack:///{}", replay::server_id(i)))
            .build();
        node["status"]["addresses"] = json!([
            {"type": "InternalIP", "address": replay::ip(i)},
            {"type": "Hostname", "address": name},
        ]);
        fake.create("v1", "nodes", "", node);
    }
    let metrics = Metrics::shared();
    let cloud = OpenStack::new(metrics.clone(), Duration::from_secs(30));
    cloud.set_credentials(Credentials {
        auth_url: Some(replay.auth_url()),
        username: Some("ccm-user".into()),
        password: Some("replay-pass".to_owned().into()),
        project_name: Some("ccm".into()),
        domain_name: Some("Default".into()),
        ..Credentials::default()
    });
    tokio::spawn(cloud.clone().keep_connected());
    let mut ready = cloud.subscribe_ready();
    tokio::time::timeout(Duration::from_secs(30), ready.wait_for(|r| *r))
        .await
        .expect("logged in to the replay within 30 s")
        .unwrap();
    let (reader, _writer) = kube::runtime::reflector::store::<CachedNode>();
    let ctx =
        Arc::new(Context::new(fake.client(), cloud, metrics.clone(), Default::default(), reader));
    let nodes = Api::<CachedNode>::all(fake.client()).list(&Default::default()).await.unwrap();
    (replay, fake, ctx, nodes.items.into_iter().map(Arc::new).collect(), metrics)
}

/// The requests counted from `mark` on, by operation, without the once-per-process ones (the
/// login and the version discoveries, which come with the first call).
fn since(replay: &Replay, mark: usize) -> BTreeMap<&'static str, usize> {
    let mut counts = replay.counter.counts(mark);
    counts.retain(|op, _| !op.ends_with("discovery") && *op != "identity/authenticate");
    counts
}

#[tokio::test]
async fn issue_16_a_steady_address_resync_at_3000_nodes_is_one_changes_since_request() {
    let (replay, fake, ctx, nodes, metrics) = scene().await;
    let mut cursor = Cursor::default();

    let mark = replay.counter.hits().len();
    let report = resync::resync(&ctx, &nodes, &mut cursor).await.unwrap();
    assert!(report.full && report.compared == N && report.patched == 0, "{report:?}");
    // ⌈N/1,000⌉ full pages and the empty one after them; one port list.
    let expected = BTreeMap::from([("compute/server_list_page", 4), ("network/port_list_all", 1)]);
    assert_eq!(since(&replay, mark), expected);

    let mark = replay.counter.hits().len();
    let report = resync::resync(&ctx, &nodes, &mut cursor).await.unwrap();
    assert!(!report.full && report.compared == 0, "{report:?}");
    assert_eq!(since(&replay, mark), BTreeMap::from([("compute/server_list_changes", 1)]));
    assert!(fake.writes().is_empty(), "nothing changed, nothing written");

    // The wire requests, not the logical lists: 4 pages + 1 changes-since.
    assert_eq!(metrics.calls("compute", "server_list", "ok"), 5);
}

#[tokio::test]
async fn issue_16_a_lifecycle_tick_at_3000_nodes_with_10_percent_not_ready_is_one_listing() {
    let (replay, fake, ctx, mut nodes, metrics) = scene().await;
    for node in nodes.iter_mut().step_by(10) {
        let mut down = (**node).clone();
        let status = down.status.get_or_insert_default();
        status.conditions = Some(vec![CachedCondition {
            type_: "Ready".into(),
            status: "Unknown".into(),
            ..Default::default()
        }]);
        *node = Arc::new(down);
    }
    let mark = replay.counter.hits().len();
    lifecycle::check_all(&ctx, &nodes).await;
    // ⌈N/1,000⌉ + 1 requests, whatever the NotReady count.
    assert_eq!(since(&replay, mark), BTreeMap::from([("compute/server_list_page", 4)]));
    assert!(fake.writes().is_empty(), "every server ACTIVE: nothing to do");
    // The metric counts wire requests (pages), not logical lists.
    assert_eq!(metrics.calls("compute", "server_list", "ok"), 4);

    // A NotReady node whose server is not in the listing: deleted only on Nova's own 404.
    let gone = NodeFixture::initialized("worker-gone")
        .provider_id("openstack:///00000000-0000-4000-8000-000000000000")
        .ready("False")
        .build();
    fake.create("v1", "nodes", "", gone.clone());
    nodes.push(Arc::new(serde_json::from_value(gone).unwrap()));
    let mark = replay.counter.hits().len();
    lifecycle::check_all(&ctx, &nodes).await;
    let expected = BTreeMap::from([("compute/server_get", 1), ("compute/server_list_page", 4)]);
    assert_eq!(since(&replay, mark), expected);
    assert!(fake.get("v1", "nodes", "", "worker-gone").is_none());
}

/// Nodes for the route controller: N = 1,000 of the replay's servers with a pod CIDR each
/// inside `172.16.0.0/12`, their InternalIP the server's port.
const ROUTED: usize = 1000;

fn pod_cidr(i: usize) -> String {
    format!("172.{}.{}.0/24", 16 + i / 256, i % 256)
}

async fn routed_nodes(fake: &FakeApiServer) -> Vec<Arc<CachedNode>> {
    let list = Api::<CachedNode>::all(fake.client()).list(&Default::default()).await.unwrap();
    let project = |mut node: CachedNode| {
        occm::controllers::projection::project(&mut node);
        Arc::new(node)
    };
    list.items.into_iter().map(project).collect()
}

#[tokio::test]
async fn issue_27_a_steady_route_resync_at_1000_nodes_is_one_router_read() {
    use occm::cloud::routes::Routes;
    use occm::controllers::route::{self, Memory, RouteContext, Settings, VERIFY_EVERY};

    let replay = Replay::start(ROUTED).await;
    let fake = FakeApiServer::start().await.unwrap();
    for i in 0..ROUTED {
        let name = replay::server_name(i);
        let mut node = NodeFixture::initialized(&name)
            .provider_id(&format!("openstack:///{}", replay::server_id(i)))
            .build();
        node["spec"]["podCIDRs"] = json!([pod_cidr(i)]);
        node["status"]["addresses"] = json!([{"type": "InternalIP", "address": replay::ip(i)}]);
        fake.create("v1", "nodes", "", node);
    }
    let metrics = Metrics::shared();
    let cloud = OpenStack::new(metrics.clone(), Duration::from_secs(30));
    cloud.set_credentials(Credentials {
        auth_url: Some(replay.auth_url()),
        username: Some("ccm-user".into()),
        password: Some("replay-pass".to_owned().into()),
        project_name: Some("ccm".into()),
        domain_name: Some("Default".into()),
        ..Credentials::default()
    });
    tokio::spawn(cloud.clone().keep_connected());
    let mut ready = cloud.subscribe_ready();
    tokio::time::timeout(Duration::from_secs(30), ready.wait_for(|r| *r)).await.unwrap().unwrap();
    let support = cloud.route_support().await.unwrap();
    let (reader, _writer) = kube::runtime::reflector::store::<CachedNode>();
    let settings = Settings {
        router_id: replay::ROUTER_ID.into(),
        cluster: vec!["172.16.0.0/12".parse().unwrap()],
        period: Duration::from_secs(10),
    };
    let ctx = RouteContext::new(fake.client(), cloud, metrics.clone(), reader, settings);
    let mut memory = Memory::default();

    // Every node new: one router read, one batch of routes, ⌈N/100⌉ port listings and one
    // port write per node (Neutron has no bulk port update).
    let mark = replay.counter.hits().len();
    let report =
        route::resync(&ctx, support, &routed_nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!((report.added, report.failed, report.conditions), (ROUTED, 0, ROUTED), "{report:?}");
    let expected = BTreeMap::from([
        ("network/port_list_by_address", 10),
        ("network/port_update", ROUTED),
        ("network/router_add_extraroutes", 1),
        ("network/router_get", 1),
    ]);
    assert_eq!(since(&replay, mark), expected);

    // Nothing changed: the router read alone, at any N, and no Kubernetes write.
    let writes = fake.writes().len();
    for _ in 1..VERIFY_EVERY {
        let mark = replay.counter.hits().len();
        route::resync(&ctx, support, &routed_nodes(&fake).await, &mut memory).await.unwrap();
        assert_eq!(since(&replay, mark), BTreeMap::from([("network/router_get", 1)]));
    }
    assert_eq!(fake.writes().len(), writes);

    // Every 10th resync checks every node's pairs: the listings, no write.
    let mark = replay.counter.hits().len();
    let report =
        route::resync(&ctx, support, &routed_nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!(report.verified, ROUTED);
    let expected =
        BTreeMap::from([("network/port_list_by_address", 10), ("network/router_get", 1)]);
    assert_eq!(since(&replay, mark), expected);

    // A node leaves: its pair and its route, one listing and one write each.
    fake.delete("v1", "nodes", "", &replay::server_name(7));
    let mark = replay.counter.hits().len();
    let report =
        route::resync(&ctx, support, &routed_nodes(&fake).await, &mut memory).await.unwrap();
    assert_eq!(report.removed, 1);
    let expected = BTreeMap::from([
        ("network/port_list_by_address", 1),
        ("network/port_update", 1),
        ("network/router_get", 1),
        ("network/router_remove_extraroutes", 1),
    ]);
    assert_eq!(since(&replay, mark), expected);
    assert_eq!(metrics.calls("network", "router_get", "ok"), u64::from(VERIFY_EVERY) + 2);
}
