//! Client-side rate limit of Kubernetes API requests (`--kube-api-qps`, `--kube-api-burst`), as client-go's.
//!
//! client-go (`rest.RESTClientFor`) puts `flowcontrol.NewTokenBucketRateLimiter(qps, burst)` in
//! front of every request of a client: `golang.org/x/time/rate`, a bucket of `burst` tokens that
//! starts full and refills at `qps` per second; each request takes one token and, when the bucket
//! is empty, waits until its token is due. The flag values are read as client-go reads them:
//! qps 0 → 5 and burst 0 → 10 (its `DefaultQPS`/`DefaultBurst`); a negative qps turns the limit
//! off. [`RateLimit`] is a tower [`Layer`] over the kube client's whole service stack. The client
//! wraps that stack in a `Buffer` whose one worker drives `poll_ready`, so a request that has to
//! wait holds back the ones queued behind it, in order, as client-go's blocking `Wait` does.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

use crate::token_bucket::Bucket;

/// client-go's `rest.DefaultQPS`, used for `--kube-api-qps=0`.
pub(crate) const DEFAULT_QPS: f32 = 5.0;
/// client-go's `rest.DefaultBurst`, used for `--kube-api-burst=0`.
pub(crate) const DEFAULT_BURST: u32 = 10;

/// A limit of `qps` requests per second on average and `burst` at once; a [`Layer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RateLimit {
    qps: f64,
    burst: u32,
}

impl RateLimit {
    /// The limit for `--kube-api-qps`/`--kube-api-burst` as client-go reads them: a 0 takes
    /// client-go's default (5 / 10); a negative (or NaN or infinite) qps means no limit (`None`).
    pub(crate) fn from_flags(qps: f32, burst: u32) -> Option<Self> {
        let qps = if qps == 0.0 { DEFAULT_QPS } else { qps };
        let burst = if burst == 0 { DEFAULT_BURST } else { burst };
        (qps > 0.0 && qps.is_finite()).then_some(RateLimit { qps: f64::from(qps), burst })
    }

    /// Requests per second on average.
    pub(crate) fn qps(&self) -> f64 {
        self.qps
    }

    /// Requests admitted at once after a quiet period.
    pub(crate) fn burst(&self) -> u32 {
        self.burst
    }
}

impl<S> Layer<S> for RateLimit {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited { inner, bucket: Bucket::new(self.qps, self.burst), state: State::Idle }
    }
}

enum State {
    /// No token held: the next `poll_ready` reserves one.
    Idle,
    /// A token is reserved and due at the sleep's deadline.
    Waiting(Pin<Box<Sleep>>),
    /// The token is due: the inner service's readiness decides.
    Admitted,
}

/// A service that admits requests at the pace of its [`RateLimit`].
pub(crate) struct RateLimited<S> {
    inner: S,
    bucket: Bucket,
    state: State,
}

impl<S> std::fmt::Debug for RateLimited<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimited").field("bucket", &self.bucket).finish_non_exhaustive()
    }
}

impl<S: Service<Req>, Req> Service<Req> for RateLimited<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        loop {
            match &mut self.state {
                State::Idle => {
                    let now = Instant::now();
                    let wait = self.bucket.reserve(now);
                    self.state = if wait.is_zero() {
                        State::Admitted
                    } else {
                        State::Waiting(Box::pin(tokio::time::sleep_until(now + wait)))
                    };
                }
                State::Waiting(sleep) => {
                    ready!(sleep.as_mut().poll(cx));
                    self.state = State::Admitted;
                }
                State::Admitted => return self.inner.poll_ready(cx),
            }
        }
    }

    fn call(&mut self, request: Req) -> S::Future {
        // `poll_ready` admitted this request; the next one reserves its own token.
        self.state = State::Idle;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::time::Duration;

    use tower::{ServiceExt as _, service_fn};

    use super::*;

    fn limited(
        qps: f32,
        burst: u32,
    ) -> RateLimited<impl Service<u32, Response = u32, Error = Infallible>> {
        let limit = RateLimit::from_flags(qps, burst).expect("a positive qps limits");
        limit.layer(service_fn(|n: u32| async move { Ok::<_, Infallible>(n) }))
    }

    /// Sends `count` requests one after another; the virtual time each was admitted at.
    async fn admitted_at(
        service: &mut RateLimited<impl Service<u32, Response = u32, Error = Infallible>>,
        count: u32,
    ) -> Vec<Duration> {
        let start = Instant::now();
        let mut times = Vec::new();
        for n in 0..count {
            let ready = tokio::time::timeout(Duration::from_secs(60), service.ready());
            let svc = ready.await.expect("admitted within a minute").expect("infallible");
            assert_eq!(svc.call(n).await.expect("infallible"), n);
            times.push(start.elapsed());
        }
        times
    }

    fn ms(list: &[u64]) -> Vec<Duration> {
        list.iter().copied().map(Duration::from_millis).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn burst_requests_pass_at_once_and_the_next_waits_one_over_qps() {
        let mut service = limited(4.0, 3);
        assert_eq!(admitted_at(&mut service, 5).await, ms(&[0, 0, 0, 250, 500]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_period_refills_the_bucket_up_to_burst_only() {
        let mut service = limited(2.0, 2);
        assert_eq!(admitted_at(&mut service, 2).await, ms(&[0, 0]));
        // 10 s at 2 qps would be 20 tokens; the bucket holds 2.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(admitted_at(&mut service, 4).await, ms(&[0, 0, 500, 1000]));
        // Half a token's time: the next request waits for the other half.
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(admitted_at(&mut service, 1).await, ms(&[250]));
    }

    /// The whole client against the wire-level fake: 7 GETs at once with burst 3 and 2 qps.
    #[tokio::test(start_paused = true)]
    async fn a_burst_beyond_the_limit_reaches_the_api_server_spread_over_time() {
        use k8s_openapi::api::core::v1::Node;

        let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
        fake.create("v1", "nodes", "", serde_json::json!({"metadata": {"name": "a"}}));
        let config = ::kube::Config::new(fake.url().parse().unwrap());
        let client = crate::kube::build(
            config,
            RateLimit::from_flags(2.0, 3),
            crate::kube::Refused::shared(),
        )
        .unwrap();
        let nodes: ::kube::Api<Node> = ::kube::Api::all(client);
        let start = Instant::now();
        let gets = (0..7).map(|_| async {
            nodes.get("a").await.unwrap();
            start.elapsed()
        });
        let all = futures::future::join_all(gets);
        let mut done = tokio::time::timeout(Duration::from_secs(60), all)
            .await
            .expect("seven requests within 60 s (virtual time)");
        done.sort();
        assert_eq!(fake.requests().len(), 7);
        assert!(done[..3].iter().all(|t| *t < Duration::from_millis(500)), "{done:?}");
        for (k, t) in done.iter().enumerate().skip(3) {
            let due = Duration::from_millis(500) * u32::try_from(k - 2).unwrap();
            assert!(*t >= due, "request {k} done at {t:?}, before its token at {due:?}: {done:?}");
        }
    }

    #[test]
    fn flag_values_are_read_as_client_go_reads_them() {
        let limit = RateLimit::from_flags(20.0, 30).unwrap();
        assert_eq!((limit.qps(), limit.burst()), (20.0, 30));
        let defaults = RateLimit::from_flags(0.0, 0).unwrap();
        assert_eq!((defaults.qps(), defaults.burst()), (5.0, 10));
        assert_eq!(RateLimit::from_flags(-1.0, 30), None);
        assert_eq!(RateLimit::from_flags(f32::NAN, 30), None);
        assert_eq!(RateLimit::from_flags(f32::INFINITY, 30), None);
    }
}
