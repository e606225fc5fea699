//! A wire-level fake Kubernetes API server (HTTP + JSON + chunked watch) for tests.
//!
//! No kube-apiserver can be installed on this machine, so tests run kube-rs against this
//! server over real HTTP on 127.0.0.1: list and get with resourceVersion, `?watch=true`
//! streams of `{"type","object"}` lines starting after the requested resourceVersion,
//! create / replace / delete, JSON merge patch and strategic merge patch (as a merge patch
//! plus `$patch` directives), status subresources, and 404/409/415 as `Status` objects.
//! Server-side apply is not implemented (415). Any resource path works; the kinds of
//! `nodes`, `secrets`, `events` and `leases` are named.

mod store;
mod watch;

use watch::{field_selector_matches, watch_response};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::broadcast;

pub use store::{Event, Failure, ObjectKey, Resource, Store};

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

struct Shared {
    store: Mutex<Store>,
    events: broadcast::Sender<Event>,
    requests: Mutex<Vec<Request>>,
}

/// A running fake API server; dropping it does not stop the task (the test runtime ends it).
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (events, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            events,
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        tokio::spawn(async move {
            // The server runs until the runtime stops; an accept error ends the test visibly.
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeApiServer { addr, shared })
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

    /// Requests that changed something (not GET).
    pub fn writes(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.method != "GET").collect()
    }

    /// Creates an object directly (as another client would).
    pub fn create(&self, api_version: &str, plural: &str, namespace: &str, object: Value) -> Value {
        let resource = Resource { api_version: api_version.into(), plural: plural.into() };
        let mut store = self.lock();
        let before = store.rv();
        let created =
            store.create(&resource, namespace, object).expect("fixture object is created");
        self.publish(&store, before);
        created
    }

    /// Merge-patches an object directly.
    pub fn patch(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Value {
        let key = key(api_version, plural, namespace, name);
        let mut store = self.lock();
        let before = store.rv();
        let patched = store.patch(&key, &patch, false).expect("fixture patch applies");
        let patched = match patch.get("status") {
            Some(status) => {
                store.patch(&key, &json!({"status": status}), true).expect("status patch applies")
            }
            None => patched,
        };
        self.publish(&store, before);
        patched
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

    /// Deletes an object directly.
    pub fn delete(&self, api_version: &str, plural: &str, namespace: &str, name: &str) {
        let mut store = self.lock();
        let before = store.rv();
        let _ = store.delete(&key(api_version, plural, namespace, name));
        self.publish(&store, before);
    }

    /// Objects of one resource in all namespaces.
    pub fn list(&self, api_version: &str, plural: &str) -> Vec<Value> {
        let resource = Resource { api_version: api_version.into(), plural: plural.into() };
        self.lock().list(&resource, None)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        self.shared.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, store: &Store, after: u64) {
        publish(&self.shared, store, after);
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
    for event in store.log.iter().filter(|e| e.rv > after) {
        let _ = shared.events.send(event.clone());
    }
}

/// The parsed path: `/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]` or `/apis/{g}/{v}/…`.
struct Target {
    resource: Resource,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn parse_path(path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ((*version).to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (plural, None, None),
        [plural, name] => (plural, Some(*name), None),
        [plural, name, sub] => (plural, Some(*name), Some(*sub)),
        _ => return None,
    };
    Some(Target {
        resource: Resource { api_version, plural: (*plural).to_owned() },
        namespace,
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
    })
}

fn json_response(code: u16, body: &Value) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

fn failure(f: &Failure) -> Response {
    json_response(f.code, &f.status())
}

fn bad(code: u16, reason: &'static str, message: impl Into<String>) -> Response {
    failure(&Failure { code, reason, message: message.into() })
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let content_type =
        headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    shared.requests.lock().unwrap_or_else(PoisonError::into_inner).push(Request {
        method: method.to_string(),
        path: uri.path().to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        content_type: content_type.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let Some(target) = parse_path(uri.path()) else {
        return bad(
            404,
            "NotFound",
            format!("the server could not find the requested resource {}", uri.path()),
        );
    };
    let namespace = target.namespace.clone().unwrap_or_default();
    let status_only = target.subresource.as_deref() == Some("status");
    if let Some(sub) = &target.subresource
        && sub != "status"
    {
        return bad(404, "NotFound", format!("subresource {sub} is not served by the fake"));
    }
    let parsed_body = || {
        serde_json::from_slice::<Value>(&body).map_err(|e| Failure {
            code: 400,
            reason: "BadRequest",
            message: e.to_string(),
        })
    };
    let mut store = shared.store.lock().unwrap_or_else(PoisonError::into_inner);
    let before = store.rv();
    let result = match (&method, &target.name) {
        (&Method::GET, None) => {
            let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
            if watch {
                return watch_response(&shared, &store, &target, &query);
            }
            let items: Vec<Value> = store
                .list(&target.resource, target.namespace.as_deref())
                .into_iter()
                .filter(|o| field_selector_matches(query.get("fieldSelector"), o))
                .collect();
            let list = json!({
                "kind": format!("{}List", target.resource.kind()),
                "apiVersion": target.resource.api_version,
                "metadata": {"resourceVersion": store.rv().to_string()},
                "items": items,
            });
            return json_response(200, &list);
        }
        (&Method::GET, Some(name)) => store.get(&key_of(&target, name)),
        (&Method::POST, None) => {
            parsed_body().and_then(|object| store.create(&target.resource, &namespace, object))
        }
        (&Method::PUT, Some(name)) => parsed_body()
            .and_then(|object| store.replace(&key_of(&target, name), object, status_only)),
        (&Method::PATCH, Some(name)) => {
            let kind = content_type.as_deref().unwrap_or_default();
            if !kind.starts_with("application/merge-patch+json")
                && !kind.starts_with("application/strategic-merge-patch+json")
            {
                return bad(
                    415,
                    "UnsupportedMediaType",
                    format!("the fake does not support patch type {kind:?}"),
                );
            }
            parsed_body().and_then(|patch| store.patch(&key_of(&target, name), &patch, status_only))
        }
        (&Method::DELETE, Some(name)) => store.delete(&key_of(&target, name)),
        _ => {
            return bad(
                405,
                "MethodNotAllowed",
                format!("{method} is not supported on {}", uri.path()),
            );
        }
    };
    match result {
        Ok(object) => {
            let code = if method == Method::POST { 201 } else { 200 };
            publish(&shared, &store, before);
            json_response(code, &object)
        }
        Err(f) => failure(&f),
    }
}

fn key_of(target: &Target, name: &str) -> ObjectKey {
    ObjectKey {
        resource: target.resource.clone(),
        namespace: target.namespace.clone().unwrap_or_default(),
        name: name.to_owned(),
    }
}

#[cfg(test)]
mod tests;
