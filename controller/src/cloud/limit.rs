//! One client-side limit on the CCM's OpenStack requests, shared by every controller: at most
//! `in_flight` requests at once and, when set, `per_second` a second (a token bucket holding
//! one second's worth, `crate::token_bucket`), so that a burst of Services reconciled in
//! parallel does not flood Octavia and Neutron. Requests wait in turn: each takes its slot in
//! the bucket's schedule when it asks, so none is starved by later ones.
//!
//! A request answered 429 (Too Many Requests) or 503 (Service Unavailable) was not carried
//! out; it is sent again after the answer's `Retry-After` (in seconds, at most
//! [`LONGEST_RETRY_AFTER`]) or else a jittered exponential backoff ([`Backoff`]), at most
//! [`RETRIES`] times, and every attempt waits for the limit again. osauth's errors carry
//! neither the status nor the headers, so every request is sent through [`Noted`], which
//! notes a throttled answer for the call that made it ([`observe`]).

use std::cell::Cell;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use osauth::services::ServiceType;
use osauth::{Error, ServiceRequestBuilder};
use reqwest::Response;
use serde::de::DeserializeOwned;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::token_bucket::Bucket;

/// The longest `Retry-After` obeyed; a longer one waits this long.
pub const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How often a throttled request is sent again before its error is returned.
pub const RETRIES: u32 = 4;

/// The limit's settings (`--openstack-requests-in-flight`, `--openstack-requests-per-second`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Requests in flight at once.
    pub in_flight: usize,
    /// Requests a second (the bucket holds one second's worth); 0: no limit of the rate, the
    /// requests in flight alone bound it.
    pub per_second: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { in_flight: 16, per_second: 0.0 }
    }
}

/// The limit itself: a semaphore for the requests in flight and a token bucket for the rate.
#[derive(Debug)]
pub struct Limit {
    in_flight: Semaphore,
    bucket: Option<Mutex<Bucket>>,
}

impl Limit {
    /// A limit with these settings (at least one request in flight).
    pub fn new(settings: Settings) -> Limit {
        let per_second = settings.per_second;
        // At least one token, else a rate under one a second would admit nothing.
        let burst = per_second.ceil().clamp(1.0, f64::from(u32::MAX)) as u32;
        Limit {
            in_flight: Semaphore::new(settings.in_flight.max(1)),
            bucket: (per_second > 0.0).then(|| Mutex::new(Bucket::new(per_second, burst))),
        }
    }

    /// Waits for this request's turn; it may be sent while the permit is held.
    pub async fn acquire(&self) -> SemaphorePermit<'_> {
        let wait = self.bucket.as_ref().map_or(Duration::ZERO, |bucket| {
            bucket.lock().unwrap_or_else(PoisonError::into_inner).reserve(Instant::now())
        });
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        self.in_flight.acquire().await.expect("the limit's semaphore is never closed")
    }
}

/// The waits before sending a throttled request again: 1 s, 2 s, 4 s, 8 s, each with up to half
/// of it again at random, so that requests throttled together do not come back together.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backoff {
    attempt: u32,
}

impl Backoff {
    /// The wait before the next attempt, or `None` after [`RETRIES`] of them.
    pub fn next_wait(&mut self) -> Option<Duration> {
        if self.attempt >= RETRIES {
            return None;
        }
        let base = Duration::from_secs(1 << self.attempt);
        self.attempt += 1;
        let jitter = base.mul_f64(fastrand_half());
        Some(base + jitter)
    }
}

/// A number in [0, 0.5) from the clock's nanoseconds: jitter needs no better randomness.
fn fastrand_half() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    f64::from(nanos % 1_000_000) / 2_000_000.0
}

/// Whether an answer with this status was throttled (not carried out; to be sent again).
pub fn throttled(status: Option<u16>) -> bool {
    matches!(status, Some(429 | 503))
}

/// A throttled answer: its status and its `Retry-After`, when it gave one in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    /// 429 or 503.
    pub status: u16,
    /// Its `Retry-After` in seconds (at most [`LONGEST_RETRY_AFTER`]).
    pub retry_after: Option<Duration>,
}

tokio::task_local! {
    /// The last throttled answer of the call being made ([`observe`]).
    static ANSWER: Cell<Option<Throttled>>;
}

/// Runs one attempt of a call, and tells whether one of its answers was throttled.
pub async fn observe<F: Future>(attempt: F) -> (F::Output, Option<Throttled>) {
    ANSWER
        .scope(Cell::new(None), async {
            let output = attempt.await;
            (output, ANSWER.with(Cell::get))
        })
        .await
}

/// `fetch` and `send` as osauth has them, noting a throttled answer for [`observe`].
pub trait Noted {
    /// Sends the request and checks the answer (osauth's `send`).
    fn sent(self) -> impl Future<Output = Result<Response, Error>> + Send;
    /// Sends the request and reads the answer's JSON (osauth's `fetch`).
    fn fetched<T: DeserializeOwned + Send>(self) -> impl Future<Output = Result<T, Error>> + Send;
}

impl<S: ServiceType + Send> Noted for ServiceRequestBuilder<S> {
    async fn sent(self) -> Result<Response, Error> {
        let response = self.send_unchecked().await?;
        note(&response);
        osauth::client::check(response).await
    }

    async fn fetched<T: DeserializeOwned + Send>(self) -> Result<T, Error> {
        self.sent().await?.json::<T>().await.map_err(Error::from)
    }
}

/// Notes a throttled answer for [`observe`] (for requests sent unchecked).
pub(crate) fn note(response: &Response) {
    let status = response.status().as_u16();
    if !throttled(Some(status)) {
        return;
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).min(LONGEST_RETRY_AFTER));
    let _ = ANSWER.try_with(|a| a.set(Some(Throttled { status, retry_after })));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_beyond_one_second_of_requests_is_spread_at_the_rate() {
        let limit = Limit::new(Settings { in_flight: 100, per_second: 10.0 });
        let start = Instant::now();
        let mut sent = Vec::new();
        for _ in 0..30 {
            let _permit = limit.acquire().await;
            sent.push(start.elapsed());
        }
        // The first ten at once (the bucket's one second), then one every 100 ms.
        assert!(sent[..10].iter().all(|d| d.is_zero()), "{sent:?}");
        assert_eq!(sent[10], Duration::from_millis(100));
        assert_eq!(sent[29], Duration::from_millis(2000));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_of_zero_limits_nothing_but_the_requests_in_flight() {
        let limit = Limit::new(Settings { in_flight: 4, per_second: 0.0 });
        let start = Instant::now();
        for _ in 0..1000 {
            let _permit = limit.acquire().await;
        }
        assert!(start.elapsed().is_zero());
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_than_in_flight_requests_are_held_at_once() {
        let limit = std::sync::Arc::new(Limit::new(Settings { in_flight: 2, per_second: 1000.0 }));
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let now = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let (limit, peak, now) = (limit.clone(), peak.clone(), now.clone());
                tokio::spawn(async move {
                    let _permit = limit.acquire().await;
                    let n = now.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    peak.fetch_max(n, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        let start = Instant::now();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(start.elapsed(), Duration::from_millis(150), "three rounds of two");
    }

    #[test]
    fn backoff_doubles_with_jitter_and_gives_up() {
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = std::iter::from_fn(|| backoff.next_wait()).collect();
        assert_eq!(waits.len(), RETRIES as usize);
        for (i, wait) in waits.iter().enumerate() {
            let base = Duration::from_secs(1 << i);
            assert!(*wait >= base && *wait < base.mul_f64(1.5), "{i}: {wait:?}");
        }
        assert!(throttled(Some(429)) && throttled(Some(503)));
        assert!(!throttled(Some(500)) && !throttled(Some(409)) && !throttled(None));
    }
}
