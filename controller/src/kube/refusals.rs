//! Requests the API server refused (HTTP 403: RBAC said no), said once and shown by `/readyz`.
//!
//! [`Refusals`] is a tower [`Layer`] over the kube client's whole service stack, so every
//! caller (controllers, watches, leader election, the Secret watch) is covered in one place.
//! Each response is read as `verb resource` the way RBAC names it (`list nodes`,
//! `patch nodes/status`, `update coordination.k8s.io/leases`): a 403 adds the pair to the set
//! and logs **one** line the first time (not one per retry); a later success of the same pair
//! removes it and says so, once. While the set is not empty `/readyz` fails naming it.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::http::{Method, Request, Response, StatusCode};
use tower::{Layer, Service};

/// One kind of request as RBAC names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Access {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub(crate) verb: &'static str,
    /// `[group/]resource[/subresource]`: `nodes`, `nodes/status`, `coordination.k8s.io/leases`.
    /// (Not the namespace: a refusal is said once, whichever namespaces it happens in.)
    pub(crate) resource: String,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)
    }
}

impl Access {
    /// The request's verb and resource, from its method, path and query; `None` for what RBAC
    /// does not name by resource (`/version`, discovery).
    pub(crate) fn of(method: &Method, path: &str, query: Option<&str>) -> Option<Access> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, rest) = match parts.as_slice() {
            ["api", _version, rest @ ..] => ("", rest),
            ["apis", group, _version, rest @ ..] => (*group, rest),
            _ => return None,
        };
        let rest = match rest {
            ["namespaces", _, rest @ ..] if !rest.is_empty() => rest,
            _ => rest,
        };
        let (resource, named, sub) = match rest {
            [resource] => (*resource, false, None),
            [resource, _name] => (*resource, true, None),
            [resource, _name, sub] => (*resource, true, Some(*sub)),
            _ => return None,
        };
        let watch =
            query.is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let verb = match *method {
            Method::GET if watch => "watch",
            Method::GET if named => "get",
            Method::GET => "list",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if named => "delete",
            Method::DELETE => "deletecollection",
            _ => return None,
        };
        let mut name =
            if group.is_empty() { resource.to_owned() } else { format!("{group}/{resource}") };
        if let Some(sub) = sub {
            name = format!("{name}/{sub}");
        }
        Some(Access { verb, resource: name })
    }
}

/// The refused requests so far; shared by the client layer and `/readyz`.
#[derive(Debug, Default)]
pub(crate) struct Refused {
    set: Mutex<BTreeSet<Access>>,
}

impl Refused {
    /// A new, empty set.
    pub(crate) fn shared() -> Arc<Refused> {
        Arc::new(Refused::default())
    }

    /// Records the answer `status` to a request of `access`: a 403 is added (and said once),
    /// a success removes it (and says so once).
    pub(crate) fn record(&self, access: Access, status: StatusCode) {
        let mut set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        if status == StatusCode::FORBIDDEN {
            let line = message(&access);
            if set.insert(access) {
                tracing::error!("{line}");
            }
        } else if status.is_success() && set.remove(&access) {
            tracing::info!("allowed again: {access}: the API server accepted it");
        }
    }

    /// `Ok` when nothing is refused now, else the refusals, one per line.
    pub(crate) fn readiness(&self) -> Result<(), String> {
        let set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        if set.is_empty() {
            return Ok(());
        }
        Err(set.iter().map(message).collect::<Vec<_>>().join("\n"))
    }
}

/// The one line for a refused `access`.
fn message(access: &Access) -> String {
    format!(
        "forbidden: cannot {access}: the API server refused it (RBAC); grant it in the \
         ClusterRole or Role bound to this CCM's identity"
    )
}

/// The layer recording every response's 403 or success in a [`Refused`] set.
#[derive(Debug, Clone)]
pub(crate) struct Refusals(pub(crate) Arc<Refused>);

impl<S> Layer<S> for Refusals {
    type Service = Recorded<S>;

    fn layer(&self, inner: S) -> Recorded<S> {
        Recorded { inner, refused: self.0.clone() }
    }
}

/// A service whose responses are recorded.
#[derive(Debug, Clone)]
pub(crate) struct Recorded<S> {
    inner: S,
    refused: Arc<Refused>,
}

impl<S, B, R> Service<Request<B>> for Recorded<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let access = Access::of(request.method(), request.uri().path(), request.uri().query());
        let (refused, answer) = (self.refused.clone(), self.inner.call(request));
        Box::pin(async move {
            let response = answer.await?;
            if let Some(access) = access {
                refused.record(access, response.status());
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(method: Method, uri: &str) -> Option<String> {
        let uri: axum::http::Uri = uri.parse().unwrap();
        Access::of(&method, uri.path(), uri.query()).map(|a| a.to_string())
    }

    #[test]
    fn requests_read_as_rbac_verbs_and_resources() {
        assert_eq!(access(Method::GET, "/api/v1/nodes?limit=100").unwrap(), "list nodes");
        assert_eq!(
            access(Method::GET, "/api/v1/nodes?watch=true&resourceVersion=5").unwrap(),
            "watch nodes"
        );
        assert_eq!(access(Method::GET, "/api/v1/nodes/n1").unwrap(), "get nodes");
        assert_eq!(access(Method::PATCH, "/api/v1/nodes/n1/status").unwrap(), "patch nodes/status");
        assert_eq!(access(Method::DELETE, "/api/v1/nodes/n1").unwrap(), "delete nodes");
        assert_eq!(
            access(
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/cloud-controller-manager"
            )
            .unwrap(),
            "update coordination.k8s.io/leases"
        );
        assert_eq!(
            access(Method::POST, "/apis/events.k8s.io/v1/namespaces/default/events").unwrap(),
            "create events.k8s.io/events"
        );
        assert_eq!(
            access(Method::PUT, "/api/v1/namespaces/a/services/s/status").unwrap(),
            "update services/status"
        );
        assert_eq!(access(Method::GET, "/version"), None);
    }

    #[test]
    fn a_refusal_is_ready_no_more_until_the_same_request_succeeds() {
        let refused = Refused::default();
        let list = || Access::of(&Method::GET, "/api/v1/nodes", None).unwrap();
        assert_eq!(refused.readiness(), Ok(()));
        refused.record(list(), StatusCode::FORBIDDEN);
        refused.record(list(), StatusCode::FORBIDDEN);
        let why = refused.readiness().unwrap_err();
        assert_eq!(why.lines().count(), 1, "{why}");
        assert!(why.starts_with("forbidden: cannot list nodes: "), "{why}");
        // Another request's success changes nothing; an error other than 403 neither.
        refused.record(Access::of(&Method::GET, "/api/v1/nodes/a", None).unwrap(), StatusCode::OK);
        refused.record(list(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(refused.readiness().is_err());
        refused.record(list(), StatusCode::OK);
        assert_eq!(refused.readiness(), Ok(()));
    }

    #[tokio::test]
    async fn the_layer_records_the_status_of_each_response() {
        use tower::ServiceExt as _;
        let refused = Refused::shared();
        let service = tower::service_fn(|request: Request<()>| async move {
            let status = if request.method() == Method::PATCH {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::OK
            };
            Ok::<_, std::convert::Infallible>(Response::builder().status(status).body(()).unwrap())
        });
        let mut service = Refusals(refused.clone()).layer(service);
        let request = |method: Method| {
            Request::builder().method(method).uri("/api/v1/nodes/n1/status").body(()).unwrap()
        };
        service.ready().await.unwrap().call(request(Method::PATCH)).await.unwrap();
        assert!(refused.readiness().unwrap_err().contains("cannot patch nodes/status"));
        service.ready().await.unwrap().call(request(Method::GET)).await.unwrap();
        assert!(refused.readiness().is_err(), "a get does not clear a refused patch");
        service.ready().await.unwrap().call(request(Method::PUT)).await.unwrap();
        assert!(refused.readiness().is_err(), "an update does not clear a refused patch");
    }
}
