//! Watch streams: the initial objects (or the changes after a resourceVersion), then live
//! changes, `BOOKMARK`s when asked for, and the `410 Expired` error event for a
//! resourceVersion older than the kept history, as the real API server sends them.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::selector::{LabelSelector, fields_match};
use crate::store::watch_line;
use crate::target::Target;
use crate::{Event, Failure, Shared, Store};

/// What a watch request asked for.
#[derive(Debug, Clone)]
pub(crate) struct WatchQuery {
    /// `resourceVersion`: changes after it; `None` or 0: the current objects first.
    pub(crate) since: Option<u64>,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: Option<String>,
    pub(crate) timeout: Duration,
    pub(crate) bookmarks: bool,
}

fn line(event: &Value) -> Bytes {
    Bytes::from(format!("{event}\n"))
}

pub(crate) fn watch_response(
    shared: &Shared,
    store: &Store,
    target: &Target,
    query: WatchQuery,
) -> Response {
    let since = query.since.filter(|rv| *rv > 0);
    if let Some(rv) = since
        && rv < store.oldest_watchable()
    {
        let expired = Failure {
            code: 410,
            reason: "Expired",
            message: format!("too old resource version: {rv} ({})", store.oldest_watchable()),
        };
        let event = json!({"type": "ERROR", "object": expired.status()});
        let once = futures::stream::iter([Ok::<_, Infallible>(line(&event))]);
        return stream_response(Body::from_stream(once));
    }
    let matches = {
        let (resource, namespace) = (target.resource.clone(), target.namespace.clone());
        let (labels, fields) = (query.labels.clone(), query.fields.clone());
        move |event: &Event| {
            event.key.resource == resource
                && namespace.as_ref().is_none_or(|ns| *ns == event.key.namespace)
                && labels.matches(&event.object)
                && fields_match(fields.as_deref(), &event.object)
        }
    };
    // Lines made here, under the store's lock: no object is copied, only serialized.
    let initial: Vec<(u64, Bytes)> = match since {
        None => {
            let objects = store.iter(&target.resource, target.namespace.as_deref());
            let objects = objects
                .filter(|o| query.labels.matches(o) && fields_match(query.fields.as_deref(), o));
            objects.map(|o| (0, watch_line("ADDED", o))).collect()
        }
        Some(rv) => {
            let events = store.log.iter().filter(|e| e.rv > rv && matches(e));
            events.map(|e| (e.rv, e.wire())).collect()
        }
    };
    let start_rv = store.rv();
    let bookmark = {
        let kind = target.resource.kind();
        let api_version = target.resource.api_version.clone();
        move |rv: u64| {
            line(&json!({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                   "metadata": {"resourceVersion": rv.to_string()}}}))
        }
    };
    let live = tokio_stream::wrappers::BroadcastStream::new(shared.events.subscribe())
        .take_while(|r| std::future::ready(r.is_ok()))
        .filter_map(move |r| {
            let out = r.ok().filter(|e| e.rv > start_rv && matches(e));
            std::future::ready(out.map(|e| (e.rv, e.wire())))
        });
    let ticks = if query.bookmarks {
        let first = tokio::time::Instant::now() + shared.bookmark_interval;
        let interval = tokio::time::interval_at(first, shared.bookmark_interval);
        tokio_stream::wrappers::IntervalStream::new(interval)
            .map(|_| (u64::MAX, Bytes::new()))
            .boxed()
    } else {
        futures::stream::pending().boxed()
    };
    // After the initial events, one bookmark at the rv the watch started from; later ones at
    // the last rv delivered (every earlier matching change has been sent by then).
    let opening = query.bookmarks.then(|| (start_rv, bookmark(start_rv)));
    let stream = futures::stream::iter(initial)
        .chain(futures::stream::iter(opening))
        .chain(futures::stream::select(live, ticks))
        .scan(start_rv, move |last, (rv, event)| {
            let out = if rv == u64::MAX {
                bookmark(*last)
            } else {
                *last = (*last).max(rv);
                event
            };
            std::future::ready(Some(out))
        })
        .map(Ok::<_, Infallible>)
        .take_until(ended(shared, query.timeout));
    stream_response(Body::from_stream(stream))
}

/// Resolves when the watch must end: its timeout, or a restart of the server's watches.
fn ended(shared: &Shared, timeout: Duration) -> impl Future<Output = ()> + Send + 'static {
    let mut restarts = shared.restarts.subscribe();
    restarts.mark_unchanged();
    async move {
        tokio::select! {
            () = tokio::time::sleep(timeout) => {}
            _ = restarts.changed() => {}
        }
    }
}

fn stream_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap_or_default()
}
