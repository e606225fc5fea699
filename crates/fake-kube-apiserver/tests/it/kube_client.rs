//! The kube crate's client and watcher against the in-process server.

use std::time::Duration;

use fake_kube_apiserver::{FakeApiServer, Options};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_service_with_a_finalizer_is_marked_on_delete_and_goes_with_the_last_finalizer() {
    let fake = FakeApiServer::start().await.unwrap();
    let services: Api<Service> = Api::namespaced(fake.client(), "web");
    fake.create(
        "v1",
        "services",
        "web",
        json!({"metadata": {"name": "lb",
        "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]},
        "spec": {"type": "LoadBalancer"}}),
    );
    services.delete("lb", &DeleteParams::default()).await.unwrap();
    let marked = services.get("lb").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    let add =
        json!({"metadata": {"finalizers": ["service.kubernetes.io/load-balancer-cleanup", "x"]}});
    let err = services.patch("lb", &PatchParams::default(), &Patch::Merge(&add)).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 422), "{err:?}");
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}});
    let ignored =
        services.patch("lb", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    assert!(ignored.status.and_then(|s| s.load_balancer).and_then(|l| l.ingress).is_none());
    // The last finalizer removed with a JSON patch (RFC 6902), over plain HTTP.
    let done = json!([{"op": "test", "path": "/metadata/finalizers/0",
                       "value": "service.kubernetes.io/load-balancer-cleanup"},
                      {"op": "remove", "path": "/metadata/finalizers/0"}]);
    let response = reqwest::Client::new()
        .patch(format!("{}/api/v1/namespaces/web/services/lb", fake.url()))
        .header("content-type", "application/json-patch+json")
        .body(done.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(services.get_opt("lb").await.unwrap().is_none());
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let fake = FakeApiServer::start().await.unwrap();
    for (name, pool) in [("a", "web"), ("b", "db"), ("c", "web")] {
        fake.create(
            "v1",
            "nodes",
            "",
            json!({"metadata": {"name": name, "labels": {"pool": pool}}}),
        );
    }
    let nodes: Api<Node> = Api::all(fake.client());
    let names = |list: kube::api::ObjectList<Node>| -> Vec<String> {
        list.items.into_iter().map(|n| n.metadata.name.unwrap()).collect()
    };
    let web = nodes.list(&ListParams::default().labels("pool in (web)")).await.unwrap();
    assert_eq!(names(web), ["a", "c"]);
    let not_a = ListParams::default().labels("pool=web").fields("metadata.name!=a");
    assert_eq!(names(nodes.list(&not_a).await.unwrap()), ["c"]);
}

#[tokio::test]
async fn watches_get_bookmarks_when_they_ask() {
    let fake = FakeApiServer::start_with(Options {
        bookmark_interval: Duration::from_millis(100),
        ..Options::default()
    })
    .await
    .unwrap();
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "a"}}));
    let url = format!(
        "{}/api/v1/nodes?watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1",
        fake.url()
    );
    let body = tokio::time::timeout(WAIT, async { reqwest::get(url).await?.text().await })
        .await
        .expect("the watch ends after timeoutSeconds")
        .unwrap();
    let lines: Vec<serde_json::Value> =
        body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["type"], "BOOKMARK", "{body}");
    assert_eq!(lines[0]["object"]["metadata"]["resourceVersion"], "1");
    assert_eq!(lines[0]["object"]["kind"], "Node");
    assert!(lines.len() >= 3, "periodic bookmarks: {body}");
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_gets_410_and_the_watcher_relists() {
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "a"}}));
    fake.create("v1", "nodes", "", json!({"metadata": {"name": "b"}}));
    fake.compact();
    let url = format!("{}/api/v1/nodes?watch=true&resourceVersion=1", fake.url());
    let body = tokio::time::timeout(WAIT, async {
        let response = reqwest::get(url).await?;
        response.text().await
    })
    .await
    .expect("an expired watch ends at once")
    .unwrap();
    let event: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(
        (event["type"].as_str(), event["object"]["code"].as_u64()),
        (Some("ERROR"), Some(410))
    );
    assert_eq!(event["object"]["reason"], "Expired");

    // kube's watcher: once it has listed, the server "restarts" (its watches end, its history
    // is compacted) and a node is created meanwhile; the resumed watch gets 410, the watcher
    // relists (a second Init) and so sees the node.
    let nodes: Api<Node> = Api::all(fake.client());
    let mut stream = watcher(nodes, watcher::Config::default()).boxed();
    let (mut inits, mut expired) = (0, 0);
    let seen_c = async {
        while let Some(event) = stream.next().await {
            // kube's watcher reports the 410 as an error item, then relists on the next poll.
            let event = match event {
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    expired += 1;
                    continue;
                }
                other => other.unwrap(),
            };
            match event {
                watcher::Event::Init => inits += 1,
                watcher::Event::InitDone if inits == 1 => {
                    fake.compact();
                    fake.create("v1", "nodes", "", json!({"metadata": {"name": "between"}}));
                    fake.compact();
                }
                watcher::Event::InitApply(n) | watcher::Event::Apply(n)
                    if n.metadata.name.as_deref() == Some("between") =>
                {
                    return;
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(WAIT, seen_c).await.expect("the watcher relisted after 410");
    assert_eq!((inits, expired), (2, 1), "the node came through a relist after one 410");
}
