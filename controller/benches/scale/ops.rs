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
            } else if query.contains_key("changes-since") {
                "compute/server_list_changes"
            } else {
                "compute/server_list_page"
            }
        }
        (&Method::GET, ["compute", "v2.1", "servers", _]) => "compute/server_get",
        (&Method::GET, ["compute", "v2.1", "flavors", _]) => "compute/flavor_get",
        (&Method::GET, ["network", "v2.0", "ports"]) => {
            if query.contains_key("device_id") {
                "network/port_list_by_device"
            } else if query.contains_key("fixed_ips") {
                "network/port_list_by_address"
            } else {
                "network/port_list_all"
            }
        }
        (_, ["load-balancer", ..]) => load_balancer(method, &parts[1..], query),
        (_, ["network", "v2.0", resource, rest @ ..]) => network(method, resource, rest),
        _ => OTHER,
    }
}

/// Octavia (`/load-balancer`): `load-balancer/<object>_<verb>`.
fn load_balancer(method: &Method, parts: &[&str], query: &HashMap<String, String>) -> &'static str {
    let lbaas = match parts {
        [] => return "load-balancer/version_discovery",
        ["v2", "lbaas", rest @ ..] => rest,
        _ => return OTHER,
    };
    match (method, lbaas) {
        // The waits' one list of the project's load balancers, or a lookup by name.
        (&Method::GET, ["loadbalancers"]) if query.contains_key("project_id") => {
            "load-balancer/loadbalancer_list_project"
        }
        (&Method::GET, ["loadbalancers"]) => "load-balancer/loadbalancer_list",
        (&Method::POST, ["loadbalancers"]) => "load-balancer/loadbalancer_create",
        (&Method::GET, ["loadbalancers", _]) => "load-balancer/loadbalancer_get",
        (&Method::PUT, ["loadbalancers", _]) => "load-balancer/loadbalancer_update",
        (&Method::DELETE, ["loadbalancers", _]) => "load-balancer/loadbalancer_delete",
        (&Method::GET, ["listeners"]) => "load-balancer/listener_list",
        (&Method::POST, ["listeners"]) => "load-balancer/listener_create",
        (&Method::PUT, ["listeners", _]) => "load-balancer/listener_update",
        (&Method::DELETE, ["listeners", _]) => "load-balancer/listener_delete",
        (&Method::GET, ["pools"]) => "load-balancer/pool_list",
        (&Method::POST, ["pools"]) => "load-balancer/pool_create",
        (&Method::PUT, ["pools", _]) => "load-balancer/pool_update",
        (&Method::DELETE, ["pools", _]) => "load-balancer/pool_delete",
        (&Method::GET, ["pools", _, "members"]) => "load-balancer/member_list",
        (&Method::PUT, ["pools", _, "members"]) => "load-balancer/members_replace",
        (&Method::GET, ["healthmonitors", _]) => "load-balancer/monitor_get",
        (&Method::POST, ["healthmonitors"]) => "load-balancer/monitor_create",
        (&Method::PUT, ["healthmonitors", _]) => "load-balancer/monitor_update",
        (&Method::DELETE, ["healthmonitors", _]) => "load-balancer/monitor_delete",
        _ => OTHER,
    }
}

/// The rest of Neutron: floating IPs, security groups and rules, ports by update, subnets,
/// routers and their extra routes, extensions.
fn network(method: &Method, resource: &str, rest: &[&str]) -> &'static str {
    match (method, resource, rest) {
        (&Method::GET, "extensions", []) => "network/extension_list",
        (&Method::GET, "routers", [_]) => "network/router_get",
        (&Method::PUT, "routers", [_]) => "network/router_update",
        (&Method::PUT, "routers", [_, "add_extraroutes"]) => "network/router_add_extraroutes",
        (&Method::PUT, "routers", [_, "remove_extraroutes"]) => "network/router_remove_extraroutes",
        (&Method::GET, "ports", [_]) => "network/port_get",
        (&Method::GET, "floatingips", []) => "network/floatingip_list",
        (&Method::POST, "floatingips", []) => "network/floatingip_create",
        (&Method::PUT, "floatingips", [_]) => "network/floatingip_update",
        (&Method::PUT, "floatingips", [_, "tags"]) => "network/floatingip_tag",
        (&Method::DELETE, "floatingips", [_]) => "network/floatingip_delete",
        (&Method::GET, "security-groups", []) => "network/security_group_list",
        (&Method::POST, "security-groups", []) => "network/security_group_create",
        (&Method::PUT, "security-groups", [_, "tags"]) => "network/security_group_tag",
        (&Method::DELETE, "security-groups", [_]) => "network/security_group_delete",
        (&Method::POST, "security-group-rules", []) => "network/security_group_rule_create",
        (&Method::DELETE, "security-group-rules", [_]) => "network/security_group_rule_delete",
        (&Method::PUT, "ports", [_]) => "network/port_update",
        (&Method::GET, "subnets", []) => "network/subnet_list",
        _ => OTHER,
    }
}

/// One request as counted: a fixed operation name, when it arrived and how it was answered.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    /// `identity/authenticate`, `compute/server_get`, `compute/server_list_by_name`, …
    pub(crate) operation: &'static str,
    /// Arrival time.
    pub(crate) at: Instant,
    /// The answer's status code, once it is in (the proxy's; the replay records none).
    pub(crate) status: Option<u16>,
}

/// Every request seen, in order, the method and path of the unclassified ones, and how long
/// the server side took per operation.
#[derive(Default)]
pub(crate) struct Counter {
    hits: Mutex<Vec<Hit>>,
    others: Mutex<Vec<String>>,
    timings: Mutex<BTreeMap<&'static str, (usize, Duration)>>,
    /// The last `X-Auth-Token` a request carried (the soak revokes it; never printed).
    token: Mutex<Option<String>>,
}

impl Counter {
    /// Counts one request (`request`, e.g. `GET /x`, is kept only when it is [`OTHER`]): its
    /// index, for [`Counter::answered_with`].
    pub(crate) fn record(
        &self,
        operation: &'static str,
        request: impl FnOnce() -> String,
    ) -> usize {
        if operation == OTHER {
            self.others.lock().unwrap_or_else(PoisonError::into_inner).push(request());
        }
        let hit = Hit { operation, at: Instant::now(), status: None };
        let mut hits = self.hits.lock().unwrap_or_else(PoisonError::into_inner);
        hits.push(hit);
        hits.len() - 1
    }

    /// Notes the status code request `index` was answered with.
    #[allow(dead_code, reason = "used by the proxy (real.rs), not by the replay")]
    pub(crate) fn answered_with(&self, index: usize, status: u16) {
        if let Some(hit) = self.hits.lock().unwrap_or_else(PoisonError::into_inner).get_mut(index) {
            hit.status = Some(status);
        }
    }

    /// Answers with status `code` since `since` (index into [`Counter::hits`]).
    #[allow(dead_code, reason = "used by the load-balancer benchmark, not by every bench")]
    pub(crate) fn answers(&self, code: u16, since: usize) -> usize {
        self.hits().iter().skip(since).filter(|h| h.status == Some(code)).count()
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

    /// Remembers the token a request carried.
    pub(crate) fn note_token(&self, token: &str) {
        *self.token.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.to_owned());
    }

    /// The last token a request carried.
    #[allow(dead_code, reason = "used by benches/soak, not by every bench that includes this file")]
    pub(crate) fn last_token(&self) -> Option<String> {
        self.token.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// How many answers of `operation` came back from the real service so far (counted when
    /// the answer is in, before the controller gets it).
    #[allow(dead_code, reason = "used by benches/soak, not by every bench that includes this file")]
    pub(crate) fn answered(&self, operation: &str) -> usize {
        let timings = self.timings.lock().unwrap_or_else(PoisonError::into_inner);
        timings.get(operation).map_or(0, |(n, _)| *n)
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
