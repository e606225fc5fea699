//! The three patch types of the API: JSON merge patch (RFC 7386), strategic merge patch (merge
//! patch that merges the served kinds' keyed lists by their merge key and honours the `$patch`,
//! `$deleteFromPrimitiveList/…`, `$setElementOrder/…` and `$retainKeys` directives) and JSON
//! patch (RFC 6902: add, remove, replace, move, copy, test).

use serde_json::{Value, json};

/// Why a patch does not apply: a message for a 422 (or 400 for a malformed document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatchError {
    /// 400 for a malformed patch, 422 for one that does not apply.
    pub code: u16,
    /// What is wrong.
    pub message: String,
}

fn invalid(message: impl Into<String>) -> PatchError {
    PatchError { code: 422, message: message.into() }
}

/// RFC 7386 merge patch.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let Value::Object(map) = target else { return };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The merge key of a list field of the served kinds (Kubernetes' `patchMergeKey`).
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "taints" | "tolerations" => "key",
        "conditions" | "addresses" => "type",
        "ports" => "port",
        "containers" | "initContainers" | "env" | "volumes" | "volumeMounts" => "name",
        "ownerReferences" => "uid",
        _ => return None,
    })
}

/// Lists of scalars that strategic merge unions instead of replacing.
fn merges_scalars(field: &str) -> bool {
    field == "finalizers"
}

/// Strategic merge patch for the served kinds.
pub(crate) fn strategic(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut replaced = patch.clone();
            replaced.remove("$patch");
            *target = Value::Object(replaced);
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
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let gone: Vec<&Value> =
                value.as_array().map(|a| a.iter().collect()).unwrap_or_default();
            if let Some(Value::Array(items)) = map.get_mut(field) {
                items.retain(|i| !gone.contains(&i));
            }
            continue;
        }
        if key.starts_with('$') {
            continue; // $setElementOrder, $retainKeys: order and pruning are not modelled
        }
        if value.is_null() {
            map.remove(key);
            continue;
        }
        match (value, merge_key(key), map.get_mut(key)) {
            (Value::Array(items), Some(merge_key), Some(Value::Array(existing))) => {
                merge_keyed(existing, items, merge_key);
            }
            (Value::Array(items), None, Some(Value::Array(existing))) if merges_scalars(key) => {
                for item in items {
                    if !existing.contains(item) {
                        existing.push(item.clone());
                    }
                }
            }
            _ => strategic(map.entry(key.clone()).or_insert(Value::Null), value),
        }
    }
}

/// Merges `items` into `existing` element by element, matched on `key`; `{"$patch":"delete"}`
/// in an item removes the match.
fn merge_keyed(existing: &mut Vec<Value>, items: &[Value], key: &str) {
    for item in items {
        let id = item.get(key);
        let position = existing.iter().position(|e| id.is_some() && e.get(key) == id);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                existing.remove(i);
            }
            (Some(i), false) => strategic(&mut existing[i], item),
            (None, true) => {}
            (None, false) => existing.push(item.clone()),
        }
    }
}

/// RFC 6902 JSON patch; all operations or none.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops = patch
        .as_array()
        .ok_or(PatchError { code: 400, message: "a JSON patch is a list of operations".into() })?;
    let mut doc = target.clone();
    for op in ops {
        let field = |name: &str| op.get(name).and_then(Value::as_str);
        let path = field("path")
            .ok_or(PatchError { code: 400, message: format!("operation without path: {op}") })?;
        match field("op") {
            Some("add") => add(&mut doc, path, value_of(op)?)?,
            Some("remove") => drop(remove(&mut doc, path)?),
            Some("replace") => {
                remove(&mut doc, path)?;
                add(&mut doc, path, value_of(op)?)?;
            }
            Some("move") => {
                let from = field("from").ok_or_else(|| invalid("move without from"))?;
                let moved = remove(&mut doc, from)?;
                add(&mut doc, path, moved)?;
            }
            Some("copy") => {
                let from = field("from").ok_or_else(|| invalid("copy without from"))?;
                let copied = doc
                    .pointer(from)
                    .cloned()
                    .ok_or_else(|| invalid(format!("no value at {from}")))?;
                add(&mut doc, path, copied)?;
            }
            Some("test") => {
                if doc.pointer(path) != Some(&value_of(op)?) {
                    return Err(invalid(format!("the test operation failed at {path}")));
                }
            }
            other => {
                return Err(PatchError {
                    code: 400,
                    message: format!("unknown operation {other:?}"),
                });
            }
        }
    }
    *target = doc;
    Ok(())
}

fn value_of(op: &Value) -> Result<Value, PatchError> {
    op.get("value")
        .cloned()
        .ok_or(PatchError { code: 400, message: format!("operation without value: {op}") })
}

/// Splits a JSON pointer into its parent pointer and last token (unescaped).
fn split(path: &str) -> Result<(&str, String), PatchError> {
    let i = path.rfind('/').ok_or_else(|| invalid(format!("{path:?} is not a JSON pointer")))?;
    Ok((&path[..i], path[i + 1..].replace("~1", "/").replace("~0", "~")))
}

fn parent<'a>(doc: &'a mut Value, pointer: &str) -> Result<&'a mut Value, PatchError> {
    doc.pointer_mut(pointer).ok_or_else(|| invalid(format!("no value at {pointer:?}")))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), PatchError> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (at, token) = split(path)?;
    match parent(doc, at)? {
        Value::Object(map) => {
            map.insert(token, value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if token == "-" { items.len() } else { index(&token, items.len() + 1)? };
            items.insert(index, value);
            Ok(())
        }
        _ => Err(invalid(format!("{at:?} is neither an object nor a list"))),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, PatchError> {
    let (at, token) = split(path)?;
    let missing = || invalid(format!("no value at {path:?}"));
    match parent(doc, at)? {
        Value::Object(map) => map.remove(&token).ok_or_else(missing),
        Value::Array(items) => {
            let i = index(&token, items.len())?;
            Ok(items.remove(i))
        }
        _ => Err(missing()),
    }
}

fn index(token: &str, len: usize) -> Result<usize, PatchError> {
    match token.parse::<usize>() {
        Ok(i) if i < len => Ok(i),
        _ => Err(invalid(format!("index {token:?} is out of range"))),
    }
}

#[cfg(test)]
mod tests;
