//! Waiting for Octavia: a load balancer is locked while `PENDING_*`, so every change waits for
//! `ACTIVE` (or the load balancer's disappearance after a delete), with a bounded backoff.

use std::time::Duration;

use crate::cloud::load_balancing::Octavia;
use crate::cloud::octavia::{ACTIVE, ERROR, LoadBalancer};
use crate::cloud::{self, ErrorKind};

/// First poll, growth and the longest wait (a fully-populated create takes about 2 s on the
/// no-op drivers, about a minute with real amphorae).
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
    /// Still `PENDING_*` after [`LIMIT`].
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
    /// 404 after a delete.
    Gone,
}

/// Polls until load balancer `id` is `ACTIVE` and returns it.
pub(crate) async fn active<L: Octavia>(
    cloud: &L,
    id: &str,
    limit: Duration,
) -> Result<LoadBalancer, WaitError> {
    poll(cloud, id, limit, Until::Active).await.map(Option::unwrap_or_default)
}

/// Polls until load balancer `id` may be deleted (no longer `PENDING_*`).
pub(crate) async fn settled<L: Octavia>(
    cloud: &L,
    id: &str,
    limit: Duration,
) -> Result<LoadBalancer, WaitError> {
    poll(cloud, id, limit, Until::Settled).await.map(Option::unwrap_or_default)
}

/// Polls until load balancer `id` is gone (404).
pub(crate) async fn gone<L: Octavia>(
    cloud: &L,
    id: &str,
    limit: Duration,
) -> Result<(), WaitError> {
    poll(cloud, id, limit, Until::Gone).await.map(|_| ())
}

async fn poll<L: Octavia>(
    cloud: &L,
    id: &str,
    limit: Duration,
    until: Until,
) -> Result<Option<LoadBalancer>, WaitError> {
    let started = tokio::time::Instant::now();
    let mut step = FIRST;
    loop {
        let status = match cloud.load_balancer(id).await {
            Ok(lb) if until == Until::Active && lb.provisioning_status == ACTIVE => {
                return Ok(Some(lb));
            }
            Ok(lb)
                if until == Until::Settled && !lb.provisioning_status.starts_with("PENDING_") =>
            {
                return Ok(Some(lb));
            }
            Ok(lb) if until == Until::Active && lb.provisioning_status == ERROR => {
                return Err(WaitError::Failed { id: id.to_owned() });
            }
            Ok(lb) => lb.provisioning_status,
            Err(e) if until == Until::Gone && e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(WaitError::Cloud { id: id.to_owned(), source }),
        };
        if started.elapsed() >= limit {
            let seconds = limit.as_secs();
            return Err(WaitError::Pending { id: id.to_owned(), status, seconds });
        }
        tokio::time::sleep(step).await;
        step = (step * 3 / 2).min(MAX_STEP);
    }
}
