//! The object versions this process's own writes have superseded, so that a reconcile running
//! on a cached copy older than its own write does not do the work again.
//!
//! A write's watch event queues a second reconcile; kube-runtime runs it on the cached object,
//! which may not hold the write yet. For a Node that copy still carried the uninitialized
//! taint: it re-ran both OpenStack calls and ended in a 409 (5% of nodes at N = 1,000;
//! upstream's k/k#75285; issue 16). For a Service it still lacked the finalizer (the guarded
//! add failed with 409 and went into the backoff) or still had it after the clean-up (which ran
//! again: its OpenStack reads, then a refused removal; issue 37). resourceVersions are opaque:
//! a copy is known stale only when its version is one we wrote over.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// One object's versions our writes replaced, and the one the last write made.
#[derive(Debug, Default)]
struct Entry {
    replaced: Vec<String>,
    latest: Option<String>,
}

/// Object key (a Node's name, a Service's `namespace/name`) → the versions our writes replaced.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    stale: Mutex<HashMap<String, Entry>>,
}

impl OwnWrites {
    /// Records a write to `key` made from the copy of version `read` that left version
    /// `written`: `read`, and the version our previous write to it made, are stale from now
    /// on. Forgets the objects that are gone (`live` says which are not: deleted before the
    /// watch delivered our write), so that the map stays as small as the writes in flight.
    pub(crate) fn wrote(
        &self,
        key: &str,
        read: Option<String>,
        written: Option<String>,
        live: impl Fn(&str) -> bool,
    ) {
        let mut stale = self.stale.lock().unwrap_or_else(PoisonError::into_inner);
        stale.retain(|key, _| live(key));
        let entry = stale.entry(key.to_owned()).or_default();
        for version in [read, entry.latest.take()].into_iter().flatten() {
            if !entry.replaced.contains(&version) {
                entry.replaced.push(version);
            }
        }
        entry.latest = written;
    }

    /// True when the copy of `key` at `version` is one our own writes have replaced. A newer
    /// copy ends the entry, so entries live only until the watch delivers our last write.
    pub(crate) fn is_stale(&self, key: &str, version: Option<String>) -> bool {
        let mut stale = self.stale.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = stale.get(key) else { return false };
        if version.is_some_and(|v| entry.replaced.contains(&v)) {
            return true;
        }
        stale.remove(key);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(version: &str) -> Option<String> {
        Some(version.to_owned())
    }

    #[test]
    fn a_replaced_copy_is_stale_until_a_newer_one_and_gone_objects_are_forgotten_on_write() {
        let writes = OwnWrites::default();
        writes.wrote("a", v("1"), v("2"), |_| true);
        writes.wrote("a", v("1"), v("3"), |_| true);
        assert!(writes.is_stale("a", v("1")), "the copy read");
        assert!(writes.is_stale("a", v("2")), "what our first write made, replaced by the second");
        writes.wrote("b", v("7"), v("8"), |_| true);
        // Object a is deleted before its watch event: the next write forgets it.
        writes.wrote("c", v("9"), v("10"), |key| key != "a");
        assert!(!writes.is_stale("a", v("2")), "a's entry was pruned");
        assert!(writes.is_stale("b", v("7")));
        // The copy our last write made ends b's entry.
        assert!(!writes.is_stale("b", v("8")));
        assert!(!writes.is_stale("b", v("7")));
        // So does a copy someone else wrote: theirs must be reconciled.
        assert!(!writes.is_stale("c", v("11")));
        assert!(!writes.is_stale("c", v("9")));
    }
}
