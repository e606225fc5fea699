//! What the service controller last told each Service about leaving it alone (not ours, class
//! not ours, a full shared load balancer, waiting for Octavia), so that it is told once per
//! change and not once per retry.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The last notice per Service (namespace/name): its reason and text.
#[derive(Debug, Default)]
pub(crate) struct Notices(Mutex<HashMap<String, (&'static str, String)>>);

impl Notices {
    /// True when (`reason`, `note`) differs from what `key` was last told; remembers it.
    pub(crate) fn is_news(&self, key: &str, reason: &'static str, note: &str) -> bool {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.get(key).is_some_and(|(r, n)| *r == reason && n == note) {
            return false;
        }
        map.insert(key.to_owned(), (reason, note.to_owned()));
        true
    }

    /// `key` was reconciled (or cleaned up): its next notice is news again.
    pub(crate) fn forget(&self, key: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_is_news_once_per_change_and_again_after_a_success() {
        let notices = Notices::default();
        assert!(notices.is_news("ns/web", "LoadBalancerNotOurs", "lb 1"));
        assert!(!notices.is_news("ns/web", "LoadBalancerNotOurs", "lb 1"), "a retry");
        assert!(notices.is_news("ns/api", "LoadBalancerNotOurs", "lb 1"), "another Service");
        assert!(notices.is_news("ns/web", "LoadBalancerNotOurs", "lb 2"), "a change");
        assert!(notices.is_news("ns/web", "SharedLoadBalancerFull", "lb 2"), "another reason");
        notices.forget("ns/web");
        assert!(notices.is_news("ns/web", "SharedLoadBalancerFull", "lb 2"));
    }
}
