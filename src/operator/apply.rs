//! Server-side apply of a rendered object under the operator's one field manager, and only when
//! the live object differs: an idle cluster costs no write.
//!
//! "Differs" is judged twice. The object carries the hash of what was applied last
//! ([`APPLIED`]): a new rendering (a field added, changed or dropped) is applied even where
//! the live object already holds every field asked for. And every field rendered must be in the
//! live object with the same value (lists element by element), so that a foreign edit of a
//! field we own, or a deleted object, is put back; labels and annotations others add are
//! extra fields, which apply leaves alone.

use base64::Engine as _;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::world::Key;

/// The field manager of every write.
pub const MANAGER: &str = "ccm-assets-operator";

/// The annotation holding the hash of the rendered object last applied.
pub const APPLIED: &str = "operator.ccm-assets.io/applied";

/// `object` as it is applied: a Secret's `stringData` as base64 `data` (what the API server
/// stores and returns), and the hash of the rendering in [`APPLIED`].
pub fn prepared(object: &Value) -> Value {
    let mut object = object.clone();
    if object["kind"] == "Secret"
        && let Some(Value::Object(strings)) =
            object.as_object_mut().and_then(|o| o.remove("stringData"))
    {
        let data = object["data"].as_object().cloned().unwrap_or_default();
        let mut data = data;
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            data.insert(key, Value::from(base64::engine::general_purpose::STANDARD.encode(text)));
        }
        object["data"] = Value::Object(data);
    }
    let hash = hex::encode(Sha256::digest(object.to_string().as_bytes()));
    let metadata = &mut object["metadata"];
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = Value::Object(Default::default());
    }
    metadata["annotations"][APPLIED] = Value::from(hash);
    object
}

/// Whether `prepared` must be applied over `live`.
pub fn needed(prepared: &Value, live: Option<&Value>) -> bool {
    live.is_none_or(|live| !contains(prepared, live))
}

/// Where `have` first lacks what `want` says (`spec.template.spec.containers[0].args`); `None`
/// when it holds all of it (see [`contains`]).
pub fn difference(want: &Value, have: &Value) -> Option<String> {
    match (want, have) {
        (Value::Object(want), Value::Object(have)) => {
            want.iter().find_map(|(key, value)| match have.get(key) {
                None => Some(key.clone()),
                Some(h) => difference(value, h).map(|rest| match rest.is_empty() {
                    true => key.clone(),
                    false if rest.starts_with('[') => format!("{key}{rest}"),
                    false => format!("{key}.{rest}"),
                }),
            })
        }
        (Value::Array(w), Value::Array(h)) if w.len() == h.len() => {
            w.iter().zip(h).enumerate().find_map(|(i, (w, h))| {
                difference(w, h).map(|rest| match rest.is_empty() || rest.starts_with('[') {
                    true => format!("[{i}]{rest}"),
                    false => format!("[{i}].{rest}"),
                })
            })
        }
        (want, have) => (want != have).then(String::new),
    }
}

/// Whether every field of `want` is in `have` with the same value. Lists must have the same
/// length and each element be contained in its counterpart (the API server adds defaults
/// inside a container, not elements to a list).
pub fn contains(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(want), Value::Object(have)) => {
            want.iter().all(|(key, value)| have.get(key).is_some_and(|h| contains(value, h)))
        }
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| contains(w, h))
        }
        (want, have) => want == have,
    }
}

/// Applies `prepared` (forcing our ownership of the fields it names); the object as the API
/// server now holds it.
pub async fn apply(client: &kube::Client, prepared: &Value) -> Result<Value, kube::Error> {
    let key = Key::of(prepared);
    let api = key.api(client).expect("only objects of known kinds are rendered");
    let params = PatchParams::apply(MANAGER).force();
    let applied: DynamicObject = api.patch(&key.name, &params, &Patch::Apply(prepared)).await?;
    Ok(serde_json::to_value(applied).expect("an object from the API is JSON"))
}

/// Deletes the object at `key`; `Ok(false)` when it was already gone.
pub async fn delete(client: &kube::Client, key: &Key) -> Result<bool, kube::Error> {
    let api = key.api(client).expect("only objects of known kinds are deleted");
    match api.delete(&key.name, &Default::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_secret_is_applied_as_the_api_server_returns_it() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "n"}, "stringData": {"clouds.yaml": "a: b"}});
        let prepared = prepared(&secret);
        assert_eq!(prepared["data"]["clouds.yaml"], "YTogYg==");
        assert!(prepared.get("stringData").is_none());
        assert_eq!(prepared["metadata"]["annotations"][APPLIED].as_str().map(str::len), Some(64));
    }

    #[test]
    fn labels_others_add_and_server_defaults_need_no_write() {
        let want = prepared(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "labels": {"app": "x"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["--a"]}]}}}}));
        let mut live = want.clone();
        live["metadata"]["labels"]["team"] = json!("ours");
        live["metadata"]["resourceVersion"] = json!("7");
        live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] =
            json!("IfNotPresent");
        assert!(!needed(&want, Some(&live)));
    }

    #[test]
    fn a_foreign_edit_a_deletion_or_a_new_rendering_is_applied() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["--a"]}]}}}});
        let want = prepared(&object);
        let mut edited = want.clone();
        edited["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--a", "--b"]);
        assert!(needed(&want, Some(&edited)));
        assert!(needed(&want, None));
        let mut labelled = object.clone();
        labelled["metadata"]["labels"] = json!({"app": "x", "old": "y"});
        let applied = prepared(&labelled);
        labelled["metadata"]["labels"] = json!({"app": "x"});
        let rendered = prepared(&labelled);
        assert!(contains(&rendered["spec"], &applied["spec"]), "the live object has every field");
        assert!(needed(&rendered, Some(&applied)), "a label no longer rendered is dropped");
    }
}
