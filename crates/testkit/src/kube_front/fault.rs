//! Faults the front injects in place of the upstream's answer: a failure status with the body
//! kube-apiserver sends for it, or a request held unanswered; and which requests they hit.

use axum::body::Body;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::json;

/// What the front does instead of forwarding one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    /// Answers at once with this status and a `Status` body.
    Fail(StatusCode),
    /// Holds the request, unanswered, until the policy changes or ends.
    Hang,
}

/// Which requests a fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    /// Every request, discovery and `/version` included.
    All,
    /// The requests of this resource (its plural), any verb, namespace, group or subresource.
    Resource(String),
}

impl Scope {
    pub(super) fn hits(&self, target: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Resource(resource) => resource_of(target) == Some(resource.as_str()),
        }
    }
}

/// The resource (plural) a request acts on, as kube-apiserver's request-info parser tells it:
/// `/api/v1/nodes/n1/status` → `nodes`, `/apis/G/V/namespaces/NS/leases/l` → `leases`,
/// `/api/v1/namespaces/NS` → `namespaces`, `/api/v1/watch/pods` → `pods`; `None` for
/// discovery and other paths that name none (`/version`, `/api/v1`, `/openapi/v3`).
pub(super) fn resource_of(target: &str) -> Option<&str> {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    let mut rest = match parts.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return None,
    };
    if let ["watch", tail @ ..] = rest {
        rest = tail;
    }
    // `namespaces/NAME/status` and `/finalize` are the Namespace's own subresources; any
    // other third segment is a resource in that namespace.
    if let ["namespaces", _, resource, ..] = rest
        && !matches!(*resource, "status" | "finalize")
    {
        rest = &rest[2..];
    }
    rest.first().copied()
}

/// The answer kube-apiserver gives with `code` when it cannot serve (`StatusReason` and
/// message as apimachinery's `NewGenericServerResponse` words them), marked as the front's;
/// a 429 carries `Retry-After: 1`, as the API server's max-in-flight filter sends it.
pub(super) fn failure(code: StatusCode) -> Response<Body> {
    let (reason, message) = match code.as_u16() {
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        500 => {
            ("InternalError", "an error on the server has prevented the request from succeeding")
        }
        503 => ("ServiceUnavailable", "the server is currently unable to handle the request"),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be \
             processing the request",
        ),
        _ => ("", code.canonical_reason().unwrap_or("the server failed")),
    };
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("{message} (injected by the kube front)"),
        "reason": reason,
        "code": code.as_u16(),
    });
    if reason.is_empty() {
        status.as_object_mut().expect("an object").remove("reason");
    }
    let retry = code == StatusCode::TOO_MANY_REQUESTS;
    if retry {
        status["details"] = json!({"retryAfterSeconds": 1});
    }
    let mut response = Response::new(Body::from(status.to_string()));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if retry {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}
