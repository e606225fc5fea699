//! The node controller as `app.rs` runs it (one reflector feeding the cache and the
//! controller) over many tainted nodes at once.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};

use super::BATCH_FROM;
use crate::cloud::Error as CloudError;
use crate::config::Networking;
use crate::controllers::fixtures::{FakeCloud, control_plane, instance};
use crate::controllers::projection::CachedNode;
use crate::controllers::{Context, UNINITIALIZED_TAINT, node};
use crate::metrics::Metrics;
use fake_kube_apiserver::FakeApiServer;

/// `count` tainted nodes `n-00`…, each with its server; every third found by providerID.
fn cluster(fake: &FakeApiServer, count: usize) -> Arc<FakeCloud> {
    let mut servers = Vec::new();
    for i in 0..count {
        let name = format!("n-{i:02}");
        let mut node = control_plane(&name);
        if i % 3 == 0 {
            node["spec"]["providerID"] = json!(format!("openstack:///id-{name}"));
        }
        fake.create("v1", "nodes", "", node);
        servers.push(instance(&name, &format!("10.0.0.{}", 10 + i), "ACTIVE"));
    }
    FakeCloud::with(servers)
}

/// Runs the node controller until every node is initialized; the cloud's calls, sorted.
async fn initialize_all(fake: &FakeApiServer, cloud: Arc<FakeCloud>) -> Vec<String> {
    let (reader, writer) = reflector::store::<CachedNode>();
    let api: Api<CachedNode> = Api::all(fake.client());
    let stream = watcher(api, watcher::Config::default()).reflect(writer).applied_objects();
    let ctx = Arc::new(Context::new(
        fake.client(),
        cloud.clone(),
        Metrics::shared(),
        Networking::default(),
        reader.clone(),
    ));
    let controller = Controller::for_stream(stream, reader)
        .with_config(kube::runtime::controller::Config::default().concurrency(4))
        .run(node::reconcile, node::error_policy, ctx)
        .for_each(|_| async {});
    let running = tokio::spawn(controller);
    let done = async {
        loop {
            let nodes = fake.list("v1", "nodes");
            if nodes.iter().all(|n| !tainted(n)) {
                return nodes;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let nodes = tokio::time::timeout(Duration::from_secs(20), done)
        .await
        .expect("every node initialized within 20 s");
    running.abort();
    for n in &nodes {
        let name = n["metadata"]["name"].as_str().unwrap();
        assert_eq!(n["spec"]["providerID"], format!("openstack:///id-{name}"), "{n}");
        assert_eq!(n["status"]["addresses"][0]["type"], "InternalIP", "{n}");
        assert_eq!(n["metadata"]["labels"]["node.kubernetes.io/instance-type"], "m1.small");
    }
    let mut calls = cloud.calls();
    calls.sort();
    calls
}

fn tainted(node: &Value) -> bool {
    let taints = node["spec"]["taints"].as_array().cloned().unwrap_or_default();
    taints.iter().any(|t| t["key"] == UNINITIALIZED_TAINT)
}

#[tokio::test]
async fn many_tainted_nodes_are_found_with_one_server_list_and_one_port_list() {
    let fake = FakeApiServer::start().await.unwrap();
    let cloud = cluster(&fake, BATCH_FROM);
    assert_eq!(initialize_all(&fake, cloud).await, ["ports", "servers"]);
}

#[tokio::test]
async fn fewer_tainted_nodes_are_looked_up_one_by_one() {
    let fake = FakeApiServer::start().await.unwrap();
    let cloud = cluster(&fake, BATCH_FROM - 1);
    let calls = initialize_all(&fake, cloud).await;
    assert_eq!(calls.len(), BATCH_FROM - 1, "{calls:?}");
    assert!(calls.iter().all(|c| c.starts_with("Id(") || c.starts_with("Name(")), "{calls:?}");
}

#[tokio::test]
async fn a_server_the_lists_cannot_answer_for_is_looked_up_on_its_own() {
    let fake = FakeApiServer::start().await.unwrap();
    let cloud = cluster(&fake, BATCH_FROM);
    {
        let mut servers = cloud.instances.lock().unwrap();
        // A Nova before 2.47: the flavor's name is not in the server body.
        servers[1].server.flavor.original_name = None;
        // Two servers of one name: left to the lookup (refused as ambiguous by OpenStack; the
        // fake takes the first).
        let mut twin = instance("n-02", "10.0.0.99", "ACTIVE");
        twin.server.id = "id-n-02-twin".into();
        servers.push(twin);
    }
    let calls = initialize_all(&fake, cloud).await;
    assert_eq!(calls, ["Name(\"n-01\")", "Name(\"n-02\")", "ports", "servers"]);
}

#[tokio::test]
async fn a_failed_list_leaves_each_node_to_its_own_lookup_and_is_not_asked_again() {
    let fake = FakeApiServer::start().await.unwrap();
    let cloud = cluster(&fake, BATCH_FROM);
    *cloud.list_failure.lock().unwrap() = Some(CloudError::NotConnected { reason: "503".into() });
    let calls = initialize_all(&fake, cloud).await;
    assert_eq!(calls.iter().filter(|c| *c == "servers").count(), 1, "{calls:?}");
    assert_eq!(calls.len(), 1 + BATCH_FROM, "{calls:?}");
}
