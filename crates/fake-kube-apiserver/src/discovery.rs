//! The kinds the fake serves and the discovery documents clients read first (`/version`,
//! `/api`, `/api/v1`, `/apis`, `/apis/{group}/{version}`), as the real API server shapes them.

use serde_json::{Value, json};

/// One served resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// `""` for the core group.
    pub group: &'static str,
    /// `v1`.
    pub version: &'static str,
    /// The path segment, `nodes`.
    pub plural: &'static str,
    /// `Node`.
    pub kind: &'static str,
    /// Lives in a namespace.
    pub namespaced: bool,
    /// kubectl's abbreviations.
    pub short_names: &'static [&'static str],
    /// Has a `status` subresource that alone changes `status`.
    pub status: bool,
}

const fn kind(
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: bool,
) -> Kind {
    Kind { group, version: "v1", plural, kind, namespaced, short_names, status }
}

/// Every kind served; any other path under `/api` or `/apis` answers 404.
pub const KINDS: &[Kind] = &[
    kind("", "nodes", "Node", false, &["no"], true),
    kind("", "namespaces", "Namespace", false, &["ns"], true),
    kind("", "services", "Service", true, &["svc"], true),
    kind("", "pods", "Pod", true, &["po"], true),
    kind("", "secrets", "Secret", true, &[], false),
    kind("", "configmaps", "ConfigMap", true, &["cm"], false),
    kind("", "events", "Event", true, &["ev"], false),
    kind("", "endpoints", "Endpoints", true, &["ep"], false),
    kind("coordination.k8s.io", "leases", "Lease", true, &[], false),
    kind("events.k8s.io", "events", "Event", true, &["ev"], false),
];

impl Kind {
    /// `v1` or `coordination.k8s.io/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The served kind at `api_version` and `plural`.
pub fn find(api_version: &str, plural: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.plural == plural && k.api_version() == api_version)
}

const VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// `GET /version`.
pub fn version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "gitCommit": "fake",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
           "compiler": "gc", "platform": "linux/amd64"})
}

/// `GET /api`.
pub fn core_versions(server: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]})
}

fn groups() -> Vec<&'static str> {
    let mut groups: Vec<&str> = KINDS.iter().map(|k| k.group).filter(|g| !g.is_empty()).collect();
    groups.dedup();
    groups
}

/// `GET /apis`.
pub fn group_list() -> Value {
    let groups: Vec<Value> = groups()
        .into_iter()
        .map(|g| {
            let version = json!({"groupVersion": format!("{g}/v1"), "version": "v1"});
            json!({"name": g, "versions": [version.clone()], "preferredVersion": version})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}` (the group alone).
pub fn group(name: &str) -> Option<Value> {
    groups().contains(&name).then(|| {
        let version = json!({"groupVersion": format!("{name}/v1"), "version": "v1"});
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": name,
               "versions": [version.clone()], "preferredVersion": version})
    })
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`; `None` for a group version not served.
pub fn resource_list(api_version: &str) -> Option<Value> {
    let kinds: Vec<&Kind> = KINDS.iter().filter(|k| k.api_version() == api_version).collect();
    if kinds.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for k in kinds {
        resources.push(json!({"name": k.plural, "singularName": k.kind.to_lowercase(),
            "namespaced": k.namespaced, "kind": k.kind, "verbs": VERBS,
            "shortNames": k.short_names}));
        if k.status {
            resources.push(json!({"name": format!("{}/status", k.plural), "singularName": "",
                "namespaced": k.namespaced, "kind": k.kind, "verbs": ["get", "patch", "update"]}));
        }
    }
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version,
                "resources": resources}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_group_version_lists_its_kinds_with_their_status_subresource() {
        let core = resource_list("v1").unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"nodes") && names.contains(&"services/status"), "{names:?}");
        assert!(!names.contains(&"secrets/status"));
        assert_eq!(
            resource_list("coordination.k8s.io/v1").unwrap()["resources"][0]["kind"],
            "Lease"
        );
        assert!(resource_list("apps/v1").is_none());
        let groups = group_list();
        assert_eq!(groups["groups"].as_array().unwrap().len(), 2, "{groups}");
    }
}
