//! Which requests the front answers late, fails or holds: the [`Delay`] policies, and the
//! request parsing and dice they choose with.

use std::time::Duration;

use hyper::StatusCode;
use tokio::time::Instant;

#[cfg(doc)]
use super::KubeFront;
use super::fault::{Fault, Scope};

/// Which requests the front answers late, and how late, or fails; chosen when a request
/// arrives, before it is forwarded (the answer comes late, as from a slow API server, or never
/// reaches the upstream, as with one that is down).
#[derive(Debug, Clone)]
pub struct Delay {
    policy: Policy,
    /// How long the policy holds once the front takes it; `None`: until it is replaced.
    lasting: Option<Duration>,
}

#[derive(Debug, Clone)]
enum Policy {
    None,
    Lists { resource: String, by: Duration },
    Random { max: Duration, state: u64 },
    WatchEvents { resource: String, by: Duration },
    Fault { scope: Scope, fault: Fault },
}

impl Delay {
    fn of(policy: Policy) -> Delay {
        Delay { policy, lasting: None }
    }

    /// Nothing is delayed.
    pub fn none() -> Delay {
        Delay::of(Policy::None)
    }

    /// Every LIST of `resource` (its plural, `"nodes"`), in any namespace and group, answers
    /// `by` late; its gets, watches and writes do not.
    pub fn lists_of(resource: &str, by: Duration) -> Delay {
        Delay::of(Policy::Lists { resource: resource.to_owned(), by })
    }

    /// Every LIST and WATCH of any resource answers late by a uniformly random `0..=max`: the
    /// n-th such request gets the n-th draw from `seed`, so a seed that failed replays (the
    /// order of concurrent requests aside).
    pub fn random(max: Duration, seed: u64) -> Delay {
        Delay::of(Policy::Random { max, state: seed })
    }

    /// Every WATCH of `resource` passes each piece of its answer (its events as they come)
    /// on `by` after the previous one: a cache fed by it lags the server by at least `by`, as
    /// one behind a busy API server does, and a client reads its own writes' answers before
    /// their events. The watch's headers, lists, gets and writes answer at once.
    pub fn watch_events_of(resource: &str, by: Duration) -> Delay {
        Delay::of(Policy::WatchEvents { resource: resource.to_owned(), by })
    }

    /// Every request (discovery and `/version` too) is answered by the front at once with the
    /// HTTP status `code` and the `Status` body kube-apiserver sends with it (`503`: reason
    /// `ServiceUnavailable`; `429` also `Retry-After: 1`), and never reaches the upstream, as
    /// when the API server is down behind its load balancer. A response streaming when the
    /// front takes this policy (an open watch) is cut short, as the server's going away cuts
    /// it. Ends when replaced (`front.set_delay(Delay::none())`, [`KubeFront::set_delay`]) or,
    /// with [`Delay::lasting`], by itself. Panics unless `code` is an error (400 to 599).
    pub fn fail(code: u16) -> Delay {
        Delay::fault(Scope::All, Fault::Fail(error_status(code)))
    }

    /// [`Delay::fail`] for the requests of `resource` only (its plural, `"leases"`): any verb,
    /// namespace, group or subresource of it; the others are forwarded.
    pub fn fail_of(resource: &str, code: u16) -> Delay {
        Delay::fault(Scope::Resource(resource.to_owned()), Fault::Fail(error_status(code)))
    }

    /// Every request is held, unanswered, while this policy holds, as by an API server that
    /// takes connections and never answers: a client sees its own timeout. When the policy is
    /// replaced or its [`Delay::lasting`] ends, a request still held (its client still waiting)
    /// goes on as the policy then in force says. Open responses are cut as with
    /// [`Delay::fail`].
    pub fn hang() -> Delay {
        Delay::fault(Scope::All, Fault::Hang)
    }

    /// [`Delay::hang`] for the requests of `resource` only.
    pub fn hang_of(resource: &str) -> Delay {
        Delay::fault(Scope::Resource(resource.to_owned()), Fault::Hang)
    }

    fn fault(scope: Scope, fault: Fault) -> Delay {
        Delay::of(Policy::Fault { scope, fault })
    }

    /// This policy for `duration` from when the front takes it ([`KubeFront::start`] or
    /// [`KubeFront::set_delay`]), then none: `Delay::fail(503).lasting(Duration::from_secs(60))`
    /// is a one-minute outage that ends by itself, whatever the test is waiting on meanwhile.
    #[must_use]
    pub fn lasting(self, duration: Duration) -> Delay {
        Delay { lasting: Some(duration), ..self }
    }

    /// The delay of one request (`target`: its path and query), `None` when it has none.
    pub(super) fn choose(&mut self, method: &str, target: &str) -> Option<Duration> {
        let read = read(method, target)?;
        match &mut self.policy {
            Policy::None | Policy::WatchEvents { .. } | Policy::Fault { .. } => None,
            Policy::Lists { resource, by } => (read == Read::List(resource)).then_some(*by),
            Policy::Random { max, state } => Some(uniform(splitmix(state), *max)),
        }
    }

    /// How late each piece of the answer to one request is passed on, `None` when at once.
    pub(super) fn each_piece(&self, method: &str, target: &str) -> Option<Duration> {
        let read = read(method, target)?;
        match &self.policy {
            Policy::WatchEvents { resource, by } => (read == Read::Watch(resource)).then_some(*by),
            _ => None,
        }
    }

    /// The fault injected in place of forwarding one request, if any.
    pub(super) fn fault_for(&self, target: &str) -> Option<Fault> {
        match &self.policy {
            Policy::Fault { scope, fault } => scope.hits(target).then_some(*fault),
            _ => None,
        }
    }
}

/// An HTTP error status, or a panic naming the code.
fn error_status(code: u16) -> StatusCode {
    StatusCode::from_u16(code)
        .ok()
        .filter(|status| status.is_client_error() || status.is_server_error())
        .unwrap_or_else(|| panic!("{code} is not an HTTP error status (400 to 599)"))
}

/// The policy in force and when it ends by itself.
#[derive(Debug)]
pub(super) struct Active {
    delay: Delay,
    pub(super) ends: Option<Instant>,
}

impl Active {
    /// `delay`, taken at `now`.
    pub(super) fn new(delay: Delay, now: Instant) -> Active {
        let ends = delay.lasting.map(|lasting| now + lasting);
        Active { delay, ends }
    }

    /// The policy in force at `now`: none once a lasting policy has ended.
    pub(super) fn at(&mut self, now: Instant) -> &mut Delay {
        if self.ends.is_some_and(|ends| ends <= now) {
            *self = Active::new(Delay::none(), now);
        }
        &mut self.delay
    }
}

/// What a GET reads.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Read<'a> {
    /// A collection of this resource.
    List(&'a str),
    /// Changes to this resource (a collection or one object).
    Watch(&'a str),
}

/// What a request reads, as kube-apiserver's request-info parser tells it: a GET of a
/// collection is a LIST, one with a true `watch` parameter or under the old `/watch/` prefix
/// a WATCH; a get, a write or discovery is `None`.
pub(super) fn read<'a>(method: &str, target: &'a str) -> Option<Read<'a>> {
    if method != "GET" {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&'a str> = path.split('/').filter(|part| !part.is_empty()).collect();
    let mut rest = match parts.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return None,
    };
    // The values Go's strconv.ParseBool reads as true, which the server uses.
    let truthy = ["watch=1", "watch=t", "watch=T", "watch=true", "watch=TRUE", "watch=True"];
    let mut watch = query.split('&').any(|pair| truthy.contains(&pair));
    if let ["watch", tail @ ..] = rest {
        watch = true;
        rest = tail;
    }
    // `namespaces/NAME/status` and `/finalize` are the Namespace's own subresources; any
    // other third segment is a resource in that namespace.
    if let ["namespaces", _, resource, ..] = rest
        && !matches!(*resource, "status" | "finalize")
    {
        rest = &rest[2..];
    }
    match rest {
        [resource, ..] if watch => Some(Read::Watch(resource)),
        [resource] => Some(Read::List(resource)),
        _ => None,
    }
}

/// One step of splitmix64: a tiny well-mixed generator, enough for a test's dice.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `x` scaled to `0..=max` in nanoseconds (a multiply and a shift: no modulo bias).
pub(super) fn uniform(x: u64, max: Duration) -> Duration {
    let span = u128::from(u64::try_from(max.as_nanos()).unwrap_or(u64::MAX)) + 1;
    let nanos = (u128::from(x) * span) >> 64;
    Duration::from_nanos(u64::try_from(nanos).expect("at most max, which fits"))
}
