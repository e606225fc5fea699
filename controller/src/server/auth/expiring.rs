//! A bounded map whose entries expire: the API server's answers kept for a few seconds, so that
//! a scrape every 15 s does not cost a TokenReview and a SubjectAccessReview each time.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// At most `capacity` entries, each until its own deadline (tokio's clock, which tests pause).
#[derive(Debug)]
pub(crate) struct Expiring<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Expiring<K, V> {
    /// An empty map holding at most `capacity` entries.
    pub(crate) fn new(capacity: usize) -> Self {
        Expiring { entries: Mutex::new(HashMap::new()), capacity: capacity.max(1) }
    }

    /// The value under `key`, unless it has expired (then it is dropped).
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (value, deadline) = entries.get(key)?;
        if Instant::now() < *deadline {
            return Some(value.clone());
        }
        entries.remove(key);
        None
    }

    /// Keeps `value` under `key` for `ttl`. When full, expired entries go first, then the one
    /// that would expire soonest: memory stays bounded whatever tokens a client sends.
    pub(crate) fn insert(&self, key: K, value: V, ttl: Duration) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, deadline)| now < *deadline);
            if entries.len() >= self.capacity {
                let soonest = entries.iter().min_by_key(|(_, (_, deadline))| *deadline);
                if let Some(soonest) = soonest.map(|(k, _)| k.clone()) {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    /// How many entries are held (expired ones included until they are dropped).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_kept_for_its_ttl_and_no_longer() {
        let cache = Expiring::new(8);
        cache.insert("allowed", true, Duration::from_secs(10));
        cache.insert("denied", false, Duration::from_secs(5));
        tokio::time::advance(Duration::from_millis(4_999)).await;
        assert_eq!((cache.get(&"allowed"), cache.get(&"denied")), (Some(true), Some(false)));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(cache.get(&"denied"), None, "expired at its deadline");
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(cache.get(&"allowed"), None);
        assert_eq!(cache.len(), 0, "an expired entry read is dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_the_expired_then_the_soonest_to_expire() {
        let cache = Expiring::new(3);
        cache.insert(1, 'a', Duration::from_secs(1));
        cache.insert(2, 'b', Duration::from_secs(30));
        cache.insert(3, 'c', Duration::from_secs(20));
        tokio::time::advance(Duration::from_secs(2)).await;
        cache.insert(4, 'd', Duration::from_secs(10));
        assert_eq!(cache.get(&1), None, "the expired one made room");
        assert_eq!(cache.len(), 3);
        cache.insert(5, 'e', Duration::from_secs(10));
        assert_eq!(cache.get(&4), None, "the soonest to expire made room");
        assert_eq!(
            (cache.get(&2), cache.get(&3), cache.get(&5)),
            (Some('b'), Some('c'), Some('e'))
        );
        // Replacing a key never evicts another.
        cache.insert(5, 'f', Duration::from_secs(10));
        assert_eq!((cache.len(), cache.get(&5)), (3, Some('f')));
        for n in 10..1_000 {
            cache.insert(n, 'x', Duration::from_secs(60));
        }
        assert_eq!(cache.len(), 3, "bounded whatever is inserted");
    }
}
