//! What the operator sees of the cluster: one watch per object it reads or writes, each
//! restricted by name (`fieldSelector=metadata.name=…`), so that nothing else of a namespace is
//! listed or cached. Every change publishes a new [`Snapshot`] that the controllers wait on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::watch;

/// One object, by kind, namespace (empty when cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`, empty for a cluster-scoped kind.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl Key {
    /// The key of `object` (its `apiVersion`, `kind`, `metadata.namespace` and `name`).
    pub fn of(object: &Value) -> Key {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Key {
            api_version: text(&object["apiVersion"]),
            kind: text(&object["kind"]),
            namespace: text(&object["metadata"]["namespace"]),
            name: text(&object["metadata"]["name"]),
        }
    }

    /// A key of a kind the operator knows.
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> Key {
        Key {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// `ConfigMap namespace/name`.
    pub fn config_map(namespace: &str, name: &str) -> Key {
        Key::new("v1", "ConfigMap", namespace, name)
    }

    /// `Secret namespace/name`.
    pub fn secret(namespace: &str, name: &str) -> Key {
        Key::new("v1", "Secret", namespace, name)
    }

    /// A cluster-scoped `config.openshift.io/v1` object (`Infrastructure`, `Proxy`, …).
    pub fn openshift_config(kind: &str, name: &str) -> Key {
        Key::new("config.openshift.io/v1", kind, "", name)
    }

    /// The API resource to call, when the kind is one the operator reads or writes.
    pub fn resource(&self) -> Option<ApiResource> {
        let plural = PLURALS.iter().find(|(kind, _)| *kind == self.kind)?.1;
        let (group, version) = match self.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", self.api_version.as_str()),
        };
        let gvk = GroupVersionKind::gvk(group, version, &self.kind);
        Some(ApiResource::from_gvk_with_plural(&gvk, plural))
    }

    /// The API to call for it.
    pub fn api(&self, client: &kube::Client) -> Option<Api<DynamicObject>> {
        let resource = self.resource()?;
        Some(match self.namespace.as_str() {
            "" => Api::all_with(client.clone(), &resource),
            namespace => Api::namespaced_with(client.clone(), namespace, &resource),
        })
    }

    /// `resource` name for `relatedObjects` and RBAC (`configmaps`).
    pub fn plural(&self) -> &'static str {
        PLURALS.iter().find(|(kind, _)| *kind == self.kind).map_or("", |(_, plural)| plural)
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version.split_once('/').map_or("", |(group, _)| group)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace.as_str() {
            "" => write!(f, "{} {}", self.kind, self.name),
            namespace => write!(f, "{} {namespace}/{}", self.kind, self.name),
        }
    }
}

/// The kinds the operator reads or writes, with their resource names.
const PLURALS: &[(&str, &str)] = &[
    ("ClusterOperator", "clusteroperators"),
    ("ClusterRole", "clusterroles"),
    ("ClusterRoleBinding", "clusterrolebindings"),
    ("ConfigMap", "configmaps"),
    ("DaemonSet", "daemonsets"),
    ("Deployment", "deployments"),
    ("Infrastructure", "infrastructures"),
    ("Namespace", "namespaces"),
    ("Network", "networks"),
    ("PodDisruptionBudget", "poddisruptionbudgets"),
    ("Proxy", "proxies"),
    ("Role", "roles"),
    ("RoleBinding", "rolebindings"),
    ("Secret", "secrets"),
    ("Service", "services"),
    ("ServiceAccount", "serviceaccounts"),
];

/// One watched object as last seen.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// Whether the watch has listed it once (until then, absent means "not known yet").
    pub synced: bool,
    /// The object, `None` when it does not exist.
    pub object: Option<Arc<Value>>,
    /// The watch's error while it fails, with when it started failing.
    pub failing: Option<(Instant, String)>,
}

/// Every watched object.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: BTreeMap<Key, Entry>,
}

/// What a reader finds for a key.
#[derive(Debug, Clone, Copy)]
pub enum Seen<'a> {
    /// Not listed yet (or not watched yet): wait.
    Unknown,
    /// Listed; `None` when it does not exist.
    Known(Option<&'a Value>),
}

impl Snapshot {
    /// The object at `key`.
    pub fn get(&self, key: &Key) -> Seen<'_> {
        match self.entries.get(key) {
            Some(entry) if entry.synced => Seen::Known(entry.object.as_deref()),
            _ => Seen::Unknown,
        }
    }

    /// The first failing watch among `keys`, with since when.
    pub fn failing<'a>(&'a self, keys: &[&Key]) -> Option<(&'a Key, Instant, &'a str)> {
        keys.iter().find_map(|key| {
            let (key, entry) = self.entries.get_key_value(key)?;
            entry.failing.as_ref().map(|(since, error)| (key, *since, error.as_str()))
        })
    }
}

/// The watches, and the snapshot they publish.
#[derive(Clone)]
pub struct World {
    client: kube::Client,
    sender: watch::Sender<Snapshot>,
    tasks: Arc<Mutex<BTreeMap<Key, tokio::task::JoinHandle<()>>>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").finish_non_exhaustive()
    }
}

impl World {
    /// No watch yet.
    pub fn new(client: kube::Client) -> World {
        World { client, sender: watch::Sender::new(Snapshot::default()), tasks: Arc::default() }
    }

    /// A receiver of every new snapshot.
    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.sender.subscribe()
    }

    /// Starts watching each of `keys` not watched yet (a kind the operator does not know is
    /// skipped: it never renders one).
    pub fn watch(&self, keys: impl IntoIterator<Item = Key>) {
        let mut tasks = self.tasks.lock().expect("the watch table is never poisoned");
        for key in keys {
            if tasks.contains_key(&key) {
                continue;
            }
            let Some(api) = key.api(&self.client) else {
                tracing::error!(object = %key, "no API resource known for this kind; not watched");
                continue;
            };
            self.sender.send_modify(|s| {
                s.entries.insert(key.clone(), Entry::default());
            });
            let task = tokio::spawn(follow(api, key.clone(), self.sender.clone()));
            tasks.insert(key, task);
        }
    }

    /// Records `object` as the latest version of what it is, as the API server answered a
    /// write of ours: the next pass sees it even before its watch event comes, and acts on
    /// what it wrote, not on the copy before (which would write again).
    pub fn saw(&self, object: Value) {
        let key = Key::of(&object);
        let object = Arc::new(object);
        self.sender.send_if_modified(|s| {
            let entry = s.entries.entry(key).or_default();
            if entry.object.as_ref().is_some_and(|old| !older(old, &object)) {
                return false;
            }
            entry.object = Some(object);
            entry.synced = true;
            true
        });
    }

    /// Stops every watch.
    pub fn stop(&self) {
        let mut tasks = self.tasks.lock().expect("the watch table is never poisoned");
        for (_, task) in std::mem::take(&mut *tasks) {
            task.abort();
        }
    }
}

/// Follows one object, publishing each change (with backoff on API errors).
async fn follow(api: Api<DynamicObject>, key: Key, sender: watch::Sender<Snapshot>) {
    let config = watcher::Config::default().fields(&format!("metadata.name={}", key.name));
    let set = |object: Option<Option<Arc<Value>>>, failing: Option<(Instant, String)>| {
        sender.send_if_modified(|s| {
            let entry = s.entries.entry(key.clone()).or_default();
            let mut changed = false;
            if let Some(object) = object {
                // A watch event older than what a write of ours already recorded is no news.
                let stale = matches!((&entry.object, &object), (Some(ours), Some(event)) if older(event, ours));
                if stale {
                    return false;
                }
                changed |= !entry.synced || entry.object != object;
                entry.synced = true;
                entry.object = object;
            }
            let was_failing = entry.failing.is_some();
            match failing {
                Some((at, error)) => {
                    if entry.failing.is_none() {
                        entry.failing = Some((at, error));
                        changed = true;
                    }
                }
                None => {
                    entry.failing = None;
                    changed |= was_failing;
                }
            }
            changed
        })
    };
    let mut backoff = WatchBackoff::default();
    loop {
        // A new watcher after each error: it lists first, so that the list (even of an
        // unchanged object) tells that the API server answers again. kube-runtime's own
        // watcher resumes a watch from its last version after an error, and a resumed watch of
        // an object nobody changes says nothing: the failure would never be seen to end.
        let mut events = std::pin::pin!(watcher(api.clone(), config.clone()));
        let mut listed: Option<Arc<Value>> = None;
        let error = loop {
            let event = match events.try_next().await {
                Ok(Some(event)) => event,
                Ok(None) => return,
                Err(error) => break error,
            };
            match event {
                watcher::Event::Init => listed = None,
                watcher::Event::InitApply(object) => listed = Some(to_value(&key, object)),
                watcher::Event::InitDone => {
                    set(Some(listed.take()), None);
                    kube::runtime::utils::Backoff::reset(&mut backoff);
                }
                watcher::Event::Apply(object) => {
                    set(Some(Some(to_value(&key, object))), None);
                }
                watcher::Event::Delete(_) => {
                    set(Some(None), None);
                }
            }
        };
        let text = ccm_tls_explain::chain(&error);
        tracing::warn!(object = %key, error = %text, "watch failed; listing again");
        set(None, Some((Instant::now(), text)));
        let delay = backoff.next().unwrap_or(WatchBackoff::MAX);
        tokio::time::sleep(delay).await;
    }
}

/// The wait before a failed watch is tried again: 0.5 s doubling to 5 s, not kube-runtime's
/// default 30 s, so that the operator sees the API server back within 5 s of an outage of any
/// length (one object's watch is one cheap request).
#[derive(Debug, Clone, Copy)]
struct WatchBackoff(Duration);

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(500);
    const MAX: Duration = Duration::from_secs(5);
}

impl Default for WatchBackoff {
    fn default() -> WatchBackoff {
        WatchBackoff(WatchBackoff::FIRST)
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.0;
        self.0 = (self.0 * 2).min(WatchBackoff::MAX);
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.0 = WatchBackoff::FIRST;
    }
}

/// Whether `a` is an older version of the object than `b` (by `resourceVersion`, which the API
/// server makes from etcd's revision: an integer; an unparsable one is never older).
fn older(a: &Value, b: &Value) -> bool {
    let version = |v: &Value| v["metadata"]["resourceVersion"].as_str()?.parse::<u64>().ok();
    let same_object = a["metadata"]["uid"] == b["metadata"]["uid"];
    matches!((version(a), version(b)), (Some(a), Some(b)) if same_object && a < b)
}

/// The object as JSON, with the `apiVersion` and `kind` a list's items come without.
fn to_value(key: &Key, object: DynamicObject) -> Arc<Value> {
    let mut value = serde_json::to_value(object).expect("an object from the API is JSON");
    value["apiVersion"] = Value::from(key.api_version.as_str());
    value["kind"] = Value::from(key.kind.as_str());
    Arc::new(value)
}
