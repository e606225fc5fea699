//! What the last full reconcile of each Service left, so that the periodic resync of a Service
//! whose inputs and load balancer did not change costs one read instead of the whole tree.
//!
//! "Did not change": the same fingerprint of everything the reconcile reads on the Kubernetes
//! side (the desired tree, the settings, the members, the source ranges, the requested floating
//! IP), and the same load balancer, `ACTIVE`, with the same `updated_at` — Octavia moves it
//! whenever anything under the load balancer changes, a user's edit included. Floating IPs and
//! security groups leave no such mark, so every [`FULL_EVERY`]th resync reads everything anyway.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use crate::cloud::octavia::{ACTIVE, LoadBalancer};

/// A full reconcile at least every this many resyncs (hourly at the default period).
pub(crate) const FULL_EVERY: u32 = 6;

/// The last full reconcile per Service (namespace/name).
#[derive(Debug, Default)]
pub(crate) struct Converged(Mutex<HashMap<String, Entry>>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    fingerprint: u64,
    load_balancer: String,
    updated_at: String,
    address: String,
    /// Resyncs answered from this entry since the last full reconcile.
    hits: u32,
}

/// A fingerprint of a reconcile's inputs (their `Debug` form: every field, maps sorted).
pub(crate) fn fingerprint(inputs: &impl std::fmt::Debug) -> u64 {
    let mut hasher = DefaultHasher::new();
    format!("{inputs:?}").hash(&mut hasher);
    hasher.finish()
}

impl Converged {
    /// The address the last full reconcile wrote, if nothing changed since and no full check
    /// is due; counts the hit.
    pub(crate) fn unchanged(
        &self,
        key: &str,
        fingerprint: u64,
        lb: &LoadBalancer,
    ) -> Option<String> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map.get_mut(key)?;
        let same = entry.fingerprint == fingerprint
            && entry.load_balancer == lb.id
            && lb.updated_at.as_deref() == Some(entry.updated_at.as_str())
            && lb.provisioning_status == ACTIVE;
        if !same || entry.hits + 1 >= FULL_EVERY {
            map.remove(key);
            return None;
        }
        entry.hits += 1;
        Some(entry.address.clone())
    }

    /// A full reconcile of `key` succeeded, leaving `lb` and `address`.
    pub(crate) fn record(&self, key: String, fingerprint: u64, lb: &LoadBalancer, address: &str) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(updated_at) = lb.updated_at.clone().filter(|_| lb.provisioning_status == ACTIVE)
        else {
            map.remove(&key);
            return;
        };
        let entry = Entry {
            fingerprint,
            load_balancer: lb.id.clone(),
            updated_at,
            address: address.to_owned(),
            hits: 0,
        };
        map.insert(key, entry);
    }

    /// The next reconcile of `key` is a full one (it failed, or the Service is going).
    pub(crate) fn forget(&self, key: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lb(updated_at: &str) -> LoadBalancer {
        LoadBalancer {
            id: "lb-1".into(),
            provisioning_status: ACTIVE.into(),
            updated_at: Some(updated_at.into()),
            ..LoadBalancer::default()
        }
    }

    #[test]
    fn an_unchanged_service_is_answered_from_the_entry_until_a_full_check_is_due() {
        let converged = Converged::default();
        converged.record("ns/a".into(), 7, &lb("t1"), "192.0.2.1");
        for _ in 1..FULL_EVERY {
            assert_eq!(converged.unchanged("ns/a", 7, &lb("t1")).as_deref(), Some("192.0.2.1"));
        }
        assert_eq!(converged.unchanged("ns/a", 7, &lb("t1")), None, "the full check is due");
        assert_eq!(converged.unchanged("ns/a", 7, &lb("t1")), None, "and stays due until recorded");
    }

    #[test]
    fn other_inputs_a_moved_load_balancer_or_a_failure_mean_a_full_reconcile() {
        let converged = Converged::default();
        converged.record("ns/a".into(), 7, &lb("t1"), "192.0.2.1");
        assert_eq!(converged.unchanged("ns/a", 8, &lb("t1")), None, "inputs changed");
        converged.record("ns/a".into(), 7, &lb("t1"), "192.0.2.1");
        assert_eq!(converged.unchanged("ns/a", 7, &lb("t2")), None, "Octavia moved it");
        converged.record("ns/a".into(), 7, &lb("t1"), "192.0.2.1");
        let pending = LoadBalancer { provisioning_status: "PENDING_UPDATE".into(), ..lb("t1") };
        assert_eq!(converged.unchanged("ns/a", 7, &pending), None, "not ACTIVE");
        converged.record("ns/a".into(), 7, &lb("t1"), "192.0.2.1");
        converged.forget("ns/a");
        assert_eq!(converged.unchanged("ns/a", 7, &lb("t1")), None, "forgotten");
        converged.record("ns/a".into(), 7, &LoadBalancer { updated_at: None, ..lb("t1") }, "x");
        assert_eq!(converged.unchanged("ns/a", 7, &lb("t1")), None, "no updated_at: no entry");
    }

    #[test]
    fn the_fingerprint_follows_every_input() {
        assert_eq!(fingerprint(&("a", 1)), fingerprint(&("a", 1)));
        assert_ne!(fingerprint(&("a", 1)), fingerprint(&("a", 2)));
    }
}
