//! The Node as the controllers keep it: only the fields they read (STYLE d4), so the cache
//! costs a fraction of the Node's JSON. [`CachedNode`] is decoded straight from the watch's
//! JSON (kubelet's images, node info, capacity and the conditions' messages are never decoded)
//! and [`project`] trims its metadata as each event arrives. A `k8s_openapi` Node kept even
//! projected cost 1.5 KiB of struct per node (its status alone holds node info, capacity,
//! images… inline); this one about a third of that. See: issue 16.

use std::cmp::Ordering;
use std::fmt;

use k8s_openapi::api::core::v1::{NodeAddress, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, Metadata, Resource};
use serde::{Deserialize, Deserializer, Serialize};

use super::PROVIDED_NODE_IP;

/// The node condition the route controller owns.
pub(crate) const NETWORK_UNAVAILABLE: &str = "NetworkUnavailable";

/// A Node with the fields the controllers read: the JSON shape of `v1.Node`, the rest of which
/// is skipped while decoding. Watched, listed and patched through `Api<CachedNode>`.
///
/// Decoding moves `metadata.labels` into one sorted string ([`CachedNode::labels`], which
/// shadows `ResourceExt::labels`, and [`CachedNode::label`]): a BTreeMap of a node's dozen labels
/// costs four times as much. `metadata.labels` itself is then always empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CachedNode {
    /// Name, uid, resourceVersion, annotations (trimmed by [`project`]); no labels.
    pub metadata: ObjectMeta,
    /// providerID and taints.
    pub spec: Option<CachedSpec>,
    /// Addresses and conditions.
    pub status: Option<CachedStatus>,
    /// The labels, sorted by key.
    labels: Labels,
}

impl CachedNode {
    /// The labels, sorted by key (`metadata.labels` as decoded).
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels.iter()
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }
}

/// Labels sorted by key in two allocations: keys and values back to back in one string, and
/// the offset where each of them ends. A node's dozen labels as separate strings took 25
/// allocations and about 1 KiB; this takes 2 and about half. See: issue 16.
#[derive(Clone, Default, PartialEq, Eq)]
struct Labels {
    /// `key₀ value₀ key₁ value₁ …` without separators.
    text: Box<str>,
    /// Where key i ends (`ends[2i]`) and where its value ends (`ends[2i + 1]`).
    ends: Box<[u32]>,
}

impl Labels {
    /// From pairs sorted by key (a BTreeMap's order); `None` past 4 GiB of text.
    fn from_sorted(pairs: impl IntoIterator<Item = (String, String)>) -> Option<Self> {
        let (mut text, mut ends) = (String::new(), Vec::new());
        for (key, value) in pairs {
            for piece in [key, value] {
                text.push_str(&piece);
                ends.push(u32::try_from(text.len()).ok()?);
            }
        }
        Some(Labels { text: text.into_boxed_str(), ends: ends.into_boxed_slice() })
    }

    fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// Piece `i` of the text: key `i / 2` or, odd, its value.
    fn piece(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    fn pair(&self, i: usize) -> (&str, &str) {
        (self.piece(2 * i), self.piece(2 * i + 1))
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.len()).map(|i| self.pair(i))
    }

    fn get(&self, key: &str) -> Option<&str> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.piece(2 * mid).cmp(key) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Some(self.piece(2 * mid + 1)),
            }
        }
        None
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'de> Deserialize<'de> for CachedNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<CachedSpec>,
            #[serde(default)]
            status: Option<CachedStatus>,
        }
        let Wire { mut metadata, spec, status } = Wire::deserialize(deserializer)?;
        // A BTreeMap iterates in key order: the labels come out sorted.
        let labels = Labels::from_sorted(metadata.labels.take().unwrap_or_default())
            .ok_or_else(|| serde::de::Error::custom("metadata.labels: more than 4 GiB"))?;
        Ok(CachedNode { metadata, spec, status, labels })
    }
}

/// `spec`: what initialization, the lifecycle check and the route controller read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedSpec {
    /// `spec.providerID`.
    #[serde(default, rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// `spec.taints`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// `spec.podCIDRs`: one per family, the route controller's destinations.
    #[serde(default, rename = "podCIDRs", skip_serializing_if = "Option::is_none")]
    pub pod_cidrs: Option<Vec<String>>,
}

/// `status`: the addresses and each condition's type and status.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct CachedStatus {
    /// `status.addresses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<NodeAddress>>,
    /// `status.conditions`, reduced to type, status and reason ([`project`] keeps `Ready`
    /// without its reason, and `NetworkUnavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<CachedCondition>>,
}

/// One condition: `Ready` / `True`; `NetworkUnavailable` / `False` / `RouteCreated`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct CachedCondition {
    /// `Ready`, `MemoryPressure`, …
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    #[serde(default)]
    pub status: String,
    /// Kept for `NetworkUnavailable` only: the route controller writes it when it changes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl Resource for CachedNode {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Node";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "nodes";
    type Scope = ClusterResourceScope;
}

impl Metadata for CachedNode {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Keeps name, uid and resourceVersion (patch preconditions, events), kubelet's node-IP
/// annotation, the deletion time, and of the conditions only `Ready` and `NetworkUnavailable`
/// (with its reason, which the route controller compares). The labels stay whole
/// (in [`CachedNode::labels`]): a Service's node-selector annotation may name any of them.
pub fn project(node: &mut CachedNode) {
    let meta = std::mem::take(&mut node.metadata);
    let annotations = meta.annotations.map(|mut a| {
        a.retain(|k, _| k == PROVIDED_NODE_IP);
        a
    });
    node.metadata = ObjectMeta {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        annotations: annotations.filter(|a| !a.is_empty()),
        deletion_timestamp: meta.deletion_timestamp,
        ..ObjectMeta::default()
    };
    if let Some(conditions) = node.status.as_mut().and_then(|s| s.conditions.as_mut()) {
        conditions.retain(|c| c.type_ == "Ready" || c.type_ == NETWORK_UNAVAILABLE);
        for condition in conditions.iter_mut().filter(|c| c.type_ == "Ready") {
            condition.reason = String::new();
        }
        conditions.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;
    use serde_json::json;
    use testkit::kube::NodeFixture;

    use super::*;
    use crate::controllers::{UNINITIALIZED_TAINT, has_taint, is_ready, lookup};

    #[test]
    fn every_label_is_found_by_its_key_and_no_other_key_finds_one() {
        for n in 0..6 {
            // Keys that are prefixes of one another, empty values, an empty key at n > 0.
            let pairs: Vec<(String, String)> = (0..n)
                .map(|i| ("k".repeat(i), if i % 2 == 0 { String::new() } else { format!("v{i}") }))
                .collect();
            let labels = Labels::from_sorted(pairs.clone()).unwrap();
            assert_eq!(labels.len(), n);
            for (i, (key, value)) in pairs.iter().enumerate() {
                assert_eq!(labels.pair(i), (key.as_str(), value.as_str()));
                assert_eq!(labels.get(key), Some(value.as_str()), "{key:?} among {n}");
            }
            for absent in ["a", "j", "kx", "l", &"k".repeat(n)] {
                assert_eq!(labels.get(absent), None, "{absent:?} among {n}");
            }
        }
        let labels = Labels::from_sorted([("a".into(), "1".into()), ("b".into(), "".into())]);
        assert_eq!(format!("{:?}", labels.unwrap()), r#"{"a": "1", "b": ""}"#);
    }

    #[test]
    fn the_projection_keeps_what_the_controllers_read_and_drops_the_rest() {
        let mut value = NodeFixture::tainted("w").provider_id("openstack:///abc").build();
        value["metadata"]["annotations"] =
            json!({PROVIDED_NODE_IP: "10.0.0.5", "node.alpha.kubernetes.io/ttl": "0"});
        value["metadata"]["labels"] =
            json!({"kubernetes.io/hostname": "w", "b.example/zone": "", "a.example/tier": "1"});
        value["metadata"]["uid"] = json!("u-1");
        value["metadata"]["resourceVersion"] = json!("42");
        value["status"] = json!({
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "conditions": [{"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"},
                {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated",
                    "message": "RouteController created a route"}],
            "images": [{"names": ["registry/image:tag"], "sizeBytes": 1}],
            "nodeInfo": {"kubeletVersion": "v1.31.0", "machineID": "m", "systemUUID": "s",
                "bootID": "b", "kernelVersion": "k", "osImage": "o", "containerRuntimeVersion": "c",
                "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
        });
        value["spec"]["podCIDRs"] = json!(["10.244.1.0/24", "fd00:10:244:1::/64"]);
        let mut node: CachedNode = serde_json::from_value(value).unwrap();
        project(&mut node);
        assert_eq!(node.name_any(), "w");
        let pod_cidrs = node.spec.as_ref().and_then(|s| s.pod_cidrs.as_deref());
        assert_eq!(
            pod_cidrs,
            Some(&["10.244.1.0/24".to_owned(), "fd00:10:244:1::/64".to_owned()][..])
        );
        assert_eq!(node.uid().as_deref(), Some("u-1"));
        assert_eq!(node.resource_version().as_deref(), Some("42"));
        let labels: Vec<_> = node.labels().collect();
        let sorted =
            [("a.example/tier", "1"), ("b.example/zone", ""), ("kubernetes.io/hostname", "w")];
        assert_eq!(labels, sorted);
        assert_eq!(node.label("kubernetes.io/hostname"), Some("w"));
        assert_eq!(node.label("b.example/zone"), Some(""));
        assert_eq!(node.label("kubernetes.io/os"), None);
        assert!(node.metadata.labels.is_none());
        assert_eq!(node.annotations().keys().collect::<Vec<_>>(), [PROVIDED_NODE_IP]);
        assert!(has_taint(&node, UNINITIALIZED_TAINT) && is_ready(&node));
        assert!(lookup(&node, None).is_ok());
        let status = serde_json::to_value(node.status.as_ref().unwrap()).unwrap();
        assert_eq!(
            status,
            json!({"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                "conditions": [{"type": "Ready", "status": "True"},
                    {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated"}]})
        );
    }
}
