//! The API behaviour the controller relies on, as one set of checks run against the fake (plain
//! HTTP, in-process) and against the real kube-apiserver of scripts/kube-up.sh (HTTPS, the
//! admin kubeconfig): the same code for both, so that where the fake drifts from the real
//! server, its test fails. Where the two differ in ways the controller does not rely on (the
//! order of a strategic merge's list, the 410's cause), the checks accept both; one difference
//! is asserted as such (a watch from version 0 with bookmarks); the fake crate's README lists
//! them.
//!
//! Each check works in the namespace of its [`Server`] and on Nodes named after it (deleted on
//! drop, also when a check fails).

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::Status;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::{Value, json};

/// How long a watch or a wait in a check may take.
const WAIT: Duration = Duration::from_secs(20);

/// A server the checks run against.
pub(crate) struct Server {
    pub(crate) client: kube::Client,
    /// The namespace the checks work in (it exists).
    pub(crate) namespace: String,
    /// A prefix for cluster-scoped names (Nodes), unique to this run.
    pub(crate) prefix: String,
    /// A namespaced resource (group, version, plural) and a resourceVersion too old to watch it
    /// from: the fake's history compacted, the real server's watch cache started after it.
    pub(crate) expired: (ApiResource, String),
    /// kube-up.sh's kube-apiserver (on etcd 3.4), not the fake: the one difference the checks
    /// assert as such ([`a_watch_from_zero_with_bookmarks`]).
    pub(crate) real: bool,
}

/// Every check, in turn.
pub(crate) async fn run_all(server: &Server) {
    errors_are_status_objects(server).await;
    selectors_filter_lists(server).await;
    a_watch_resumes_from_a_list_resource_version(server).await;
    a_too_old_resource_version_is_410_expired(server).await;
    a_watch_from_zero_with_bookmarks(server).await;
    stale_writes_conflict(server).await;
    json_patch_tests_guard_the_change(server).await;
    node_status_writes_end_as_the_controller_means(server).await;
    finalizers_keep_a_deleted_object_until_the_last_goes(server).await;
    emptied_metadata_lists_and_maps_are_left_out(server).await;
    leases_conflict_on_create_and_stale_update(server).await;
    events_are_recorded(server).await;
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error (a Status body), got {other:?}"),
    }
}

fn assert_status(e: &Status, code: u16, reason: &str) {
    assert_eq!((e.code, e.reason.as_str()), (code, reason), "{e:?}");
    assert!(e.is_failure(), "a Status of a failure says so: {e:?}");
    assert!(!e.message.is_empty(), "a Status has a message: {e:?}");
}

fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

async fn errors_are_status_objects(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    assert_status(&api_error(maps.get("no-such-map").await), 404, "NotFound");
    let bad = config_map("Not_A_Name", json!({}));
    assert_status(&api_error(maps.create(&PostParams::default(), &bad).await), 422, "Invalid");
    maps.create(&PostParams::default(), &config_map("twice", json!({}))).await.unwrap();
    let again = maps.create(&PostParams::default(), &config_map("twice", json!({}))).await;
    assert_status(&api_error(again), 409, "AlreadyExists");
}

async fn selectors_filter_lists(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    for (name, pool) in [("sel-a", "web"), ("sel-b", "db"), ("sel-c", "web")] {
        maps.create(&PostParams::default(), &config_map(name, json!({"pool": pool})))
            .await
            .unwrap();
    }
    let names = |list: kube::api::ObjectList<ConfigMap>| -> Vec<String> {
        list.items.into_iter().map(|n| n.metadata.name.unwrap()).collect()
    };
    let web = ListParams::default().labels("pool in (web)");
    assert_eq!(names(maps.list(&web).await.unwrap()), ["sel-a", "sel-c"]);
    let not_a = ListParams::default().labels("pool=web").fields("metadata.name!=sel-a");
    assert_eq!(names(maps.list(&not_a).await.unwrap()), ["sel-c"]);
    // The Secret watcher's selector: one object by name.
    let by_name = ListParams::default().fields("metadata.name=sel-b");
    assert_eq!(names(maps.list(&by_name).await.unwrap()), ["sel-b"]);
    let paged = maps.list(&ListParams::default().labels("pool").limit(2)).await.unwrap();
    assert_eq!(paged.items.len(), 2);
    let rest = ListParams::default()
        .labels("pool")
        .limit(2)
        .continue_token(paged.metadata.continue_.as_deref().expect("a continue token"));
    assert_eq!(names(maps.list(&rest).await.unwrap()), ["sel-c"]);
}

/// The events of a watch until `done` holds of them (bounded).
async fn watch_until(
    stream: impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>>,
    done: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let mut stream = std::pin::pin!(stream);
    let mut seen = Vec::new();
    let read = async {
        while let Some(event) = stream.try_next().await.unwrap() {
            let entry = match event {
                WatchEvent::Added(m) => ("ADDED", m.metadata.name.unwrap()),
                WatchEvent::Modified(m) => ("MODIFIED", m.metadata.name.unwrap()),
                WatchEvent::Deleted(m) => ("DELETED", m.metadata.name.unwrap()),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("watch error {e:?}"),
            };
            seen.push((entry.0.to_owned(), entry.1));
            if done(&seen) {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, read).await.unwrap_or_else(|_| panic!("watch saw only {seen:?}"));
    seen
}

async fn a_watch_resumes_from_a_list_resource_version(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    let listed = maps.list(&ListParams::default()).await.unwrap();
    let rv = listed.metadata.resource_version.expect("a list has a resourceVersion");
    maps.create(&PostParams::default(), &config_map("watched", json!({}))).await.unwrap();
    maps.create(&PostParams::default(), &config_map("unwatched", json!({}))).await.unwrap();
    let patch = json!({"data": {"k": "changed"}});
    maps.patch("watched", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    // From the list's version, one object by name, with bookmarks allowed (kube's watcher
    // asks for them): the changes after the list, in order, and nothing of other objects.
    let params = WatchParams::default().fields("metadata.name=watched").timeout(10);
    let stream = maps.watch(&params, &rv).await.unwrap();
    let seen = watch_until(stream, |seen| seen.len() == 2).await;
    let want = [("ADDED", "watched"), ("MODIFIED", "watched")].map(|(t, n)| (t.into(), n.into()));
    assert_eq!(seen, want);
}

async fn a_too_old_resource_version_is_410_expired(server: &Server) {
    let (resource, rv) = &server.expired;
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.client.clone(), &server.namespace, resource);
    let stream = api.watch(&WatchParams::default().timeout(5), rv).await.unwrap();
    let mut stream = std::pin::pin!(stream);
    let first = tokio::time::timeout(WAIT, stream.next()).await.expect("an expired watch answers");
    match first {
        // The real server and the fake both answer 200 and one ERROR event (kube's watcher
        // relists on it).
        Some(Ok(WatchEvent::Error(e))) => {
            assert_status(&e, 410, "Expired");
            assert!(e.message.starts_with("too old resource version"), "{e:?}");
        }
        other => panic!("expected an ERROR event with 410 Expired, got {other:?}"),
    }
}

/// The documented difference (README): from version 0 with bookmarks allowed, the real server on
/// etcd 3.4 answers one ERROR event, 500; the fake sends the current objects. The controller
/// never asks for it (kube's watcher watches from a list's version).
async fn a_watch_from_zero_with_bookmarks(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    maps.create(&PostParams::default(), &config_map("from-zero", json!({}))).await.unwrap();
    let params = WatchParams::default().fields("metadata.name=from-zero").timeout(5);
    assert!(params.bookmarks, "kube asks for bookmarks by default");
    let stream = maps.watch(&params, "0").await.unwrap();
    let mut stream = std::pin::pin!(stream);
    let first = tokio::time::timeout(WAIT, stream.next()).await.expect("the watch answers");
    match (server.real, first) {
        (true, Some(Ok(WatchEvent::Error(e)))) => {
            assert_eq!(e.code, 500, "{e:?}");
            assert!(e.message.contains("RequestWatchProgress"), "{e:?}");
        }
        (false, Some(Ok(WatchEvent::Added(m)))) => {
            assert_eq!(m.metadata.name.as_deref(), Some("from-zero"));
        }
        (real, other) => panic!("real={real}: not the documented answer: {other:?}"),
    }
}

async fn stale_writes_conflict(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    let old = maps.create(&PostParams::default(), &config_map("stale", json!({}))).await.unwrap();
    let patch = json!({"data": {"k": "newer"}});
    maps.patch("stale", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let conflict = api_error(maps.replace("stale", &PostParams::default(), &old).await);
    assert_status(&conflict, 409, "Conflict");
    assert!(conflict.message.contains("the object has been modified"), "{conflict:?}");
    // A merge patch carrying the stale resourceVersion (the taint writes do this) conflicts too.
    let rv = old.metadata.resource_version.unwrap();
    let guarded = json!({"metadata": {"resourceVersion": rv}, "data": {"k": "lost"}});
    let result = maps.patch("stale", &PatchParams::default(), &Patch::Merge(&guarded)).await;
    assert_status(&api_error(result), 409, "Conflict");
    assert_eq!(maps.get("stale").await.unwrap().data.unwrap()["k"], "newer");
}

async fn json_patch_tests_guard_the_change(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    let mut map = config_map("tested", json!({}));
    map.metadata.annotations = Some([("example.com/id".to_owned(), "one".to_owned())].into());
    maps.create(&PostParams::default(), &map).await.unwrap();
    let ops = |value: &str| -> Patch<()> {
        let path = "/metadata/annotations/example.com~1id";
        let ops =
            json!([{"op": "test", "path": path, "value": value}, {"op": "remove", "path": path}]);
        Patch::Json(serde_json::from_value(ops).unwrap())
    };
    let failed = maps.patch("tested", &PatchParams::default(), &ops("two")).await;
    assert_status(&api_error(failed), 422, "Invalid");
    let kept = maps.get("tested").await.unwrap().metadata.annotations.unwrap();
    assert_eq!(kept["example.com/id"], "one");
    let done = maps.patch("tested", &PatchParams::default(), &ops("one")).await.unwrap();
    assert!(done.metadata.annotations.unwrap_or_default().is_empty());
}

/// A Node deleted when dropped.
struct NodeGuard {
    api: Api<Node>,
    name: String,
}

impl Drop for NodeGuard {
    fn drop(&mut self) {
        let (api, name) = (self.api.clone(), self.name.clone());
        // Dropped on the test's runtime (multi-threaded: the client's tasks and the fake go on
        // running): delete from a thread of its own, and wait for it.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async { api.delete(&name, &DeleteParams::default()).await.map(drop) })
        })
        .join();
    }
}

async fn node_status_writes_end_as_the_controller_means(server: &Server) {
    let nodes: Api<Node> = Api::all(server.client.clone());
    let name = format!("{}-status", server.prefix);
    let guard = NodeGuard { api: nodes.clone(), name: name.clone() };
    let node = serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized",
                             "value": "true", "effect": "NoSchedule"}]}}))
    .unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let status = |n: &Node| serde_json::to_value(n.status.clone().unwrap_or_default()).unwrap();

    // The addresses, as node::patch_addresses writes them: a JSON merge patch replaces the
    // whole list, two addresses of one type included (a strategic merge keyed by type would
    // merge them: the upstream pitfall).
    let addresses = json!([{"type": "InternalIP", "address": "192.0.2.10"},
                           {"type": "InternalIP", "address": "192.0.2.11"},
                           {"type": "Hostname", "address": name}]);
    let patch = json!({"status": {"addresses": addresses}});
    let written =
        nodes.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(status(&written)["addresses"], addresses);
    let fewer = json!([{"type": "InternalIP", "address": "192.0.2.11"}]);
    let patch = json!({"status": {"addresses": fewer}});
    let written =
        nodes.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(status(&written)["addresses"], fewer, "a merge patch replaces the list");

    // The conditions, as the route controller writes NetworkUnavailable: a strategic merge
    // keyed by type, which keeps the other conditions and replaces its own.
    let condition = |kind: &str, value: &str, reason: &str| {
        json!({"type": kind, "status": value, "reason": reason, "message": reason,
               "lastTransitionTime": "2026-01-01T00:00:00Z",
               "lastHeartbeatTime": "2026-01-01T00:00:00Z"})
    };
    let ready = json!({"status": {"conditions": [condition("Ready", "False", "Starting")]}});
    nodes.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&ready)).await.unwrap();
    for value in ["True", "False"] {
        let patch = json!({"status": {"conditions":
            [condition("NetworkUnavailable", value, "RouteCreated")]}});
        let written = nodes
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
            .unwrap();
        let conditions = status(&written)["conditions"].clone();
        // In any order (the real server puts the patch's first).
        let mut kinds: Vec<_> =
            conditions.as_array().unwrap().iter().map(|c| (&c["type"], &c["status"])).collect();
        kinds.sort_by_key(|(kind, _)| kind.as_str());
        assert_eq!(
            kinds,
            [(&json!("NetworkUnavailable"), &json!(value)), (&json!("Ready"), &json!("False"))],
            "{conditions}"
        );
    }

    // The status subresource ignores spec; the main resource ignores status.
    let both = json!({"spec": {"providerID": "openstack:///x"},
                      "status": {"addresses": [{"type": "InternalIP", "address": "192.0.2.99"}]}});
    let written =
        nodes.patch_status(&name, &PatchParams::default(), &Patch::Merge(&both)).await.unwrap();
    assert_eq!(written.spec.unwrap().provider_id, None);
    let written = nodes.patch(&name, &PatchParams::default(), &Patch::Merge(&both)).await.unwrap();
    assert_eq!(status(&written)["addresses"][0]["address"], "192.0.2.99");
    assert_eq!(written.spec.unwrap().provider_id.as_deref(), Some("openstack:///x"));
    drop(guard);
}

async fn finalizers_keep_a_deleted_object_until_the_last_goes(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    let mut map = config_map("finalized", json!({}));
    map.metadata.finalizers = Some(vec!["example.com/cleanup".to_owned()]);
    maps.create(&PostParams::default(), &map).await.unwrap();
    maps.delete("finalized", &DeleteParams::default()).await.unwrap();
    let marked = maps.get("finalized").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some(), "{marked:?}");
    let more = json!({"metadata": {"finalizers": ["example.com/cleanup", "example.com/more"]}});
    let added = maps.patch("finalized", &PatchParams::default(), &Patch::Merge(&more)).await;
    assert_status(&api_error(added), 422, "Invalid");
    // Other changes are still allowed while it waits.
    let data = json!({"data": {"k": "still"}});
    maps.patch("finalized", &PatchParams::default(), &Patch::Merge(&data)).await.unwrap();
    // The service controller's last write: the finalizer list without ours, guarded by rv.
    let rv = maps.get("finalized").await.unwrap().metadata.resource_version;
    let last = json!({"metadata": {"finalizers": [], "resourceVersion": rv}});
    maps.patch("finalized", &PatchParams::default(), &Patch::Merge(&last)).await.unwrap();
    let gone = async {
        while maps.get_opt("finalized").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(WAIT, gone).await.expect("the object goes with its last finalizer");
}

/// `ObjectMeta` is serialized with `omitempty`: the last finalizer removed by a JSON patch, the
/// last label by a merge patch, and the object has no `finalizers` and no `labels` (not `[]`,
/// not `{}`), which a client reading the raw object sees.
async fn emptied_metadata_lists_and_maps_are_left_out(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    let mut map = config_map("emptied", json!({"x": "1"}));
    map.metadata.finalizers = Some(vec!["example.com/keep".to_owned()]);
    maps.create(&PostParams::default(), &map).await.unwrap();
    let ops = json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/keep"},
        {"op": "remove", "path": "/metadata/finalizers/0"}]);
    let patch: Patch<()> = Patch::Json(serde_json::from_value(ops).unwrap());
    maps.patch("emptied", &PatchParams::default(), &patch).await.unwrap();
    let unlabel = json!({"metadata": {"labels": {"x": null}}});
    maps.patch("emptied", &PatchParams::default(), &Patch::Merge(&unlabel)).await.unwrap();
    let raw: Api<kube::api::DynamicObject> = Api::namespaced_with(
        server.client.clone(),
        &server.namespace,
        &kube::api::ApiResource::erase::<ConfigMap>(&()),
    );
    let got = serde_json::to_value(raw.get("emptied").await.unwrap()).unwrap();
    assert_eq!(got["metadata"].get("finalizers"), None, "{got}");
    assert_eq!(got["metadata"].get("labels"), None, "{got}");
    maps.delete("emptied", &DeleteParams::default()).await.unwrap();
}

async fn leases_conflict_on_create_and_stale_update(server: &Server) {
    let leases: Api<Lease> = Api::namespaced(server.client.clone(), &server.namespace);
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}))
    .unwrap();
    let first = leases.create(&PostParams::default(), &lease).await.unwrap();
    let second = leases.create(&PostParams::default(), &lease).await;
    assert_status(&api_error(second), 409, "AlreadyExists");
    let mut taken = first.clone();
    taken.spec.as_mut().unwrap().holder_identity = Some("b".to_owned());
    leases.replace("leader", &PostParams::default(), &taken).await.unwrap();
    let mut late = first;
    late.spec.as_mut().unwrap().holder_identity = Some("c".to_owned());
    let result = leases.replace("leader", &PostParams::default(), &late).await;
    assert_status(&api_error(result), 409, "Conflict");
    let holder = leases.get("leader").await.unwrap().spec.unwrap().holder_identity;
    assert_eq!(holder.as_deref(), Some("b"));
}

async fn events_are_recorded(server: &Server) {
    let maps: Api<ConfigMap> = Api::namespaced(server.client.clone(), &server.namespace);
    let map = maps.create(&PostParams::default(), &config_map("noted", json!({}))).await.unwrap();
    let reporter = Reporter { controller: "api-checks".into(), instance: Some("one".into()) };
    let recorder = Recorder::new(server.client.clone(), reporter);
    let event = Event {
        type_: EventType::Normal,
        reason: "Checked".into(),
        note: Some("an event of the API checks".into()),
        action: "Check".into(),
        secondary: None,
    };
    recorder.publish(&event, &kube::Resource::object_ref(&map, &())).await.unwrap();
    let gvk = GroupVersionKind::gvk("events.k8s.io", "v1", "Event");
    let events: Api<DynamicObject> = Api::namespaced_with(
        server.client.clone(),
        &server.namespace,
        &ApiResource::from_gvk_with_plural(&gvk, "events"),
    );
    let listed = events.list(&ListParams::default()).await.unwrap();
    let ours: Vec<_> = listed.items.iter().filter(|e| e.data["reason"] == "Checked").collect();
    assert_eq!(ours.len(), 1, "{listed:?}");
    assert_eq!(ours[0].data["regarding"]["name"], "noted");
    assert_eq!(ours[0].data["reportingController"], "api-checks");
}

/// The widgets of `group` (a custom resource on the real server; any path stores on the fake).
fn widgets(group: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", "Widget"), "widgets")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_passes_the_api_checks() {
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let resource = widgets("example.com");
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w"}});
    fake.create("example.com/v1", "widgets", "checks", widget);
    let rv = fake.get("example.com/v1", "widgets", "checks", "w").unwrap()["metadata"]
        ["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    fake.create("v1", "configmaps", "checks", json!({"metadata": {"name": "after"}}));
    fake.compact();
    let server = Server {
        client: fake.client(),
        namespace: "checks".into(),
        prefix: "checks".into(),
        expired: (resource, rv),
        real: false,
    };
    run_all(&server).await;
}

/// A CustomResourceDefinition of the real server, deleted when dropped.
struct Crd {
    stack: testkit::kube_stack::KubeStack,
    name: String,
}

impl Drop for Crd {
    fn drop(&mut self) {
        let mut cmd = self.stack.kubectl();
        cmd.args(["delete", "crd", &self.name, "--wait=false", "--ignore-not-found"]);
        let _ = testkit::cluster::run_bounded(cmd, None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn the_real_server_passes_the_api_checks() {
    let stack = testkit::kube_stack::KubeStack::load();
    let namespace = stack.namespace("api-checks");
    let path = std::path::PathBuf::from(&stack["KUBE_ADMIN_KUBECONFIG"]);
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    let client = kube::Client::try_from(config).unwrap();

    // A resourceVersion from before a new resource's watch cache started is too old for it.
    let before = stack.run(&["get", "--raw", "/api/v1/namespaces?limit=1"], None);
    let before: Value = serde_json::from_str(&before).unwrap();
    let rv = before["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let group = format!("{}.example.com", namespace.name);
    let crd = Crd { stack: stack.clone(), name: format!("widgets.{group}") };
    stack.create(
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": crd.name},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}})
        .to_string(),
    );
    stack.run(&["wait", "--for=condition=Established", "--timeout=60s", "crd", &crd.name], None);
    let resource = widgets(&group);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace.name, &resource);
    let served = async {
        while api.list(&ListParams::default()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(WAIT, served).await.expect("the custom resource is served");
    let server = Server {
        client,
        namespace: namespace.name.clone(),
        prefix: namespace.name.clone(),
        expired: (resource, rv),
        real: true,
    };
    run_all(&server).await;
    drop(crd);
}
