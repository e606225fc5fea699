//! A wire-level fake Kubernetes API server, for tests and for kubectl: the library serves it
//! in-process (`FakeApiServer::start`), the `fake-kube-apiserver` binary on an address.
//!
//! No kube-apiserver can be installed on this machine, so clients (kube-rs, kubectl, the
//! release controller binary) talk to this one over real HTTP on 127.0.0.1. Served, as the real
//! server does it:
//! - discovery: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}[/{version}]` for the kinds
//!   of [`discovery::KINDS`] (Nodes, Namespaces, Services and Pods with `status` subresources,
//!   Secrets, ConfigMaps, Endpoints, Events in `v1` and `events.k8s.io/v1`, Leases);
//! - list and get (`labelSelector`, `fieldSelector`, `limit` and `continue` pages, a `Table`
//!   for kubectl's default output),
//!   create (`generateName`), replace with resourceVersion preconditions (409), delete (with or
//!   without `DeleteOptions`), merge, strategic merge and JSON patches;
//! - finalizers: a delete only sets `deletionTimestamp`; the object goes when its last
//!   finalizer is removed; no finalizer may be added meanwhile (422);
//! - `metadata`'s finalizers, owner references, labels, annotations and managed fields left
//!   out when a write empties them (`omitempty`: no `[]` or `{}`);
//! - `?watch=true` streams from a resourceVersion, `BOOKMARK`s with `allowWatchBookmarks`, and
//!   `410 Expired` for a resourceVersion older than the kept history;
//! - `Status` bodies for every error (404, 405, 409, 410, 415, 422).
//!
//! Not served: server-side apply (415), authentication and authorization (every request is
//! allowed, except those a test refuses with [`FakeApiServer::refuse`]: 403), admission
//! and defaulting, validation beyond names, OpenAPI documents (use `kubectl --validate=false`),
//! aggregated discovery, protobuf. Paths of kinds it does not list still store and return
//! JSON, so tests of other kinds keep working.

pub mod discovery;
mod handler;
mod page;
mod patch;
mod selector;
mod store;
mod target;
mod watch;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use serde_json::{Value, json};
use tokio::sync::broadcast;

pub use store::{Event, Failure, ObjectKey, PatchType, Resource, Store};

use handler::handle;

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The query string.
    pub query: String,
    /// Content-Type, if any.
    pub content_type: Option<String>,
    /// The body (JSON text or empty).
    pub body: String,
}

/// How the server behaves.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How many changes are kept for watches; a watch from an older resourceVersion gets 410.
    pub history: usize,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { history: 10_000, bookmark_interval: Duration::from_secs(1) }
    }
}

struct Shared {
    store: Mutex<Store>,
    events: broadcast::Sender<Arc<Event>>,
    /// Bumped to end every open watch.
    restarts: tokio::sync::watch::Sender<u64>,
    requests: Mutex<Vec<Request>>,
    bookmark_interval: Duration,
    /// `(method, path fragment)` pairs answered 403, as RBAC answers a missing grant.
    refused: Mutex<Vec<(String, String)>>,
}

/// A running fake API server; dropping it does not stop the task (the runtime ends it).
#[derive(Clone)]
pub struct FakeApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl FakeApiServer {
    /// Starts the server on 127.0.0.1 with a free port.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(Options::default()).await
    }

    /// Starts the server on 127.0.0.1 with a free port and `options`.
    pub async fn start_with(options: Options) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let (server, run) = Self::serve(listener, options)?;
        tokio::spawn(async move {
            // Runs until the runtime stops; an accept error ends the test visibly.
            let _ = run.await;
        });
        Ok(server)
    }

    /// Serves on `listener` with `options`; the future runs the server until it is dropped
    /// (the binary awaits it next to its signal handler; [`FakeApiServer::start`] spawns it).
    pub fn serve(
        listener: tokio::net::TcpListener,
        options: Options,
    ) -> std::io::Result<(Self, impl Future<Output = std::io::Result<()>> + Send)> {
        let addr = listener.local_addr()?;
        let (events, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::with_history(options.history)),
            events,
            restarts: tokio::sync::watch::Sender::new(0),
            requests: Mutex::new(Vec::new()),
            bookmark_interval: options.bookmark_interval,
            refused: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let server = FakeApiServer { addr, shared };
        let run = async move { axum::serve(listener, app).await };
        Ok((server, run))
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client talking to this server.
    pub fn client(&self) -> kube::Client {
        let url = self.url().parse().expect("the fake's URL is valid");
        let config = kube::Config::new(url);
        kube::Client::try_from(config).expect("a plain-HTTP kube client builds")
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Answers 403 Forbidden (as the real server's RBAC does) to every `method` request whose
    /// path contains `path`, until [`FakeApiServer::allow_all`].
    pub fn refuse(&self, method: &str, path: &str) {
        let mut refused = self.shared.refused.lock().unwrap_or_else(PoisonError::into_inner);
        refused.push((method.to_owned(), path.to_owned()));
    }

    /// Stops refusing anything.
    pub fn allow_all(&self) {
        self.shared.refused.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// Requests that changed something (not GET).
    pub fn writes(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.method != "GET").collect()
    }

    /// Creates an object directly (as another client would).
    pub fn create(&self, api_version: &str, plural: &str, namespace: &str, object: Value) -> Value {
        let resource = Resource { api_version: api_version.into(), plural: plural.into() };
        self.change(|store| store.create(&resource, namespace, object)).expect("fixture is created")
    }

    /// Merge-patches an object directly (its `status` through the status subresource).
    pub fn patch(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Value {
        let key = key(api_version, plural, namespace, name);
        self.change(|store| {
            let patched = store.patch(&key, PatchType::Merge, &patch, false)?;
            match patch.get("status") {
                Some(status) => {
                    store.patch(&key, PatchType::Merge, &json!({"status": status}), true)
                }
                None => Ok(patched),
            }
        })
        .expect("fixture patch applies")
    }

    /// One object, if it exists.
    pub fn get(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        self.lock().get(&key(api_version, plural, namespace, name)).ok()
    }

    /// Deletes an object directly (with finalizers: marks it).
    pub fn delete(&self, api_version: &str, plural: &str, namespace: &str, name: &str) {
        let key = key(api_version, plural, namespace, name);
        let _ = self.change(|store| store.delete(&key));
    }

    /// Objects of one resource in all namespaces.
    pub fn list(&self, api_version: &str, plural: &str) -> Vec<Value> {
        let resource = Resource { api_version: api_version.into(), plural: plural.into() };
        self.lock().list(&resource, None)
    }

    /// Ends every open watch and forgets the change history, as an API server restarting
    /// after an etcd compaction does: a watch resumed from an earlier resourceVersion gets
    /// `410 Expired` (clients must relist).
    pub fn compact(&self) {
        let mut store = self.lock();
        self.shared.restarts.send_modify(|generation| *generation += 1);
        store.compact();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.shared.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn change(
        &self,
        f: impl FnOnce(&mut Store) -> Result<Value, Failure>,
    ) -> Result<Value, Failure> {
        let mut store = self.lock();
        let before = store.rv();
        let result = f(&mut store);
        publish(&self.shared, &store, before);
        result
    }
}

fn key(api_version: &str, plural: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        resource: Resource { api_version: api_version.into(), plural: plural.into() },
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// Broadcasts the log entries newer than `after` (called with the store locked, so watches
/// started under the same lock see each event exactly once).
fn publish(shared: &Shared, store: &Store, after: u64) {
    let newer = store.log.partition_point(|e| e.rv <= after);
    for event in store.log.range(newer..) {
        let _ = shared.events.send(event.clone());
    }
}

#[cfg(test)]
mod tests;
