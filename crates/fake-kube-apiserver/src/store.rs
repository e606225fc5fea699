//! The fake API server's object store: resourceVersions, the event log, merge patches, status subresources.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// One resource type: API group/version and plural, e.g. (`v1`, `nodes`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    /// `v1` or `coordination.k8s.io/v1`.
    pub api_version: String,
    /// `nodes`, `secrets`, `leases`, `events`.
    pub plural: String,
}

impl Resource {
    /// The kind served for this plural.
    pub fn kind(&self) -> String {
        match self.plural.as_str() {
            "nodes" => "Node",
            "secrets" => "Secret",
            "events" => "Event",
            "leases" => "Lease",
            "configmaps" => "ConfigMap",
            "pods" => "Pod",
            "services" => "Service",
            other => other,
        }
        .to_owned()
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

/// A watch event as sent on the wire.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion it produced.
    pub rv: u64,
    /// Where.
    pub key: ObjectKey,
    /// `ADDED`, `MODIFIED`, `DELETED`.
    pub kind: &'static str,
    /// The object after the change (before, for DELETED).
    pub object: Value,
}

/// A failed request: HTTP status, Kubernetes reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// HTTP status.
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `BadRequest`, `UnsupportedMediaType`.
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

fn fail(code: u16, reason: &'static str, message: String) -> Failure {
    Failure { code, reason, message }
}

/// Every object and every change.
#[derive(Debug, Default)]
pub struct Store {
    rv: u64,
    uid: u64,
    objects: BTreeMap<ObjectKey, Value>,
    /// Every change since start (the fake keeps the whole history, so no watch gets 410).
    pub log: Vec<Event>,
}

impl Store {
    /// The current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Result<Value, Failure> {
        self.objects.get(key).cloned().ok_or_else(|| not_found(key))
    }

    /// Objects of a resource (all namespaces when `namespace` is None).
    pub fn list(&self, resource: &Resource, namespace: Option<&str>) -> Vec<Value> {
        let matches = self.objects.iter().filter(|(k, _)| {
            k.resource == *resource && namespace.is_none_or(|ns| ns == k.namespace)
        });
        matches.map(|(_, v)| v.clone()).collect()
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
        meta.insert("uid".into(), json!(format!("00000000-0000-0000-0000-{:012x}", self.uid)));
        meta.insert("creationTimestamp".into(), json!(now()));
        object["kind"] = json!(resource.kind());
        object["apiVersion"] = json!(resource.api_version);
        Ok(self.commit(key, "ADDED", object))
    }

    /// Replaces an object; a stale `metadata.resourceVersion` is a 409 Conflict.
    pub fn replace(
        &mut self,
        key: &ObjectKey,
        mut object: Value,
        status_only: bool,
    ) -> Result<Value, Failure> {
        let old = self.get(key)?;
        check_precondition(&old, &object, key)?;
        keep_identity(&old, &mut object)?;
        apply_subresource(&old, &mut object, status_only);
        Ok(self.commit(key.clone(), "MODIFIED", object))
    }

    /// Applies a JSON merge patch (RFC 7386) or a strategic merge patch (handled as a merge
    /// patch plus the `$patch: replace/delete` directives).
    pub fn patch(
        &mut self,
        key: &ObjectKey,
        patch: &Value,
        status_only: bool,
    ) -> Result<Value, Failure> {
        let old = self.get(key)?;
        if let Some(rv) = patch.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            && rv != rv_of(&old)
        {
            return Err(conflict(key));
        }
        let mut object = old.clone();
        merge_patch(&mut object, patch);
        keep_identity(&old, &mut object)?;
        apply_subresource(&old, &mut object, status_only);
        if object == old {
            return Ok(old);
        }
        Ok(self.commit(key.clone(), "MODIFIED", object))
    }

    /// Deletes an object.
    pub fn delete(&mut self, key: &ObjectKey) -> Result<Value, Failure> {
        let old = self.objects.remove(key).ok_or_else(|| not_found(key))?;
        self.rv += 1;
        let mut gone = old.clone();
        gone["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.log.push(Event {
            rv: self.rv,
            key: key.clone(),
            kind: "DELETED",
            object: gone.clone(),
        });
        Ok(gone)
    }

    fn commit(&mut self, key: ObjectKey, kind: &'static str, mut object: Value) -> Value {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.objects.insert(key.clone(), object.clone());
        self.log.push(Event { rv: self.rv, key, kind, object: object.clone() });
        object
    }
}

fn now() -> String {
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

fn check_precondition(old: &Value, new: &Value, key: &ObjectKey) -> Result<(), Failure> {
    match new.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
        Some(rv) if !rv.is_empty() && rv != rv_of(old) => Err(conflict(key)),
        _ => Ok(()),
    }
}

/// name, namespace, uid and creationTimestamp cannot change.
fn keep_identity(old: &Value, new: &mut Value) -> Result<(), Failure> {
    let meta = metadata(new)?;
    for field in ["name", "namespace", "uid", "creationTimestamp"] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => meta.insert(field.into(), value.clone()),
            None => meta.remove(field),
        };
    }
    new["kind"] = old["kind"].clone();
    new["apiVersion"] = old["apiVersion"].clone();
    Ok(())
}

/// The main resource cannot change `status`; the status subresource changes only `status` (and metadata).
fn apply_subresource(old: &Value, new: &mut Value, status_only: bool) {
    if status_only {
        let mut result = old.clone();
        for field in ["status", "metadata"] {
            match new.get(field) {
                Some(value) => result[field] = value.clone(),
                None => {
                    result.as_object_mut().map(|o| o.remove(field));
                }
            }
        }
        *new = result;
        return;
    }
    let Some(obj) = new.as_object_mut() else { return };
    if let Some(kind) = old.get("kind").and_then(Value::as_str)
        && matches!(kind, "Node" | "Pod" | "Service")
    {
        match old.get("status") {
            Some(status) => obj.insert("status".into(), status.clone()),
            None => obj.remove("status"),
        };
    }
}

/// RFC 7386 merge patch, plus strategic merge's `{"$patch": "replace"}`/`"delete"` in objects.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut replaced = Value::Object(patch.clone());
            replaced.as_object_mut().map(|o| o.remove("$patch"));
            *target = replaced;
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = json!({});
    }
    let Value::Object(map) = target else { return };
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
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
mod tests {
    use super::*;

    fn nodes() -> Resource {
        Resource { api_version: "v1".into(), plural: "nodes".into() }
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut doc = json!({"a": {"b": 1, "c": 2}, "list": [1, 2]});
        merge_patch(&mut doc, &json!({"a": {"b": null, "d": 3}, "list": [3]}));
        assert_eq!(doc, json!({"a": {"c": 2, "d": 3}, "list": [3]}));
    }

    #[test]
    fn stale_resource_version_conflicts_and_versions_increase() {
        let mut store = Store::default();
        let node = store.create(&nodes(), "", json!({"metadata": {"name": "n"}})).unwrap();
        assert_eq!(rv_of(&node), "1");
        let key = ObjectKey { resource: nodes(), namespace: String::new(), name: "n".into() };
        let err = store
            .replace(&key, json!({"metadata": {"name": "n", "resourceVersion": "0"}}), false)
            .unwrap_err();
        assert_eq!(err.code, 409);
        let err = store.create(&nodes(), "", json!({"metadata": {"name": "n"}})).unwrap_err();
        assert_eq!(err.reason, "AlreadyExists");
        let patched = store.patch(&key, &json!({"spec": {"providerID": "x"}}), false).unwrap();
        assert_eq!(rv_of(&patched), "2");
    }

    #[test]
    fn main_resource_ignores_status_and_status_subresource_ignores_spec() {
        let mut store = Store::default();
        store
            .create(&nodes(), "", json!({"metadata": {"name": "n"}, "status": {"phase": "a"}}))
            .unwrap();
        let key = ObjectKey { resource: nodes(), namespace: String::new(), name: "n".into() };
        let out =
            store.patch(&key, &json!({"spec": {"x": 1}, "status": {"phase": "b"}}), false).unwrap();
        assert_eq!(out["status"]["phase"], "a");
        let out =
            store.patch(&key, &json!({"spec": {"x": 2}, "status": {"phase": "c"}}), true).unwrap();
        assert_eq!(
            (out["spec"]["x"].clone(), out["status"]["phase"].clone()),
            (json!(1), json!("c"))
        );
    }
}
