//! The resync's request pattern against the fake cloud: full, then `changes-since`.

use std::sync::Arc;

use serde_json::json;
use testkit::kube::NodeFixture;

use super::{Cursor, FULL_EVERY, Report, resync};
use crate::controllers::Context;
use crate::controllers::fixtures::{FakeCloud, context, instance, nodes};
use fake_kube_apiserver::FakeApiServer;

/// Nodes `a` and `b` (providerIDs set, address 10.0.0.1) and their servers, updated an hour apart.
async fn scene() -> (FakeApiServer, Arc<FakeCloud>, Arc<Context<FakeCloud>>) {
    let fake = FakeApiServer::start().await.unwrap();
    let mut servers = Vec::new();
    for (name, updated) in [("a", "2026-01-01T00:00:00Z"), ("b", "2026-01-01T01:00:00Z")] {
        let mut n =
            NodeFixture::initialized(name).provider_id(&format!("openstack:///id-{name}")).build();
        n["status"]["addresses"] = json!([{"type": "InternalIP", "address": "10.0.0.1"}]);
        fake.create("v1", "nodes", "", n);
        let mut server = instance(name, "10.0.0.1", "ACTIVE");
        server.server.updated = updated.into();
        servers.push(server);
    }
    let cloud = FakeCloud::with(servers);
    let ctx = context(&fake, cloud.clone());
    (fake, cloud, ctx)
}

#[tokio::test]
async fn after_a_full_list_a_resync_asks_only_for_changes_and_the_ports_of_changed_servers() {
    let (fake, cloud, ctx) = scene().await;
    let mut cursor = Cursor::default();
    let report = resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap();
    assert_eq!(report, Report { full: true, compared: 2, patched: 0 });
    assert_eq!(cloud.calls(), ["servers", "ports"]);
    assert_eq!(cursor.since().unwrap().to_string(), "2026-01-01T00:59:00Z", "newest less 60 s");

    // Nothing changed: `b` comes back in the overlap, already handled; no port request.
    let report = resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap();
    assert_eq!(report, Report { full: false, compared: 0, patched: 0 });
    assert_eq!(cloud.calls()[2..], ["changes"]);

    // `a` gets a new address (Nova moves `updated`): only its ports are asked for.
    let changed = instance("a", "10.0.0.7", "ACTIVE");
    {
        let mut all = cloud.instances.lock().unwrap();
        all[0] = changed;
        all[0].server.updated = "2026-01-01T02:00:00Z".into();
    }
    let report = resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap();
    assert_eq!(report, Report { full: false, compared: 1, patched: 1 });
    assert_eq!(cloud.calls()[3..], ["changes", "ports of servers"]);
    assert_eq!(
        fake.get("v1", "nodes", "", "a").unwrap()["status"]["addresses"][0]["address"],
        "10.0.0.7"
    );
}

#[tokio::test]
async fn every_tenth_resync_and_the_one_after_an_error_list_everything() {
    let (_fake, cloud, ctx) = scene().await;
    let mut cursor = Cursor::default();
    let mut full = Vec::new();
    for _ in 0..2 * FULL_EVERY {
        full.push(resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap().full);
    }
    let expected: Vec<bool> = (0..2 * FULL_EVERY).map(|i| i % FULL_EVERY == 0).collect();
    assert_eq!(full, expected);

    cloud.fail_with(crate::cloud::Error::NotConnected { reason: "keystone down".into() });
    resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap_err();
    *cloud.failure.lock().unwrap() = None;
    assert!(resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap().full);
}

#[tokio::test]
async fn a_server_deleted_since_the_last_resync_leaves_its_node_addresses_alone() {
    let (fake, cloud, ctx) = scene().await;
    let mut cursor = Cursor::default();
    resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap();
    // As Nova answers `changes-since` for a deleted server: status DELETED, no addresses.
    {
        let mut all = cloud.instances.lock().unwrap();
        all[0].server.status = "DELETED".into();
        all[0].server.addresses.clear();
        all[0].ports.clear();
        all[0].server.updated = "2026-01-01T02:00:00Z".into();
    }
    let report = resync(&ctx, &nodes(&ctx).await, &mut cursor).await.unwrap();
    assert_eq!(report, Report { full: false, compared: 0, patched: 0 });
    assert!(fake.writes().is_empty(), "the lifecycle controller decides about that node");
}
