//! Events as client-go's recorder (`k8s.io/client-go/tools/events`) writes them.
//!
//! An Event repeated within six minutes (the same type, reason, action, note, reporter,
//! regarding and related object) adds to the first one's `series`; anything else, a new note
//! under the same reason included, is an Event of its own. kube-runtime's `Recorder` leaves the
//! note out of that key, so a second message under one reason only counted the first one up and
//! `kubectl describe` kept showing the first message: a Service whose error changed still read
//! the old error, an operator's second bad edit the first one's.
//!
//! A series whose Event is gone (the API server's event TTL) starts again as a new Event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
pub use kube::runtime::events::{Event, EventType, Reporter};

/// How long a repeat counts into its first Event's series (client-go's and kube-runtime's).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Writes Events for one reporter; cheap to clone (the series are shared).
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    reporter: Reporter,
    series: Arc<Mutex<HashMap<Key, Series>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("reporter", &self.reporter).finish_non_exhaustive()
    }
}

/// What makes two Events the same Event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    type_: &'static str,
    reason: String,
    action: String,
    note: Option<String>,
    regarding: Object,
    related: Option<Object>,
}

/// The identifying fields of an `ObjectReference` (which is not `Hash`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Object {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    field_path: Option<String>,
}

impl From<&ObjectReference> for Object {
    fn from(o: &ObjectReference) -> Object {
        Object {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
            field_path: o.field_path.clone(),
        }
    }
}

/// An Event written: where it is and how often it has been seen.
#[derive(Clone, Debug)]
struct Series {
    name: String,
    count: i32,
    last: Timestamp,
}

impl Recorder {
    /// A recorder writing as `reporter`.
    pub fn new(client: kube::Client, reporter: Reporter) -> Recorder {
        Recorder { client, reporter, series: Arc::default() }
    }

    /// Writes `event` about `regarding`, in its namespace (`default` for cluster-scoped
    /// objects): a new Event, or a repeat's count on the Event it repeats.
    ///
    /// # Errors
    /// The API server's answer when it refuses the write.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = Key {
            type_: type_name(event.type_),
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: event.note.clone(),
            regarding: regarding.into(),
            related: event.secondary.as_ref().map(Object::from),
        };
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let repeat = {
            let mut series = self.series.lock().expect("the series lock is never poisoned");
            series.retain(|_, s| s.last + SERIES_WINDOW > now);
            series.get(&key).cloned()
        };
        let written = match repeat {
            Some(seen) => {
                let count = seen.count + 1;
                let patch = serde_json::json!({
                    "series": {"count": count, "lastObservedTime": MicroTime(now)},
                });
                match api.patch(&seen.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    Ok(_) => Series { name: seen.name, count, last: now },
                    // Gone from the API server: the series starts again.
                    Err(kube::Error::Api(status)) if status.code == 404 => {
                        self.create(&api, event, regarding, now).await?
                    }
                    Err(error) => return Err(error),
                }
            }
            None => self.create(&api, event, regarding, now).await?,
        };
        self.series.lock().expect("the series lock is never poisoned").insert(key, written);
        Ok(())
    }

    async fn create(
        &self,
        api: &Api<K8sEvent>,
        event: &Event,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> Result<Series, kube::Error> {
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(&self.reporter.controller),
            now.as_nanosecond()
        );
        let object = K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter.instance.clone().unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            type_: Some(type_name(event.type_).to_owned()),
            ..K8sEvent::default()
        };
        api.create(&PostParams::default(), &object).await?;
        Ok(Series { name, count: 1, last: now })
    }
}

fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

#[cfg(test)]
mod tests;
