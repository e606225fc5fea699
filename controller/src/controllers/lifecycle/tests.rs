//! A lifecycle tick's request pattern: one listing, a lookup of its own only for an absence.

use testkit::kube::NodeFixture;

use super::check_all;
use crate::controllers::fixtures::{FakeCloud, context, instance, nodes};
use crate::controllers::{SHUTDOWN_TAINT, has_taint};
use fake_kube_apiserver::FakeApiServer;

fn not_ready(fake: &FakeApiServer, name: &str, server: &str) {
    let node = NodeFixture::initialized(name)
        .provider_id(&format!("openstack:///{server}"))
        .ready("False")
        .build();
    fake.create("v1", "nodes", "", node);
}

#[tokio::test]
async fn a_tick_lists_servers_once_and_deletes_only_after_a_lookup_of_its_own_finds_nothing() {
    let fake = FakeApiServer::start().await.unwrap();
    not_ready(&fake, "off", "id-off");
    not_ready(&fake, "up", "id-up");
    not_ready(&fake, "gone", "id-gone");
    fake.create("v1", "nodes", "", NodeFixture::initialized("ready").build());
    let cloud = FakeCloud::with(vec![
        instance("off", "10.0.0.1", "SHUTOFF"),
        instance("up", "10.0.0.2", "ACTIVE"),
    ]);
    let ctx = context(&fake, cloud.clone());
    check_all(&ctx, &nodes(&ctx).await).await;
    assert_eq!(cloud.calls(), ["states", "Id(\"id-gone\")"]);
    assert!(fake.get("v1", "nodes", "", "gone").is_none());
    let left = nodes(&ctx).await;
    let off = left.iter().find(|n| n.metadata.name.as_deref() == Some("off")).unwrap();
    assert!(has_taint(off, SHUTDOWN_TAINT));
    assert_eq!(left.len(), 3);
}

#[tokio::test]
async fn a_failed_listing_does_nothing_and_asks_nothing_more() {
    let fake = FakeApiServer::start().await.unwrap();
    not_ready(&fake, "a", "id-a");
    not_ready(&fake, "b", "id-b");
    let cloud = FakeCloud::with(vec![]);
    cloud.fail_with(crate::cloud::Error::NotConnected { reason: "keystone down".into() });
    let ctx = context(&fake, cloud.clone());
    check_all(&ctx, &nodes(&ctx).await).await;
    assert_eq!(cloud.calls(), ["states"]);
    assert_eq!(nodes(&ctx).await.len(), 2);
    assert!(fake.writes().is_empty());
}

#[tokio::test]
async fn all_ready_asks_nothing() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", NodeFixture::initialized("a").build());
    let cloud = FakeCloud::with(vec![]);
    let ctx = context(&fake, cloud.clone());
    check_all(&ctx, &nodes(&ctx).await).await;
    assert!(cloud.calls().is_empty());
}
