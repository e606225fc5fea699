//! Watch streams of the fake API server: events after a resourceVersion, then live ones.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{Event, Shared, Store, Target};

/// Supports `metadata.name=x` and `metadata.namespace=x` (comma-separated), as kube-rs sends them.
pub(super) fn field_selector_matches(selector: Option<&String>, object: &Value) -> bool {
    let Some(selector) = selector else { return true };
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (field, want, negate) = match term.split_once("!=") {
            Some((f, v)) => (f, v, true),
            None => match term.split_once('=') {
                Some((f, v)) => (f, v.trim_start_matches('='), false),
                None => return true,
            },
        };
        let path = format!("/{}", field.replace('.', "/"));
        let have = object.pointer(&path).and_then(Value::as_str).unwrap_or_default();
        (have == want) != negate
    })
}

pub(super) fn watch_response(
    shared: &Shared,
    store: &Store,
    target: &Target,
    query: &HashMap<String, String>,
) -> Response {
    let since: u64 = query.get("resourceVersion").and_then(|rv| rv.parse().ok()).unwrap_or(0);
    let selector = query.get("fieldSelector").cloned();
    let timeout = query.get("timeoutSeconds").and_then(|t| t.parse().ok()).unwrap_or(300u64);
    let matches = {
        let resource = target.resource.clone();
        let namespace = target.namespace.clone();
        move |event: &Event| {
            event.key.resource == resource
                && namespace.as_ref().is_none_or(|ns| *ns == event.key.namespace)
                && field_selector_matches(selector.as_ref(), &event.object)
        }
    };
    let initial: Vec<Value> = if since == 0 {
        let objects = store.list(&target.resource, target.namespace.as_deref());
        let objects =
            objects.into_iter().filter(|o| field_selector_matches(query.get("fieldSelector"), o));
        objects.map(|o| json!({"type": "ADDED", "object": o})).collect()
    } else {
        let events = store.log.iter().filter(|e| e.rv > since && matches(e));
        events.map(|e| json!({"type": e.kind, "object": e.object})).collect()
    };
    let live = tokio_stream::wrappers::BroadcastStream::new(shared.events.subscribe())
        .take_while(|r| std::future::ready(r.is_ok()))
        .filter_map(move |r| {
            let out = r.ok().filter(&matches).map(|e| json!({"type": e.kind, "object": e.object}));
            std::future::ready(out)
        });
    let stream = futures::stream::iter(initial)
        .chain(live)
        .map(|event| Ok::<_, Infallible>(Bytes::from(format!("{event}\n"))))
        .take_until(tokio::time::sleep(Duration::from_secs(timeout)));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}
