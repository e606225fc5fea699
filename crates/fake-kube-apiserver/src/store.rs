//! The object store: resourceVersions, a bounded event log (older watches get 410 Gone),
//! replace and the three patch types, status subresources, finalizers and `deletionTimestamp`.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use serde_json::{Map, Value, json};

use crate::discovery;
use crate::patch::{self, PatchError};

/// One resource type: API group/version and plural, e.g. (`v1`, `nodes`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    /// `v1` or `coordination.k8s.io/v1`.
    pub api_version: String,
    /// `nodes`, `secrets`, `leases`, `events`.
    pub plural: String,
}

impl Resource {
    /// The kind served for this plural (a kind the fake does not know: its plural, capitalized
    /// and without the final `s`).
    pub fn kind(&self) -> String {
        if let Some(kind) = discovery::find(&self.api_version, &self.plural) {
            return kind.kind.to_owned();
        }
        let singular = self.plural.strip_suffix('s').unwrap_or(&self.plural);
        let mut chars = singular.chars();
        chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
    }

    /// Whether only the status subresource may change `status`.
    fn has_status(&self) -> bool {
        discovery::find(&self.api_version, &self.plural).is_some_and(|k| k.status)
    }
}

/// Where an object lives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Its resource type.
    pub resource: Resource,
    /// Namespace (empty for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// A watch event as sent on the wire. The log and every watch share one copy (an `Arc`),
/// serialized once for all the watches that send it.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion it produced.
    pub rv: u64,
    /// Where.
    pub key: ObjectKey,
    /// `ADDED`, `MODIFIED`, `DELETED`.
    pub kind: &'static str,
    /// The object after the change (the last state, for DELETED), shared with the store.
    pub object: Arc<Value>,
    wire: OnceLock<Bytes>,
}

impl Event {
    fn new(rv: u64, key: ObjectKey, kind: &'static str, object: Arc<Value>) -> Self {
        Event { rv, key, kind, object, wire: OnceLock::new() }
    }

    /// The watch line: `{"type":…,"object":…}` and a newline, made at the first ask.
    pub fn wire(&self) -> Bytes {
        self.wire.get_or_init(|| watch_line(self.kind, &self.object)).clone()
    }
}

/// One watch line, serialized straight from the object (no copy of it).
pub(crate) fn watch_line(kind: &str, object: &Value) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"type\":");
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, kind);
    out.extend_from_slice(b",\"object\":");
    let _ = serde_json::to_writer(&mut out, object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// A failed request: HTTP status, Kubernetes reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// HTTP status.
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `BadRequest`, `Invalid`, `Expired`, …
    pub reason: &'static str,
    /// Human text.
    pub message: String,
}

impl Failure {
    /// The Status body.
    pub fn status(&self) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code})
    }
}

pub(crate) fn fail(code: u16, reason: &'static str, message: String) -> Failure {
    Failure { code, reason, message }
}

/// The three patch types, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/json-patch+json`.
    Json,
}

/// Every object, and the recent changes.
#[derive(Debug)]
pub struct Store {
    rv: u64,
    uid: u64,
    /// Seeds the UIDs: random per server, as a real one's are (a controller that names
    /// cloud objects after a UID must never see two servers' Services share one).
    uid_seed: std::collections::hash_map::RandomState,
    objects: BTreeMap<ObjectKey, Arc<Value>>,
    /// The most recent changes, oldest first (at most `history`).
    pub log: VecDeque<Arc<Event>>,
    history: usize,
}

impl Default for Store {
    fn default() -> Self {
        Store::with_history(10_000)
    }
}

impl Store {
    /// A store keeping the last `history` changes for watches.
    pub fn with_history(history: usize) -> Store {
        Store {
            rv: 0,
            uid: 0,
            uid_seed: std::collections::hash_map::RandomState::new(),
            objects: BTreeMap::new(),
            log: VecDeque::new(),
            history,
        }
    }

    /// The current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The oldest resourceVersion a watch may start from (older ones are compacted away).
    pub fn oldest_watchable(&self) -> u64 {
        self.log.front().map_or(self.rv, |e| e.rv - 1)
    }

    /// Forgets every change so far, as etcd compaction does (a watch from before now gets 410).
    pub fn compact(&mut self) {
        self.log.clear();
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Result<Value, Failure> {
        self.current(key).map(|object| (*object).clone())
    }

    /// One object, shared: the copy a change starts from.
    fn current(&self, key: &ObjectKey) -> Result<Arc<Value>, Failure> {
        self.objects.get(key).cloned().ok_or_else(|| not_found(key))
    }

    /// Objects of a resource (all namespaces when `namespace` is None).
    pub fn list(&self, resource: &Resource, namespace: Option<&str>) -> Vec<Value> {
        self.iter(resource, namespace).cloned().collect()
    }

    /// The same, borrowed, in namespace and name order.
    pub(crate) fn iter<'a>(
        &'a self,
        resource: &'a Resource,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Value> {
        self.iter_after(resource, namespace, None)
    }

    /// The same, after the object `after` (namespace, name): where a list's next page starts.
    pub(crate) fn iter_after<'a>(
        &'a self,
        resource: &'a Resource,
        namespace: Option<&'a str>,
        after: Option<(&str, &str)>,
    ) -> impl Iterator<Item = &'a Value> + use<'a> {
        // Keys sort by resource first: start at the resource's first key (or just after the
        // page before), stop after its last.
        let (namespace_from, name) = after.unwrap_or_default();
        let from = ObjectKey {
            resource: resource.clone(),
            namespace: namespace_from.to_owned(),
            name: name.to_owned(),
        };
        let bound = if after.is_some() { Bound::Excluded(from) } else { Bound::Included(from) };
        let of_resource = self
            .objects
            .range((bound, Bound::Unbounded))
            .take_while(move |(k, _)| k.resource == *resource);
        let matches =
            of_resource.filter(move |(k, _)| namespace.is_none_or(|ns| ns == k.namespace));
        matches.map(|(_, v)| &**v)
    }

    /// A version-4 UUID for the object just counted: random-looking and unique per server.
    fn next_uid(&self) -> String {
        use std::hash::BuildHasher;
        let half = |n: u64| self.uid_seed.hash_one((self.uid, n));
        let bits =
            (u128::from(half(0)) << 64 | u128::from(half(1))) & !(0xf000 << 64) & !(0xc << 60)
                | (0x4000 << 64)
                | (0x8 << 60);
        let hex = format!("{bits:032x}");
        format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
    }

    /// Creates an object (name from `metadata.name` or `generateName`).
    pub fn create(
        &mut self,
        resource: &Resource,
        namespace: &str,
        mut object: Value,
    ) -> Result<Value, Failure> {
        let meta = metadata(&mut object)?;
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) => format!("{prefix}{:05x}", self.uid + 1),
                None => return Err(fail(422, "Invalid", "metadata.name: Required value".into())),
            },
        };
        if !is_subdomain(&name) {
            let message = format!(
                "{} {name:?} is invalid: metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                resource.kind()
            );
            return Err(fail(422, "Invalid", message));
        }
        let key = ObjectKey {
            resource: resource.clone(),
            namespace: namespace.to_owned(),
            name: name.clone(),
        };
        if self.objects.contains_key(&key) {
            let message = format!("{} {name:?} already exists", resource.plural);
            return Err(fail(409, "AlreadyExists", message));
        }
        self.uid += 1;
        let meta = metadata(&mut object)?;
        meta.insert("name".into(), json!(name));
        if !namespace.is_empty() {
            meta.insert("namespace".into(), json!(namespace));
        }
        meta.insert("uid".into(), json!(self.next_uid()));
        meta.insert("creationTimestamp".into(), json!(now()));
        for field in ["deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"] {
            meta.remove(field);
        }
        omit_empty(meta);
        object["kind"] = json!(resource.kind());
        object["apiVersion"] = json!(resource.api_version);
        Ok(self.commit(key, "ADDED", object))
    }

    /// Replaces an object; a stale `metadata.resourceVersion` is a 409 Conflict.
    pub fn replace(
        &mut self,
        key: &ObjectKey,
        object: Value,
        status_only: bool,
    ) -> Result<Value, Failure> {
        let old = self.current(key)?;
        check_precondition(&old, &object, key)?;
        self.update(key, &old, object, status_only)
    }

    /// Applies a patch of `kind`; a `metadata.resourceVersion` in a merge patch is a precondition.
    pub fn patch(
        &mut self,
        key: &ObjectKey,
        kind: PatchType,
        patch: &Value,
        status_only: bool,
    ) -> Result<Value, Failure> {
        let old = self.current(key)?;
        let mut object = (*old).clone();
        match kind {
            PatchType::Merge | PatchType::Strategic => {
                check_precondition(&old, patch, key)?;
                if kind == PatchType::Merge {
                    patch::merge(&mut object, patch);
                } else {
                    patch::strategic(&mut object, patch);
                }
            }
            PatchType::Json => patch::json_patch(&mut object, patch).map_err(patch_failure)?,
        }
        self.update(key, &old, object, status_only)
    }

    /// Deletes an object, or with finalizers only marks it (`deletionTimestamp`).
    pub fn delete(&mut self, key: &ObjectKey) -> Result<Value, Failure> {
        let old = self.get(key)?;
        if finalizers(&old).is_empty() {
            return Ok(self.remove(key, old));
        }
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(old);
        }
        let mut marked = old;
        marked["metadata"]["deletionTimestamp"] = json!(now());
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        Ok(self.commit(key.clone(), "MODIFIED", marked))
    }

    /// The common path of replace and patch: identity kept, subresource rules, finalizer
    /// rules, no event when nothing changed, removal once a deleted object's finalizers are gone.
    fn update(
        &mut self,
        key: &ObjectKey,
        old: &Value,
        mut object: Value,
        status_only: bool,
    ) -> Result<Value, Failure> {
        keep_identity(old, &mut object)?;
        apply_subresource(&key.resource, old, &mut object, status_only);
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            omit_empty(meta);
        }
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            let before = finalizers(old);
            if let Some(new) = finalizers(&object).into_iter().find(|f| !before.contains(f)) {
                let message = format!(
                    "{} {:?} is invalid: metadata.finalizers: Forbidden: no new finalizers can be \
                     added if the object is being deleted, found new finalizers [{new}]",
                    key.resource.kind(),
                    key.name
                );
                return Err(fail(422, "Invalid", message));
            }
            if finalizers(&object).is_empty() {
                return Ok(self.remove(key, object));
            }
        }
        strip_rv(&mut object);
        if same_but_rv(&object, old) {
            return Ok(old.clone());
        }
        Ok(self.commit(key.clone(), "MODIFIED", object))
    }

    fn remove(&mut self, key: &ObjectKey, last: Value) -> Value {
        self.objects.remove(key);
        self.rv += 1;
        let mut gone = last;
        gone["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let gone = Arc::new(gone);
        self.record(Event::new(self.rv, key.clone(), "DELETED", gone.clone()));
        (*gone).clone()
    }

    fn commit(&mut self, key: ObjectKey, kind: &'static str, mut object: Value) -> Value {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let object = Arc::new(object);
        self.objects.insert(key.clone(), object.clone());
        self.record(Event::new(self.rv, key, kind, object.clone()));
        (*object).clone()
    }

    fn record(&mut self, event: Event) {
        self.log.push_back(Arc::new(event));
        while self.log.len() > self.history {
            self.log.pop_front();
        }
    }
}

fn patch_failure(e: PatchError) -> Failure {
    let reason = if e.code == 400 { "BadRequest" } else { "Invalid" };
    fail(e.code, reason, e.message)
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn metadata(object: &mut Value) -> Result<&mut Map<String, Value>, Failure> {
    let Some(obj) = object.as_object_mut() else {
        return Err(fail(400, "BadRequest", "body is not a JSON object".into()));
    };
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    meta.as_object_mut().ok_or_else(|| fail(400, "BadRequest", "metadata is not an object".into()))
}

fn rv_of(object: &Value) -> &str {
    object.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default()
}

fn strip_rv(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
}

/// `a == b` but for `metadata.resourceVersion` (compared in place: no copy of either).
fn same_but_rv(a: &Value, b: &Value) -> bool {
    fn but<'a>(
        map: &'a Map<String, Value>,
        skip: &'a str,
    ) -> impl Iterator<Item = (&'a String, &'a Value)> {
        map.iter().filter(move |(k, _)| *k != skip)
    }
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    but(a, "metadata").eq(but(b, "metadata"))
        && match (a.get("metadata"), b.get("metadata")) {
            (Some(Value::Object(ma)), Some(Value::Object(mb))) => {
                but(ma, "resourceVersion").eq(but(mb, "resourceVersion"))
            }
            (ma, mb) => ma == mb,
        }
}

fn finalizers(object: &Value) -> Vec<String> {
    let list = object.pointer("/metadata/finalizers").and_then(Value::as_array);
    list.map(|l| l.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn check_precondition(old: &Value, new: &Value, key: &ObjectKey) -> Result<(), Failure> {
    match new.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
        Some(rv) if !rv.is_empty() && rv != rv_of(old) => Err(conflict(key)),
        _ => Ok(()),
    }
}

/// name, namespace, uid, creationTimestamp and the deletion marks cannot change.
/// `ObjectMeta`'s lists and maps that a real server serializes with `omitempty`: left out when
/// empty, as it leaves them (a finalizer list emptied by a patch is gone, not `[]`).
fn omit_empty(meta: &mut Map<String, Value>) {
    for field in ["finalizers", "ownerReferences", "labels", "annotations", "managedFields"] {
        let empty = match meta.get(field) {
            Some(Value::Array(list)) => list.is_empty(),
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            meta.remove(field);
        }
    }
}

fn keep_identity(old: &Value, new: &mut Value) -> Result<(), Failure> {
    let meta = metadata(new)?;
    let fixed = [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ];
    for field in fixed {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => meta.insert(field.into(), value.clone()),
            None => meta.remove(field),
        };
    }
    new["kind"] = old["kind"].clone();
    new["apiVersion"] = old["apiVersion"].clone();
    Ok(())
}

/// The main resource cannot change `status` (where a status subresource exists); the status
/// subresource changes only `status` (and metadata).
fn apply_subresource(resource: &Resource, old: &Value, new: &mut Value, status_only: bool) {
    if status_only {
        // `status` and `metadata` moved from `new`, every other field copied from `old`.
        let Some(old) = old.as_object() else { return };
        let mut taken = new.as_object_mut().map(std::mem::take).unwrap_or_default();
        let mut result: Map<String, Value> = old
            .iter()
            .filter(|(k, _)| *k != "status" && *k != "metadata")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for field in ["status", "metadata"] {
            if let Some(value) = taken.remove(field) {
                result.insert(field.into(), value);
            }
        }
        *new = Value::Object(result);
        return;
    }
    let Some(obj) = new.as_object_mut() else { return };
    if resource.has_status() {
        match old.get("status") {
            Some(status) => obj.insert("status".into(), status.clone()),
            None => obj.remove("status"),
        };
    }
}

/// A DNS-1123 subdomain (at most 253 characters, dot-separated lowercase labels): what the real
/// server requires of the names of every kind served here.
fn is_subdomain(name: &str) -> bool {
    let label = |l: &str| {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        l.starts_with(alnum) && l.ends_with(alnum) && l.chars().all(|c| alnum(c) || c == '-')
    };
    name.len() <= 253 && name.split('.').all(label)
}

fn not_found(key: &ObjectKey) -> Failure {
    fail(404, "NotFound", format!("{} {:?} not found", key.resource.plural, key.name))
}

fn conflict(key: &ObjectKey) -> Failure {
    let message = format!(
        "Operation cannot be fulfilled on {} {:?}: the object has been modified; please apply your changes to the latest version and try again",
        key.resource.plural, key.name
    );
    fail(409, "Conflict", message)
}

#[cfg(test)]
mod tests;
