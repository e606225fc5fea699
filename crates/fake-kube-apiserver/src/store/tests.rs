use super::*;

fn nodes() -> Resource {
    Resource { api_version: "v1".into(), plural: "nodes".into() }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey { resource: nodes(), namespace: String::new(), name: name.into() }
}

#[test]
fn stale_resource_version_conflicts_and_versions_increase() {
    let mut store = Store::default();
    let node = store.create(&nodes(), "", json!({"metadata": {"name": "n"}})).unwrap();
    assert_eq!(rv_of(&node), "1");
    let err = store
        .replace(&key("n"), json!({"metadata": {"name": "n", "resourceVersion": "0"}}), false)
        .unwrap_err();
    assert_eq!(err.code, 409);
    let err = store.create(&nodes(), "", json!({"metadata": {"name": "n"}})).unwrap_err();
    assert_eq!(err.reason, "AlreadyExists");
    let patch = json!({"spec": {"providerID": "x"}});
    let patched = store.patch(&key("n"), PatchType::Merge, &patch, false).unwrap();
    assert_eq!(rv_of(&patched), "2");
}

#[test]
fn main_resource_ignores_status_and_status_subresource_ignores_spec() {
    let mut store = Store::default();
    store
        .create(&nodes(), "", json!({"metadata": {"name": "n"}, "status": {"phase": "a"}}))
        .unwrap();
    let both = |x, phase| json!({"spec": {"x": x}, "status": {"phase": phase}});
    let out = store.patch(&key("n"), PatchType::Merge, &both(1, "b"), false).unwrap();
    assert_eq!(out["status"]["phase"], "a");
    let out = store.patch(&key("n"), PatchType::Merge, &both(2, "c"), true).unwrap();
    assert_eq!((out["spec"]["x"].clone(), out["status"]["phase"].clone()), (json!(1), json!("c")));
}

#[test]
fn an_object_with_finalizers_is_marked_on_delete_and_goes_with_its_last_finalizer() {
    let mut store = Store::default();
    let object = json!({"metadata": {"name": "n", "finalizers": ["a", "b"]}});
    store.create(&nodes(), "", object).unwrap();
    let marked = store.delete(&key("n")).unwrap();
    assert!(marked.pointer("/metadata/deletionTimestamp").is_some());
    assert_eq!(store.log.back().unwrap().kind, "MODIFIED");
    let add = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
    let err = store.patch(&key("n"), PatchType::Merge, &add, false).unwrap_err();
    assert!(err.message.contains("no new finalizers can be added"), "{}", err.message);
    let one = json!({"metadata": {"finalizers": ["b"]}});
    store.patch(&key("n"), PatchType::Merge, &one, false).unwrap();
    assert!(store.get(&key("n")).is_ok());
    let none = json!([{"op": "remove", "path": "/metadata/finalizers/0"}]);
    store.patch(&key("n"), PatchType::Json, &none, false).unwrap();
    assert_eq!(store.get(&key("n")).unwrap_err().code, 404);
    assert_eq!(store.log.back().unwrap().kind, "DELETED");
}

#[test]
fn the_log_keeps_only_the_last_changes() {
    let mut store = Store::with_history(2);
    for name in ["a", "b", "c"] {
        store.create(&nodes(), "", json!({"metadata": {"name": name}})).unwrap();
    }
    assert_eq!(store.log.len(), 2);
    assert_eq!(store.oldest_watchable(), 1);
    store.compact();
    assert_eq!(store.oldest_watchable(), 3);
}

#[test]
fn a_patch_that_changes_nothing_writes_nothing() {
    let mut store = Store::default();
    store.create(&nodes(), "", json!({"metadata": {"name": "n", "labels": {"a": "1"}}})).unwrap();
    let same = json!({"metadata": {"labels": {"a": "1"}}});
    let out = store.patch(&key("n"), PatchType::Strategic, &same, false).unwrap();
    assert_eq!((rv_of(&out), store.log.len()), ("1", 1));
}

#[test]
fn uids_are_version_4_uuids_unique_per_object_and_per_server() {
    let uid = |store: &mut Store, name: &str| {
        let node = store.create(&nodes(), "", json!({"metadata": {"name": name}})).unwrap();
        node["metadata"]["uid"].as_str().unwrap().to_owned()
    };
    let (mut one, mut two) = (Store::default(), Store::default());
    let (a, b, c) = (uid(&mut one, "a"), uid(&mut one, "b"), uid(&mut two, "a"));
    for u in [&a, &b, &c] {
        let parts: Vec<usize> = u.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{u}");
        assert_eq!(&u[14..15], "4", "version 4: {u}");
        assert!("89ab".contains(&u[19..20]), "RFC 4122 variant: {u}");
    }
    assert!(a != b && a != c, "{a} {b} {c}");
    // Their first 31 hex digits differ too (the in-tree provider's names keep only those).
    let head = |u: &str| u.replace('-', "")[..31].to_owned();
    assert_ne!(head(&a), head(&b));
}

#[test]
fn a_resource_is_listed_from_where_the_page_before_ended_and_no_further() {
    let mut store = Store::default();
    let secrets = Resource { api_version: "v1".into(), plural: "secrets".into() };
    let leases = Resource { api_version: "coordination.k8s.io/v1".into(), plural: "leases".into() };
    for (resource, namespace, name) in [
        (&leases, "a", "l"),
        (&nodes(), "", "n1"),
        (&secrets, "a", "s1"),
        (&secrets, "b", "s2"),
        (&secrets, "b", "s3"),
        (&nodes(), "", "n2"),
    ] {
        store.create(resource, namespace, json!({"metadata": {"name": name}})).unwrap();
    }
    let names = |items: Vec<&Value>| -> Vec<String> {
        items.iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(names(store.iter(&secrets, None).collect()), ["s1", "s2", "s3"]);
    assert_eq!(names(store.iter(&nodes(), None).collect()), ["n1", "n2"]);
    assert_eq!(names(store.iter(&secrets, Some("b")).collect()), ["s2", "s3"]);
    let after = |ns, name| store.iter_after(&secrets, None, Some((ns, name))).collect();
    assert_eq!(names(after("a", "s1")), ["s2", "s3"]);
    assert_eq!(names(after("b", "s2")), ["s3"]);
    assert_eq!(names(after("a", "zz")), ["s2", "s3"], "a name the page ended on may be gone since");
    assert!(after("b", "s3").is_empty());
}

#[test]
fn a_status_write_keeps_the_rest_of_the_object_and_drops_what_the_patch_removes() {
    let mut store = Store::default();
    let node = json!({"metadata": {"name": "n", "labels": {"a": "1"}}, "spec": {"x": 1},
                      "status": {"phase": "a", "addresses": [1]}});
    store.create(&nodes(), "", node).unwrap();
    let patch =
        json!({"metadata": {"labels": null}, "spec": {"x": 2}, "status": {"addresses": null}});
    let out = store.patch(&key("n"), PatchType::Merge, &patch, true).unwrap();
    assert_eq!(out["spec"], json!({"x": 1}));
    assert_eq!(out["status"], json!({"phase": "a"}));
    assert_eq!(out["metadata"].get("labels"), None);
    assert_eq!(out["kind"], "Node");
}

/// A real API server serializes `ObjectMeta` with `omitempty`: a list or map emptied by a write
/// (the last finalizer removed, every label deleted) is left out of the object, not kept as
/// `[]` or `{}`. So does this one, on create and on every write.
#[test]
fn emptied_metadata_lists_and_maps_are_left_out_as_a_real_server_leaves_them() {
    let mut store = Store::default();
    let object = json!({"metadata": {"name": "n", "finalizers": ["a"], "labels": {"x": "1"},
        "annotations": {}, "ownerReferences": []}});
    let made = store.create(&nodes(), "", object).unwrap();
    assert_eq!(made["metadata"].get("annotations"), None, "{made}");
    assert_eq!(made["metadata"].get("ownerReferences"), None, "{made}");
    let none = json!([{"op": "remove", "path": "/metadata/finalizers/0"}]);
    let out = store.patch(&key("n"), PatchType::Json, &none, false).unwrap();
    assert_eq!(out["metadata"].get("finalizers"), None, "{out}");
    let unlabel = json!({"metadata": {"labels": {"x": null}}});
    let out = store.patch(&key("n"), PatchType::Merge, &unlabel, false).unwrap();
    assert_eq!(out["metadata"].get("labels"), None, "{out}");
    assert_eq!(store.get(&key("n")).unwrap()["metadata"].get("finalizers"), None);
}
