use serde_json::json;

use super::*;

#[test]
fn merge_patch_follows_rfc_7386() {
    let mut doc = json!({"a": {"b": 1, "c": 2}, "list": [1, 2]});
    merge(&mut doc, &json!({"a": {"b": null, "d": 3}, "list": [3]}));
    assert_eq!(doc, json!({"a": {"c": 2, "d": 3}, "list": [3]}));
}

#[test]
fn strategic_merge_merges_keyed_lists_and_unions_finalizers() {
    let mut node = json!({"metadata": {"finalizers": ["a"]}, "spec": {"taints": [
        {"key": "x", "effect": "NoSchedule"}, {"key": "y", "effect": "NoSchedule"}]}});
    strategic(
        &mut node,
        &json!({"metadata": {"finalizers": ["b"]}, "spec": {"taints": [
        {"key": "y", "effect": "NoExecute"}, {"key": "z", "effect": "NoSchedule"},
        {"key": "x", "$patch": "delete"}]}}),
    );
    assert_eq!(node["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "y", "effect": "NoExecute"}, {"key": "z", "effect": "NoSchedule"}])
    );
    strategic(&mut node, &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
    assert_eq!(node["metadata"]["finalizers"], json!(["b"]));
    strategic(&mut node, &json!({"spec": {"$patch": "replace", "unschedulable": true}}));
    assert_eq!(node["spec"], json!({"unschedulable": true}));
}

#[test]
fn json_patch_applies_every_operation_or_none() {
    let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2]});
    json_patch(
        &mut doc,
        &json!([
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "remove", "path": "/metadata/labels/a"},
            {"op": "replace", "path": "/list/0", "value": 9},
            {"op": "add", "path": "/list/-", "value": 3},
            {"op": "copy", "from": "/list/2", "path": "/copied"},
            {"op": "move", "from": "/copied", "path": "/moved"},
            {"op": "test", "path": "/moved", "value": 3},
            {"op": "add", "path": "/metadata/labels/a~1b", "value": "slash"},
        ]),
    )
    .unwrap();
    assert_eq!(
        doc,
        json!({"metadata": {"labels": {"b": "2", "a/b": "slash"}}, "list": [9, 2, 3], "moved": 3})
    );
    let before = doc.clone();
    let err = json_patch(
        &mut doc,
        &json!([
            {"op": "remove", "path": "/moved"},
            {"op": "test", "path": "/list/0", "value": 1},
        ]),
    )
    .unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (422, "the test operation failed at /list/0"));
    assert_eq!(doc, before, "a failed patch changed the document");
}
