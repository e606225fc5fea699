//! The one request classifier of the scale benchmark, shared by the replay (replay.rs) and the
//! counting proxy in front of the real services (real.rs), and the counter both record into.
//!
//! Paths are in the replay's layout, which the proxy reproduces: Keystone under `/identity`,
//! Nova under `/compute` (its endpoint `/compute/v2.1`), Neutron under `/network`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::Method;

/// Operations not named here: the replay answers them 404, the proxy forwards them.
pub(crate) const OTHER: &str = "other";

/// The operation name of a request: `identity/authenticate`, `compute/server_get`, … or
/// [`OTHER`]. `path` is the URL path (a trailing slash is ignored), `query` its parameters.
pub(crate) fn classify(
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
) -> &'static str {
    let path = path.trim_end_matches('/');
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        (&Method::POST, ["identity", "v3", "auth", "tokens"]) => "identity/authenticate",
        (&Method::GET, ["compute", "v2.1"]) => "compute/version_discovery",
        (&Method::GET, ["network"]) => "network/version_discovery",
        (&Method::GET, ["compute", "v2.1", "servers", "detail"]) => {
            if query.contains_key("name") {
                "compute/server_list_by_name"
            } else {
                "compute/server_list_page"
            }
        }
        (&Method::GET, ["compute", "v2.1", "servers", _]) => "compute/server_get",
        (&Method::GET, ["compute", "v2.1", "flavors", _]) => "compute/flavor_get",
        (&Method::GET, ["network", "v2.0", "ports"]) => {
            if query.contains_key("device_id") {
                "network/port_list_by_device"
            } else {
                "network/port_list_all"
            }
        }
        _ => OTHER,
    }
}

/// One request as counted: a fixed operation name and when it arrived.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    /// `identity/authenticate`, `compute/server_get`, `compute/server_list_by_name`, …
    pub(crate) operation: &'static str,
    /// Arrival time.
    pub(crate) at: Instant,
}

/// Every request seen, in order, the method and path of the unclassified ones, and how long
/// the server side took per operation.
#[derive(Default)]
pub(crate) struct Counter {
    hits: Mutex<Vec<Hit>>,
    others: Mutex<Vec<String>>,
    timings: Mutex<BTreeMap<&'static str, (usize, Duration)>>,
}

impl Counter {
    /// Counts one request (`request`, e.g. `GET /x`, is kept only when it is [`OTHER`]).
    pub(crate) fn record(&self, operation: &'static str, request: impl FnOnce() -> String) {
        if operation == OTHER {
            self.others.lock().unwrap_or_else(PoisonError::into_inner).push(request());
        }
        let hit = Hit { operation, at: Instant::now() };
        self.hits.lock().unwrap_or_else(PoisonError::into_inner).push(hit);
    }

    /// Every request so far.
    pub(crate) fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Requests per operation since `since` (index into [`Counter::hits`]).
    pub(crate) fn counts(&self, since: usize) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for hit in self.hits().iter().skip(since) {
            *out.entry(hit.operation).or_default() += 1;
        }
        out
    }

    /// Adds one answer's time (request in → response body ready) to `operation`'s total.
    pub(crate) fn time(&self, operation: &'static str, took: Duration) {
        let mut timings = self.timings.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = timings.entry(operation).or_default();
        entry.0 += 1;
        entry.1 += took;
    }

    /// The mean answer time per operation so far.
    pub(crate) fn mean_times(&self) -> BTreeMap<&'static str, Duration> {
        let timings = self.timings.lock().unwrap_or_else(PoisonError::into_inner);
        timings.iter().map(|(op, (n, total))| (*op, *total / (*n).max(1) as u32)).collect()
    }

    /// The method and path of every unclassified request so far.
    pub(crate) fn others(&self) -> Vec<String> {
        self.others.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}
