//! The Node versions that this process's own initialization has already superseded, so that a
//! reconcile running on a cached copy older than its own write does not initialize again.
//!
//! The status patch's watch event queues a second reconcile; kube-runtime runs it on the cached
//! Node, which may not hold the final patch yet and still carries the uninitialized taint. That
//! copy re-ran both OpenStack calls and ended in a 409 (5% of nodes at N = 1,000; upstream's
//! k/k#75285). resourceVersions are opaque: a copy is known stale only when its version is one
//! we wrote over. See: issue 16.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::controllers::projection::CachedNode;
use kube::ResourceExt;

/// Node name → the resourceVersions our completed initialization replaced.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    stale: Mutex<HashMap<String, Vec<String>>>,
}

impl OwnWrites {
    /// Records that `name` was initialized over these versions, and forgets the nodes that
    /// are gone (`live` says which are not: deleted before the watch delivered our write), so
    /// that the map stays as small as the initializations in flight.
    pub(crate) fn record(&self, name: &str, replaced: Vec<String>, live: impl Fn(&str) -> bool) {
        let mut stale = self.stale.lock().unwrap_or_else(PoisonError::into_inner);
        stale.retain(|name, _| live(name));
        stale.insert(name.to_owned(), replaced);
    }

    /// True when `node` is a copy our own write has replaced. A newer copy ends the entry, so
    /// entries live only until the watch delivers our write.
    pub(crate) fn is_stale(&self, node: &CachedNode) -> bool {
        let mut stale = self.stale.lock().unwrap_or_else(PoisonError::into_inner);
        let name = node.name_any();
        let Some(versions) = stale.get(&name) else { return false };
        let version = node.resource_version();
        if version.is_some_and(|v| versions.contains(&v)) {
            return true;
        }
        stale.remove(&name);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(name: &str, version: &str) -> CachedNode {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "resourceVersion": version},
        }))
        .unwrap()
    }

    #[test]
    fn a_replaced_copy_is_stale_until_a_newer_one_and_gone_nodes_are_forgotten_on_record() {
        let writes = OwnWrites::default();
        writes.record("a", vec!["1".into(), "2".into()], |_| true);
        assert!(writes.is_stale(&copy("a", "2")));
        writes.record("b", vec!["7".into()], |_| true);
        // Node a is deleted before its watch event: the next record forgets it.
        writes.record("c", vec!["9".into()], |name| name != "a");
        assert!(!writes.is_stale(&copy("a", "2")), "a's entry was pruned");
        assert!(writes.is_stale(&copy("b", "7")));
        // A newer copy of b ends its entry.
        assert!(!writes.is_stale(&copy("b", "8")));
        assert!(!writes.is_stale(&copy("b", "7")));
    }
}
