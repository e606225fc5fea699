//! One writer per load balancer: Services that share a load balancer are reconciled at the same
//! time (a node change wakes them all), and Octavia refuses every change but the first while the
//! load balancer is `PENDING_UPDATE` (409). So a reconcile holds the load balancer's turn from
//! reading its tree to the last change's `ACTIVE`, and the others wait for it instead of failing
//! and backing off. Only this process's reconciles are ordered: a 409 from anyone else is waited
//! out where the call is made (`changes::Changes::call`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OwnedMutexGuard;

/// The turns, by load balancer ID. An entry lives while someone holds or waits for its turn.
#[derive(Debug, Default)]
pub(crate) struct Turns(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

/// A held turn on one load balancer; dropping it lets the next reconcile in.
#[derive(Debug)]
pub(crate) struct Turn {
    _held: OwnedMutexGuard<()>,
}

impl Turns {
    /// Waits for load balancer `id`'s turn.
    pub(crate) async fn take(&self, id: &str) -> Turn {
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            // Entries nobody holds or waits for go (the map holds the only reference).
            map.retain(|_, lock| Arc::strong_count(lock) > 1);
            map.entry(id.to_owned()).or_default().clone()
        };
        Turn { _held: lock.lock_owned().await }
    }

    /// How many load balancers have an entry (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_second_writer_waits_for_the_first_and_other_load_balancers_do_not() {
        let turns = Arc::new(Turns::default());
        let first = turns.take("lb-1").await;
        let other = tokio::time::timeout(Duration::from_secs(1), turns.take("lb-2")).await;
        assert!(other.is_ok(), "another load balancer's turn must not wait");
        let waiting = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.take("lb-1").await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the second writer must wait for the first");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(1), waiting).await;
        assert!(second.is_ok(), "the second writer gets its turn once the first is done");
    }

    #[tokio::test]
    async fn turns_nobody_holds_are_forgotten() {
        let turns = Turns::default();
        for id in ["a", "b", "c"] {
            drop(turns.take(id).await);
        }
        let _held = turns.take("d").await;
        assert_eq!(turns.len(), 1, "only the held turn is kept");
    }
}
