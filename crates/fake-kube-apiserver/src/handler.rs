//! The HTTP side: routing a request to discovery, the store or a watch, and the responses
//! (JSON objects, lists, `Table`s for kubectl, `Status` errors).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::page::page;
use crate::selector::{LabelSelector, fields_match};
use crate::target::parse_path;
use crate::watch::{WatchQuery, watch_response};
use crate::{Failure, ObjectKey, PatchType, Request, Shared, discovery, publish};

fn json_response(code: u16, body: &impl serde::Serialize) -> Response {
    // Serializing a `Value` or a list of borrowed ones cannot fail.
    let text = serde_json::to_vec(body).unwrap_or_default();
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(text))
        .unwrap_or_default()
}

/// A list response, serialized straight from the store's objects.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a> {
    kind: String,
    api_version: &'a str,
    metadata: Value,
    items: Vec<&'a Value>,
}

fn failure(f: &Failure) -> Response {
    json_response(f.code, &f.status())
}

fn bad(code: u16, reason: &'static str, message: impl Into<String>) -> Response {
    failure(&Failure { code, reason, message: message.into() })
}

fn not_found(uri: &Uri) -> Response {
    bad(404, "NotFound", format!("the server could not find the requested resource {}", uri.path()))
}

/// Discovery documents, or `None` when `path` is not a discovery path.
fn discovery_response(path: &str, host: &str) -> Option<Response> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let body = match parts.as_slice() {
        ["version"] => Some(discovery::version()),
        ["api"] => Some(discovery::core_versions(host)),
        ["apis"] => Some(discovery::group_list()),
        ["api", version] => discovery::resource_list(version),
        ["apis", group] => discovery::group(group),
        ["apis", group, version] => discovery::resource_list(&format!("{group}/{version}")),
        _ => return None,
    };
    Some(match body {
        Some(body) => json_response(200, &body),
        None => {
            bad(404, "NotFound", format!("the server could not find the requested resource {path}"))
        }
    })
}

/// A `Table` of `objects` for kubectl's default output (name and age columns).
fn table(objects: &[Value], rv: u64) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            json!({"cells": [meta["name"], meta["creationTimestamp"]],
                   "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                              "metadata": meta}})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
           "metadata": {"resourceVersion": rv.to_string()},
           "columnDefinitions": [
               {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0},
               {"name": "Created At", "type": "date", "format": "", "description": "Creation time", "priority": 0}],
           "rows": rows})
}

fn patch_type(content_type: Option<&str>) -> Option<PatchType> {
    let kind = content_type.unwrap_or_default();
    if kind.starts_with("application/merge-patch+json") {
        Some(PatchType::Merge)
    } else if kind.starts_with("application/strategic-merge-patch+json") {
        Some(PatchType::Strategic)
    } else if kind.starts_with("application/json-patch+json") {
        Some(PatchType::Json)
    } else {
        None
    }
}

pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let text = |name| {
        headers.get(name).and_then(|v: &header::HeaderValue| v.to_str().ok()).map(str::to_owned)
    };
    let content_type = text(header::CONTENT_TYPE);
    shared.requests.lock().unwrap_or_else(PoisonError::into_inner).push(Request {
        method: method.to_string(),
        path: uri.path().to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        content_type: content_type.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let refused =
        shared.refused.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|(m, p)| {
            m.eq_ignore_ascii_case(method.as_str()) && uri.path().contains(p.as_str())
        });
    if refused {
        let message = format!("{method} {} is forbidden (refused by the test)", uri.path());
        return bad(403, "Forbidden", message);
    }
    if method == Method::GET
        && let Some(response) =
            discovery_response(uri.path(), &text(header::HOST).unwrap_or_default())
    {
        return response;
    }
    let Some(target) = parse_path(uri.path()) else { return not_found(&uri) };
    if let Some(kind) = discovery::find(&target.resource.api_version, &target.resource.plural) {
        let per_object = target.name.is_some() || method == Method::POST;
        if !kind.namespaced && target.namespace.is_some()
            || kind.namespaced && per_object && target.namespace.is_none()
        {
            return not_found(&uri);
        }
    }
    let namespace = target.namespace.clone().unwrap_or_default();
    let status_only = target.subresource.as_deref() == Some("status");
    if let Some(sub) = &target.subresource
        && sub != "status"
    {
        return bad(404, "NotFound", format!("subresource {sub} is not served by the fake"));
    }
    let labels = match LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str)) {
        Ok(labels) => labels,
        Err(message) => return bad(400, "BadRequest", format!("labelSelector: {message}")),
    };
    let fields = query.get("fieldSelector").cloned();
    let parsed_body = || {
        serde_json::from_slice::<Value>(&body).map_err(|e| Failure {
            code: 400,
            reason: "BadRequest",
            message: e.to_string(),
        })
    };
    let wants_table = text(header::ACCEPT).is_some_and(|a| a.contains("as=Table"));
    let mut store = shared.store.lock().unwrap_or_else(PoisonError::into_inner);
    let before = store.rv();
    let object_key = |name: &str| ObjectKey {
        resource: target.resource.clone(),
        namespace: namespace.clone(),
        name: name.to_owned(),
    };
    let result = match (&method, &target.name) {
        (&Method::GET, None) => {
            if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
                let watch = WatchQuery {
                    since: query.get("resourceVersion").and_then(|rv| rv.parse().ok()),
                    labels,
                    fields,
                    timeout: Duration::from_secs(
                        query.get("timeoutSeconds").and_then(|t| t.parse().ok()).unwrap_or(1800),
                    ),
                    bookmarks: query.get("allowWatchBookmarks").is_some_and(|b| b == "true"),
                };
                return watch_response(&shared, &store, &target, watch);
            }
            let items = |after: Option<(&str, &str)>| {
                store
                    .iter_after(&target.resource, target.namespace.as_deref(), after)
                    .filter(|o| labels.matches(o) && fields_match(fields.as_deref(), o))
            };
            if wants_table {
                let all = items(None).cloned().collect::<Vec<_>>();
                return json_response(200, &table(&all, store.rv()));
            }
            let (items, metadata) =
                match page(items, store.rv(), query.get("limit"), query.get("continue")) {
                    Ok(paged) => paged,
                    Err(failure) => return bad(failure.code, failure.reason, failure.message),
                };
            let list = List {
                kind: format!("{}List", target.resource.kind()),
                api_version: &target.resource.api_version,
                metadata,
                items,
            };
            return json_response(200, &list);
        }
        (&Method::GET, Some(name)) => match store.get(&object_key(name)) {
            Ok(object) if wants_table => return json_response(200, &table(&[object], store.rv())),
            other => other,
        },
        (&Method::POST, None) => {
            parsed_body().and_then(|object| store.create(&target.resource, &namespace, object))
        }
        (&Method::PUT, Some(name)) => {
            parsed_body().and_then(|object| store.replace(&object_key(name), object, status_only))
        }
        (&Method::PATCH, Some(name)) => {
            let Some(kind) = patch_type(content_type.as_deref()) else {
                return bad(
                    415,
                    "UnsupportedMediaType",
                    format!(
                        "the fake does not support patch type {:?}",
                        content_type.unwrap_or_default()
                    ),
                );
            };
            parsed_body()
                .and_then(|patch| store.patch(&object_key(name), kind, &patch, status_only))
        }
        (&Method::DELETE, Some(name)) => store.delete(&object_key(name)),
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
