//! Waiting for Octavia: a load balancer is locked while `PENDING_*`, so every change waits for
//! `ACTIVE` (or the load balancer's disappearance after a delete), with a bounded backoff.
//!
//! The waits of every reconcile share one schedule ([`Waits`]): a check is answered by a list of
//! the project's load balancers started after that waiter's previous check, made by whichever
//! waiter comes first and read by all the others. Fifty Services waiting at once cost one list
//! per tick instead of fifty GETs, and a single wait costs what its GETs did.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::cloud::load_balancing::Octavia;
use crate::cloud::octavia::{ACTIVE, ERROR, LoadBalancer};
use crate::cloud::{self, ErrorKind};

/// First check, growth and the longest step (a fully-populated create takes about 2 s on the
/// no-op drivers, about a minute with real amphorae). A wait starts right after the call that
/// made the load balancer busy, so its first check comes one step later.
const FIRST: Duration = Duration::from_millis(500);
const MAX_STEP: Duration = Duration::from_secs(10);
/// How long a load balancer may stay `PENDING_*` before the reconcile gives up (and retries).
pub(crate) const LIMIT: Duration = Duration::from_secs(600);

/// Why waiting ended without the state asked for.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WaitError {
    /// Octavia put the load balancer in `ERROR`.
    #[error("load balancer {id} went to provisioning status ERROR")]
    Failed { id: String },
    /// Still `PENDING_*` after the limit.
    #[error("load balancer {id} still {status} after {seconds} s")]
    Pending { id: String, status: String, seconds: u64 },
    /// Octavia could not be asked.
    #[error("asking Octavia for load balancer {id}")]
    Cloud {
        id: String,
        #[source]
        source: cloud::Error,
    },
}

/// What a wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// `ACTIVE` (`ERROR` fails the wait).
    Active,
    /// Not `PENDING_*`: `ACTIVE` or `ERROR`, both of which may be deleted.
    Settled,
    /// Not there any more, after a delete.
    Gone,
}

/// The schedule every wait of a controller shares, and how long a load balancer may stay
/// `PENDING_*`.
#[derive(Debug)]
pub(crate) struct Waits {
    limit: Duration,
    /// The newest list, kept while anyone waits.
    last: tokio::sync::Mutex<Option<Listed>>,
    waiting: AtomicUsize,
}

/// One list of a project's load balancers, by ID.
#[derive(Debug)]
struct Listed {
    started: Instant,
    project_id: String,
    by_id: HashMap<String, LoadBalancer>,
}

impl Default for Waits {
    fn default() -> Self {
        Self::new(LIMIT)
    }
}

impl Waits {
    /// Waits that give up after `limit` in a `PENDING_*` state.
    pub(crate) fn new(limit: Duration) -> Self {
        Self { limit, last: tokio::sync::Mutex::new(None), waiting: AtomicUsize::new(0) }
    }

    /// Until `lb` is `ACTIVE`: it, as Octavia has it then.
    pub(crate) async fn active<L: Octavia>(
        &self,
        cloud: &L,
        lb: &LoadBalancer,
    ) -> Result<LoadBalancer, WaitError> {
        self.poll(cloud, lb, Until::Active).await.map(Option::unwrap_or_default)
    }

    /// Until `lb` may be deleted (no longer `PENDING_*`).
    pub(crate) async fn settled<L: Octavia>(
        &self,
        cloud: &L,
        lb: &LoadBalancer,
    ) -> Result<LoadBalancer, WaitError> {
        self.poll(cloud, lb, Until::Settled).await.map(Option::unwrap_or_default)
    }

    /// Until `lb` is gone.
    pub(crate) async fn gone<L: Octavia>(
        &self,
        cloud: &L,
        lb: &LoadBalancer,
    ) -> Result<(), WaitError> {
        self.poll(cloud, lb, Until::Gone).await.map(|_| ())
    }

    async fn poll<L: Octavia>(
        &self,
        cloud: &L,
        lb: &LoadBalancer,
        until: Until,
    ) -> Result<Option<LoadBalancer>, WaitError> {
        let _waiting = Waiting::new(self);
        let id = lb.id.as_str();
        let started = Instant::now();
        let mut seen = started;
        let mut step = FIRST;
        loop {
            tokio::time::sleep(step).await;
            step = (step * 3 / 2).min(MAX_STEP);
            let (listed, now) = self
                .look(cloud, lb, seen)
                .await
                .map_err(|source| WaitError::Cloud { id: id.to_owned(), source })?;
            seen = listed;
            let status = match now {
                None if until == Until::Gone => return Ok(None),
                None => {
                    let what = format!("load balancer {id}");
                    let source = cloud::Error::NotFound { what };
                    return Err(WaitError::Cloud { id: id.to_owned(), source });
                }
                Some(lb) if until == Until::Active && lb.provisioning_status == ACTIVE => {
                    return Ok(Some(lb));
                }
                Some(lb)
                    if until == Until::Settled
                        && !lb.provisioning_status.starts_with("PENDING_") =>
                {
                    return Ok(Some(lb));
                }
                Some(lb) if until == Until::Active && lb.provisioning_status == ERROR => {
                    return Err(WaitError::Failed { id: id.to_owned() });
                }
                Some(lb) => lb.provisioning_status,
            };
            if started.elapsed() >= self.limit {
                let seconds = self.limit.as_secs();
                return Err(WaitError::Pending { id: id.to_owned(), status, seconds });
            }
        }
    }

    /// `lb` as a list started after `seen` has it (`None`: not there), and when that list
    /// started. A load balancer of no known project is asked for alone.
    async fn look<L: Octavia>(
        &self,
        cloud: &L,
        lb: &LoadBalancer,
        seen: Instant,
    ) -> cloud::Result<(Instant, Option<LoadBalancer>)> {
        if lb.project_id.is_empty() {
            let started = Instant::now();
            return match cloud.load_balancer(&lb.id).await {
                Ok(now) => Ok((started, Some(now))),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok((started, None)),
                Err(e) => Err(e),
            };
        }
        let mut last = self.last.lock().await;
        if let Some(listed) = last.as_ref()
            && listed.started > seen
            && listed.project_id == lb.project_id
        {
            return Ok((listed.started, listed.by_id.get(&lb.id).cloned()));
        }
        // The lock is held while listing: whoever else is due meanwhile reads this list.
        let started = Instant::now();
        let all = cloud.load_balancers_of(&lb.project_id).await?;
        let by_id = all.into_iter().map(|lb| (lb.id.clone(), lb)).collect();
        let listed = Listed { started, project_id: lb.project_id.clone(), by_id };
        let now = listed.by_id.get(&lb.id).cloned();
        *last = Some(listed);
        Ok((started, now))
    }
}

/// One wait in progress; the last one to end lets the list go.
struct Waiting<'a>(&'a Waits);

impl<'a> Waiting<'a> {
    fn new(waits: &'a Waits) -> Self {
        waits.waiting.fetch_add(1, Ordering::SeqCst);
        Self(waits)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.0.waiting.fetch_sub(1, Ordering::SeqCst) == 1
            && let Ok(mut last) = self.0.last.try_lock()
        {
            *last = None;
        }
    }
}

#[cfg(test)]
mod tests;
