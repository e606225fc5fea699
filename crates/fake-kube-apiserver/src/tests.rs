use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use super::FakeApiServer;

fn node(name: &str) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {}})).unwrap()
}

#[tokio::test]
async fn kube_rs_creates_gets_lists_patches_and_deletes_nodes() {
    let fake = FakeApiServer::start().await.unwrap();
    let nodes: Api<Node> = Api::all(fake.client());
    let created = nodes.create(&PostParams::default(), &node("n1")).await.unwrap();
    assert_eq!(created.metadata.resource_version.as_deref(), Some("1"));
    let err = nodes.create(&PostParams::default(), &node("n1")).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 409), "{err:?}");
    let patch = json!({"spec": {"providerID": "openstack:///x"}});
    let patched = nodes.patch("n1", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.spec.unwrap().provider_id.as_deref(), Some("openstack:///x"));
    let status = json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}});
    let patched =
        nodes.patch_status("n1", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    assert_eq!(patched.status.unwrap().addresses.unwrap()[0].address, "10.0.0.1");
    let list = nodes.list(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("3"));
    let mut stale = nodes.get("n1").await.unwrap();
    stale.metadata.resource_version = Some("1".into());
    let err = nodes.replace("n1", &PostParams::default(), &stale).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );
    nodes.delete("n1", &DeleteParams::default()).await.unwrap();
    let err = nodes.get("n1").await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 404), "{err:?}");
    assert!(nodes.get_opt("n1").await.unwrap().is_none());
}

#[tokio::test]
async fn kube_runtime_watcher_sees_the_initial_list_and_later_changes() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "a"}}));
    let nodes: Api<Node> = Api::all(fake.client());
    let mut stream = watcher(nodes, watcher::Config::default()).boxed();
    let mut seen = Vec::new();
    let wait = async {
        while let Some(event) = stream.try_next().await.unwrap() {
            match event {
                watcher::Event::InitApply(n) | watcher::Event::Apply(n) => {
                    seen.push(format!("apply {}", n.metadata.name.unwrap()));
                }
                watcher::Event::Delete(n) => {
                    seen.push(format!("delete {}", n.metadata.name.unwrap()))
                }
                watcher::Event::InitDone => {
                    seen.push("init-done".into());
                    fake.create("v1", "nodes", "", json!({"metadata": {"name": "b"}}));
                    fake.delete("v1", "nodes", "", "a");
                }
                watcher::Event::Init => {}
            }
            if seen.len() == 4 {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap();
    assert_eq!(seen, ["apply a", "init-done", "apply b", "delete a"]);
}

#[tokio::test]
async fn watch_from_a_resource_version_replays_only_newer_events() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "a"}}));
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "b"}}));
    let url = format!("{}/api/v1/nodes?watch=true&resourceVersion=1&timeoutSeconds=1", fake.url());
    let body = reqwest::get(url).await.unwrap().text().await.unwrap();
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 1, "{body}");
    assert!(lines[0].contains(r#""type":"ADDED""#) && lines[0].contains(r#""name":"b""#));
}

#[tokio::test]
async fn unsupported_patch_types_are_refused_with_415() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "a"}}));
    let nodes: Api<Node> = Api::all(fake.client());
    let err = nodes
        .patch(
            "a",
            &PatchParams::apply("x"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Node"})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 415), "{err:?}");
}
