//! What the API server kept of an object we wrote: every field of ours present with the same
//! value, defaults it added allowed. tests/it/real_kube_admission.rs reads objects back through
//! it; its own tests here need no cluster.
//!
//! Equivalences the API defines, and only those, are normalised:
//! - a Secret's `stringData` is write-only: the server stores it base64-encoded in `data`;
//! - quantities (`resources.requests`/`limits`) are compared by value (`1000m` is `1`);
//! - a written `null` is the field left unset;
//! - the server may add list items (the ServiceAccount admission plugin adds a token volume to
//!   a Pod): the written items must appear in the read list in order, each matching.
//!
//! Secret values are never shown: a mismatch under a Secret's `data` names the key and the
//! sha256 of each side.

use std::fmt;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// One field of ours the server dropped or changed.
#[derive(Debug, PartialEq)]
pub(crate) struct Mismatch {
    /// The object, `Kind namespace/name`.
    pub(crate) object: String,
    /// The field path (`spec.template.spec.containers[0].args`).
    pub(crate) path: String,
    /// What we wrote (a hash for Secret data).
    pub(crate) written: String,
    /// What the server returned (a hash for Secret data), or `<absent>`.
    pub(crate) read: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Mismatch { object, path, written, read } = self;
        write!(f, "{object}: {path}: written {written}, read {read}")
    }
}

/// `Kind namespace/name` of an object.
pub(crate) fn describe(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or("?");
    let kind = object["kind"].as_str().unwrap_or("?");
    match meta["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Every field of `written` that `read` lacks or holds with another value.
pub(crate) fn compare(written: &Value, read: &Value) -> Vec<Mismatch> {
    let secret = written["kind"] == "Secret";
    let written = if secret { with_string_data_encoded(written) } else { written.clone() };
    let mut walk = Walk { object: describe(&written), secret, out: Vec::new() };
    walk.value("", &written, Some(read));
    walk.out
}

/// A Secret as the server stores it: `stringData` merged into `data`, base64-encoded.
fn with_string_data_encoded(secret: &Value) -> Value {
    use base64::Engine as _;
    let mut secret = secret.clone();
    let Some(object) = secret.as_object_mut() else { return secret };
    let Some(Value::Object(plain)) = object.remove("stringData") else { return secret };
    let data = object.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(data) = data {
        for (key, value) in plain {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
    secret
}

struct Walk {
    object: String,
    secret: bool,
    out: Vec<Mismatch>,
}

impl Walk {
    fn value(&mut self, path: &str, written: &Value, read: Option<&Value>) {
        if written.is_null() {
            return;
        }
        let Some(read) = read else {
            return self.mismatch(path, written, None);
        };
        match (written, read) {
            (Value::Object(w), Value::Object(r)) => {
                for (key, value) in w {
                    let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    self.value(&child, value, r.get(key));
                }
            }
            (Value::Array(w), Value::Array(r)) => self.list(path, w, r),
            (Value::String(w), Value::String(r)) if is_quantity(path) => {
                let same = quantity(w).is_some_and(|w| Some(w) == quantity(r));
                if !same {
                    self.mismatch(path, written, Some(read));
                }
            }
            _ if written != read => self.mismatch(path, written, Some(read)),
            _ => {}
        }
    }

    /// Same length: item by item (precise paths). Longer read list (items the server added):
    /// each written item must match a later read item than the one before it.
    fn list(&mut self, path: &str, written: &[Value], read: &[Value]) {
        if written.len() == read.len() {
            for (i, (w, r)) in written.iter().zip(read).enumerate() {
                self.value(&format!("{path}[{i}]"), w, Some(r));
            }
            return;
        }
        let mut rest = read.iter();
        for (i, w) in written.iter().enumerate() {
            if !rest.any(|r| matches(w, r)) {
                let whole = Value::Array(written.to_vec());
                let read = Value::Array(read.to_vec());
                let at = format!("{path}[{i}] (no read item matches it in order)");
                return self.mismatch(&at, &whole, Some(&read));
            }
        }
    }

    fn mismatch(&mut self, path: &str, written: &Value, read: Option<&Value>) {
        let hidden = self.secret && (path == "data" || path.starts_with("data."));
        let show = |v: &Value| if hidden { hash(v) } else { v.to_string() };
        self.out.push(Mismatch {
            object: self.object.clone(),
            path: path.to_owned(),
            written: show(written),
            read: read.map_or_else(|| "<absent>".to_owned(), show),
        });
    }
}

fn matches(written: &Value, read: &Value) -> bool {
    let mut probe = Walk { object: String::new(), secret: false, out: Vec::new() };
    probe.value("", written, Some(read));
    probe.out.is_empty()
}

fn hash(value: &Value) -> String {
    let digest = Sha256::digest(value.to_string().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("<sha256 {hex}…>")
}

/// A field holding a resource.Quantity: `…resources.requests.<name>` / `…limits.<name>`.
fn is_quantity(path: &str) -> bool {
    path.contains("resources.requests.") || path.contains("resources.limits.")
}

/// A quantity's value in millis (`200m` → 200, `50Mi` → 52428800000), for comparison.
fn quantity(text: &str) -> Option<u128> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let factor: u128 = match suffix {
        "m" => 1,
        "" => 1_000,
        "k" => 1_000_000,
        "M" => 1_000_000_000,
        "G" => 1_000_000_000_000,
        "Ki" => 1_000 << 10,
        "Mi" => 1_000 << 20,
        "Gi" => 1_000 << 30,
        "Ti" => 1_000 << 40,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    let millis = digits.checked_mul(factor)?;
    (millis % scale == 0).then(|| millis / scale)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(containers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "kube-system"},
               "spec": {"containers": containers}})
    }

    #[test]
    fn defaults_added_by_the_server_are_allowed() {
        let written = pod(json!([{"name": "c", "image": "i"}]));
        let mut read = pod(json!([{"name": "c", "image": "i", "imagePullPolicy": "Always"}]));
        read["spec"]["restartPolicy"] = json!("Always");
        read["metadata"]["uid"] = json!("1234");
        assert_eq!(compare(&written, &read), []);
    }

    #[test]
    fn a_dropped_field_names_the_object_the_path_and_both_values() {
        let written = pod(json!([{"name": "c", "image": "i", "args": ["--v=2"]}]));
        let read = pod(json!([{"name": "c", "image": "i"}]));
        let found: Vec<String> = compare(&written, &read).iter().map(|m| m.to_string()).collect();
        let want =
            r#"Pod kube-system/p: spec.containers[0].args: written ["--v=2"], read <absent>"#;
        assert_eq!(found, [want]);
    }

    #[test]
    fn a_changed_value_is_a_mismatch() {
        let written = pod(json!([{"name": "c", "image": "i"}]));
        let read = pod(json!([{"name": "c", "image": "other"}]));
        let found = compare(&written, &read);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "spec.containers[0].image");
        assert_eq!((found[0].written.as_str(), found[0].read.as_str()), ("\"i\"", "\"other\""));
    }

    #[test]
    fn items_the_server_adds_are_allowed_but_a_dropped_item_is_not() {
        let mounts = |names: &[&str]| -> Value {
            names.iter().map(|n| json!({"name": n, "mountPath": format!("/{n}")})).collect()
        };
        let written = pod(json!([{"name": "c", "volumeMounts": mounts(&["a", "b"])}]));
        let added = pod(json!([{"name": "c", "volumeMounts": mounts(&["a", "token", "b"])}]));
        assert_eq!(compare(&written, &added), []);
        let dropped = pod(json!([{"name": "c", "volumeMounts": mounts(&["a", "token", "x"])}]));
        let found = compare(&written, &dropped);
        assert_eq!(found.len(), 1);
        assert!(found[0].path.starts_with("spec.containers[0].volumeMounts[1]"), "{found:?}");
    }

    #[test]
    fn quantities_compare_by_value_and_nothing_else_does() {
        let with = |cpu: &str, memory: &str| {
            pod(json!([{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]))
        };
        assert_eq!(compare(&with("1000m", "1Gi"), &with("1", "1024Mi")), []);
        assert_eq!(compare(&with("0.5", "50Mi"), &with("500m", "50Mi")), []);
        assert_eq!(compare(&with("200m", "50Mi"), &with("100m", "50Mi")).len(), 1);
        assert_eq!(compare(&with("200m", "50Mi"), &with("200m", "50M")).len(), 1);
        let mut labels = with("1", "1Gi");
        labels["metadata"]["labels"] = json!({"size": "1000m"});
        let mut read = labels.clone();
        read["metadata"]["labels"] = json!({"size": "1"});
        assert_eq!(compare(&labels, &read).len(), 1, "labels are not quantities");
    }

    #[test]
    fn secret_string_data_is_read_back_as_data_and_values_are_never_shown() {
        let written = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"},
            "stringData": {"clouds.yaml": "password: hunter2\n"}});
        let read = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"},
            "data": {"clouds.yaml": "cGFzc3dvcmQ6IGh1bnRlcjIK"}});
        assert_eq!(compare(&written, &read), []);
        let changed = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"},
            "data": {"clouds.yaml": "cGFzc3dvcmQ6IG90aGVyCg=="}});
        let found = compare(&written, &changed);
        assert_eq!(found.len(), 1);
        let text = found[0].to_string();
        assert!(text.starts_with("Secret ns/s: data.clouds.yaml: written <sha256 "), "{text}");
        for secret in ["hunter2", "cGFzc3dvcmQ6IGh1bnRlcjIK", "cGFzc3dvcmQ6IG90aGVyCg=="] {
            assert!(!text.contains(secret), "{text}");
        }
    }

    #[test]
    fn a_written_null_is_an_unset_field() {
        let mut written = pod(json!([{"name": "c"}]));
        written["spec"]["nodeName"] = Value::Null;
        assert_eq!(compare(&written, &pod(json!([{"name": "c"}]))), []);
    }
}
