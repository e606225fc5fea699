//! Reconcile tests: the fake Cloud plus the wire-level fake API server.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{Controller, watcher};
use serde_json::{Value, json};

use testkit::kube::NodeFixture;

use super::fixtures::{FakeCloud, context, control_plane, instance, nodes};
use super::lifecycle::{self, Outcome};
use super::resync::{self, Cursor, Report};
use super::{SHUTDOWN_TAINT, UNINITIALIZED_TAINT, node as node_controller};
use crate::cloud::Error as CloudError;
use crate::controllers::projection::CachedNode;
use fake_kube_apiserver::FakeApiServer;

fn taint_keys(node: &Value) -> Vec<String> {
    let taints = node["spec"]["taints"].as_array().cloned().unwrap_or_default();
    taints.iter().map(|t| t["key"].as_str().unwrap().to_owned()).collect()
}

fn server_error() -> CloudError {
    CloudError::Call {
        operation: "server_get",
        source: osauth::Error::new(osauth::ErrorKind::InternalServerError, "500 from Nova"),
    }
}

#[tokio::test]
async fn tainted_node_is_initialized_with_provider_id_addresses_labels_and_taint_removed() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", control_plane("worker-0"));
    let cloud = Arc::new(FakeCloud { region: Some("RegionOne".into()), ..FakeCloud::default() });
    *cloud.instances.lock().unwrap() = vec![instance("worker-0", "10.0.0.5", "ACTIVE")];
    let ctx = context(&fake, cloud.clone());
    let all = nodes(&ctx).await;
    node_controller::reconcile(all[0].clone(), ctx.clone()).await.unwrap();

    let got = fake.get("v1", "nodes", "", "worker-0").unwrap();
    assert_eq!(got["spec"]["providerID"], "openstack:///id-worker-0");
    assert_eq!(taint_keys(&got), ["node-role.kubernetes.io/master"]);
    assert_eq!(got["metadata"]["labels"]["node.kubernetes.io/instance-type"], "m1.small");
    assert_eq!(got["metadata"]["labels"]["topology.kubernetes.io/zone"], "nova-zone-1");
    assert_eq!(got["metadata"]["labels"]["topology.kubernetes.io/region"], "RegionOne");
    assert_eq!(
        got["status"]["addresses"],
        json!([{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "Hostname", "address": "worker-0"}])
    );
    assert_eq!(cloud.calls(), ["Name(\"worker-0\")"]);
    let writes = fake.writes();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert_eq!(writes[0].path, "/api/v1/nodes/worker-0/status");
    assert_eq!(writes[0].content_type.as_deref(), Some("application/merge-patch+json"));
    assert_eq!(writes[1].path, "/api/v1/nodes/worker-0");
}

#[tokio::test]
async fn issue_16_a_reconcile_on_a_copy_older_than_its_own_write_does_not_initialize_again() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", control_plane("worker-0"));
    let cloud = FakeCloud::with(vec![instance("worker-0", "10.0.0.5", "ACTIVE")]);
    let ctx = context(&fake, cloud.clone());
    let stale = nodes(&ctx).await.remove(0);
    node_controller::reconcile(stale.clone(), ctx.clone()).await.unwrap();
    assert_eq!(cloud.calls().len(), 1);
    let writes = fake.writes().len();

    // The cached copy still carries the taint: it is the version our write replaced.
    node_controller::reconcile(stale, ctx.clone()).await.unwrap();
    assert_eq!(cloud.calls().len(), 1, "no second lookup");
    assert_eq!(fake.writes().len(), writes, "no second write, no 409");

    // The copy the watch delivers next is our own write: untainted, and the entry ends.
    node_controller::reconcile(nodes(&ctx).await.remove(0), ctx.clone()).await.unwrap();
    assert_eq!(cloud.calls().len(), 1);
}

#[tokio::test]
async fn provider_id_is_used_for_lookup_and_never_rewritten() {
    let fake = FakeApiServer::start().await.unwrap();
    let mut tainted = control_plane("worker-1");
    tainted["spec"]["providerID"] = json!("openstack:///id-worker-1");
    fake.create("v1", "nodes", "", tainted);
    let cloud = FakeCloud::with(vec![instance("other-name", "10.0.0.6", "ACTIVE")]);
    cloud.instances.lock().unwrap()[0].server.id = "id-worker-1".into();
    let ctx = context(&fake, cloud.clone());
    node_controller::reconcile(nodes(&ctx).await[0].clone(), ctx).await.unwrap();
    assert_eq!(cloud.calls(), ["Id(\"id-worker-1\")"]);
    let got = fake.get("v1", "nodes", "", "worker-1").unwrap();
    assert_eq!(got["spec"]["providerID"], "openstack:///id-worker-1");
    assert_eq!(taint_keys(&got), ["node-role.kubernetes.io/master"]);
}

#[tokio::test]
async fn node_ip_not_on_the_server_keeps_the_taint_and_records_a_warning() {
    let fake = FakeApiServer::start().await.unwrap();
    let mut tainted = control_plane("worker-2");
    tainted["metadata"]["annotations"] =
        json!({"alpha.kubernetes.io/provided-node-ip": "10.9.9.9"});
    fake.create("v1", "nodes", "", tainted);
    let ctx = context(&fake, FakeCloud::with(vec![instance("worker-2", "10.0.0.7", "ACTIVE")]));
    let err = node_controller::reconcile(nodes(&ctx).await[0].clone(), ctx).await.unwrap_err();
    assert_eq!(err.kind().as_str(), "node");
    let got = fake.get("v1", "nodes", "", "worker-2").unwrap();
    assert!(taint_keys(&got).contains(&UNINITIALIZED_TAINT.to_owned()));
    let events = fake.list("events.k8s.io/v1", "events");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["reason"], "ProviderInitializationFailed");
}

#[tokio::test]
async fn missing_server_at_initialization_keeps_the_node_and_the_taint() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", control_plane("worker-3"));
    let ctx = context(&fake, FakeCloud::with(vec![]));
    let err = node_controller::reconcile(nodes(&ctx).await[0].clone(), ctx).await.unwrap_err();
    assert_eq!(err.kind().as_str(), "not_found");
    assert!(fake.writes().is_empty());
}

#[tokio::test]
async fn a_full_address_resync_lists_servers_and_ports_once_and_patches_only_changed_nodes() {
    let fake = FakeApiServer::start().await.unwrap();
    for (name, ip) in [("a", "10.0.0.1"), ("b", "10.0.0.2"), ("c", "10.0.0.3")] {
        let mut n =
            NodeFixture::initialized(name).provider_id(&format!("openstack:///id-{name}")).build();
        n["status"]["addresses"] = json!([{"type": "InternalIP", "address": ip}]);
        fake.create("v1", "nodes", "", n);
    }
    let cloud = FakeCloud::with(vec![
        instance("a", "10.0.0.1", "ACTIVE"),
        instance("b", "10.0.0.22", "ACTIVE"),
        instance("c", "10.0.0.3", "ACTIVE"),
    ]);
    let ctx = context(&fake, cloud.clone());
    let report = resync::resync(&ctx, &nodes(&ctx).await, &mut Cursor::default()).await.unwrap();
    assert_eq!(report, Report { full: true, compared: 3, patched: 1 });
    assert_eq!(cloud.calls(), ["servers", "ports"]);
    let writes = fake.writes();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].path, "/api/v1/nodes/b/status");
    assert_eq!(
        fake.get("v1", "nodes", "", "b").unwrap()["status"]["addresses"][0]["address"],
        "10.0.0.22"
    );
}

#[tokio::test]
async fn address_refresh_replaces_a_list_holding_a_type_it_never_writes() {
    let fake = FakeApiServer::start().await.unwrap();
    let mut n = NodeFixture::initialized("a").provider_id("openstack:///id-a").build();
    n["status"]["addresses"] = json!([
        {"type": "InternalIP", "address": "10.0.0.1"},
        {"type": "InternalDNS", "address": "a.internal"}
    ]);
    fake.create("v1", "nodes", "", n);
    let ctx = context(&fake, FakeCloud::with(vec![instance("a", "10.0.0.1", "ACTIVE")]));
    let report = resync::resync(&ctx, &nodes(&ctx).await, &mut Cursor::default()).await.unwrap();
    assert_eq!(report.patched, 1);
    assert_eq!(
        fake.get("v1", "nodes", "", "a").unwrap()["status"]["addresses"],
        json!([{"type": "InternalIP", "address": "10.0.0.1"}])
    );
}

#[tokio::test]
async fn not_ready_node_whose_server_is_gone_is_deleted_with_an_event_on_both_lookup_paths() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create(
        "v1",
        "nodes",
        "",
        NodeFixture::initialized("by-id").provider_id("openstack:///gone").ready("False").build(),
    );
    fake.create("v1", "nodes", "", NodeFixture::initialized("by-name").ready("Unknown").build());
    let ctx = context(&fake, FakeCloud::with(vec![]));
    for n in nodes(&ctx).await {
        assert_eq!(lifecycle::check(&ctx, &n).await.unwrap(), Outcome::Deleted);
    }
    assert!(fake.list("v1", "nodes").is_empty());
    let events = fake.list("events.k8s.io/v1", "events");
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| e["reason"] == "DeletingNode"));
}

#[tokio::test]
async fn shutoff_server_taints_and_ready_again_untaints() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create(
        "v1",
        "nodes",
        "",
        NodeFixture::initialized("w").provider_id("openstack:///id-w").ready("False").build(),
    );
    let cloud = FakeCloud::with(vec![instance("w", "10.0.0.1", "SHUTOFF")]);
    let ctx = context(&fake, cloud);
    let n = nodes(&ctx).await.remove(0);
    assert_eq!(lifecycle::check(&ctx, &n).await.unwrap(), Outcome::Tainted);
    assert_eq!(taint_keys(&fake.get("v1", "nodes", "", "w").unwrap()), [SHUTDOWN_TAINT]);
    let n = nodes(&ctx).await.remove(0);
    assert_eq!(lifecycle::check(&ctx, &n).await.unwrap(), Outcome::Unchanged, "already tainted");
    fake.patch(
        "v1",
        "nodes",
        "",
        "w",
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    );
    let n = nodes(&ctx).await.remove(0);
    assert_eq!(lifecycle::check(&ctx, &n).await.unwrap(), Outcome::Untainted);
    assert!(taint_keys(&fake.get("v1", "nodes", "", "w").unwrap()).is_empty());
}

#[tokio::test]
async fn transient_cloud_errors_never_delete_a_node() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create(
        "v1",
        "nodes",
        "",
        NodeFixture::initialized("w").provider_id("openstack:///id-w").ready("False").build(),
    );
    let cloud = FakeCloud::with(vec![]);
    let ctx = context(&fake, cloud.clone());
    let timeout = CloudError::Call {
        operation: "server_get",
        source: osauth::Error::new(osauth::ErrorKind::OperationTimedOut, "timed out"),
    };
    for error in
        [server_error(), timeout, CloudError::NotConnected { reason: "keystone down".into() }]
    {
        cloud.fail_with(error);
        lifecycle::check_all(&ctx, &nodes(&ctx).await).await;
    }
    assert!(fake.get("v1", "nodes", "", "w").is_some());
    assert!(fake.writes().is_empty());
    let metrics = ctx.metrics.encode();
    assert!(
        metrics.contains(r#"controller="cloud-node-lifecycle",result="server_error"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_node_controller_initializes_a_node_registered_while_it_runs() {
    let fake = FakeApiServer::start().await.unwrap();
    let ctx = context(&fake, FakeCloud::with(vec![instance("late", "10.0.0.9", "ACTIVE")]));
    let api: Api<CachedNode> = Api::all(fake.client());
    let controller = Controller::new(api.clone(), watcher::Config::default())
        .run(node_controller::reconcile, node_controller::error_policy, ctx)
        .for_each(|_| async {});
    tokio::spawn(controller);
    fake.create("v1", "nodes", "", control_plane("late"));
    let initialized =
        kube::runtime::wait::await_condition(api, "late", |n: Option<&CachedNode>| {
            n.and_then(|n| n.spec.as_ref()).and_then(|s| s.provider_id.as_deref()).is_some()
        });
    let node = tokio::time::timeout(Duration::from_secs(10), initialized)
        .await
        .expect("the late node is initialized within 10 s")
        .unwrap()
        .unwrap();
    assert_eq!(node.spec.unwrap().provider_id.as_deref(), Some("openstack:///id-late"));
}
