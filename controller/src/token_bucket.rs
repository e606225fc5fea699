//! The token bucket of both client-side limits (Kubernetes requests, kube/rate_limit.rs; and
//! OpenStack requests, cloud/limit.rs), with golang.org/x/time/rate's arithmetic: the count may
//! go negative, and then it is the debt of the requests already admitted, so each waiter's due
//! time is exact and they are served in the order they asked.

use std::time::Duration;

use tokio::time::Instant;

/// `burst` tokens, full at first, refilled at `per_second`.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    per_second: f64,
    burst: u32,
    tokens: f64,
    last: Option<Instant>,
}

impl Bucket {
    pub(crate) fn new(per_second: f64, burst: u32) -> Self {
        Bucket { per_second, burst, tokens: f64::from(burst), last: None }
    }

    /// Takes one token at `now`; returns how long the request has to wait for it.
    pub(crate) fn reserve(&mut self, now: Instant) -> Duration {
        if let Some(last) = self.last {
            let refill = now.saturating_duration_since(last).as_secs_f64() * self.per_second;
            self.tokens = (self.tokens + refill).min(f64::from(self.burst));
        }
        self.last = Some(self.last.map_or(now, |last| last.max(now)));
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.per_second)
        }
    }
}
