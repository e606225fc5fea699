//! A recorded-response replay of Keystone v3, Nova (2.1–2.47+) and Neutron for N servers: the
//! bodies are the real stack's (fixtures/, captured once from scripts/openstack-up.sh), the
//! servers and ports are stamped out from them, and every request is counted by operation.
//!
//! What it serves, as the real services do: `POST /identity/v3/auth/tokens` (201, the token in
//! `X-Subject-Token`, a catalog pointing here), the version documents osauth discovers
//! (`/compute/v2.1`, `/network/`), `GET /compute/v2.1/servers/detail` (`name` as an anchored
//! regex, `limit`/`marker`, Nova's `max_limit` of 1000 with a `servers_links` next link, the
//! flavor embedded from microversion 2.47, its ID before; `changes-since` as Nova answers it,
//! see below), `GET /servers/{id}` (404 `itemNotFound`), `GET /flavors/{id}`,
//! `GET /network/v2.0/ports` (`device_id` or `fixed_ips=ip_address=…` repeated, `fields`),
//! `GET`/`PUT /ports/{id}` (allowed address pairs, revisions with `If-Match` and 412), and
//! one router [`ROUTER_ID`]: `GET`, `PUT` (routes, `If-Match`), `add_extraroutes` and
//! `remove_extraroutes`, and `GET /extensions` (the stack's, with `extraroute-atomic`).
//! Unlike the stack's Neutron (`max_routes = 30`), the router takes any number of routes.
//!
//! Time as Nova keeps it: server `i` of N was last updated `30 d × (N − i) / N` before the
//! replay started, whole seconds. `changes-since=T` answers the servers updated at or after T
//! (400 for a value that is no date-time, in Nova's words) and, as Nova does for a project
//! member, also the servers deleted since T with status `DELETED` and no addresses: the replay
//! keeps one, deleted a day before it started (fixtures/nova-changes-since.json, recorded).
//! Requests are named by ops.rs's classifier, the one the proxy in front of the real services
//! (real.rs) uses too.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::ops::{Counter, OTHER, classify};

/// The base URL the fixtures were normalized to (rewritten to the replay's own URL).
const RECORDED_BASE: &str = "http://replay.invalid";
/// Nova's default `[api] max_limit`: no page is larger, whatever `limit` asks.
const NOVA_MAX_LIMIT: usize = 1000;
/// The servers' `updated` times spread over this span before the replay's start.
const UPDATED_SPAN: jiff::SignedDuration = jiff::SignedDuration::from_hours(30 * 24);

fn fixture(name: &str) -> String {
    let path = format!("{}/benches/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

struct Shared {
    base: String,
    token: Value,
    compute_version: String,
    network_versions: String,
    flavor: String,
    /// The flavor as Nova renders it before 2.47 (an ID and a link).
    flavor_ref: Value,
    servers: Vec<Value>,
    /// Each server's `updated`, as Nova compares it with `changes-since`.
    updated: Vec<jiff::Timestamp>,
    /// Servers deleted before the start: only `changes-since` shows them.
    deleted: Vec<(jiff::Timestamp, Value)>,
    by_id: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    ports: Vec<Value>,
    /// Each port's index by its ID and by its fixed IP.
    port_by_id: HashMap<String, usize>,
    port_by_ip: HashMap<String, usize>,
    /// What route controllers change: each port's allowed address pairs and revision.
    port_state: Mutex<Vec<(Vec<Value>, u64)>>,
    /// The recorded router (its routes and revision live in `router`).
    router_body: Value,
    router: Mutex<(Vec<Value>, u64)>,
    extensions: String,
}

/// The ID of the replay's one router.
pub(crate) const ROUTER_ID: &str = "0000a0a0-5e1f-4c2d-9a7b-00000000a0a0";

/// A running replay server (its task ends with the runtime).
#[derive(Clone)]
pub(crate) struct Replay {
    addr: SocketAddr,
    /// Every request, by operation.
    pub(crate) counter: Arc<Counter>,
}

/// The ID of server `i` (stable, UUID-shaped).
pub(crate) fn server_id(i: usize) -> String {
    format!("{i:08x}-5e1f-4c2d-9a7b-{:012x}", i.wrapping_mul(2_654_435_761) & 0xffff_ffff_ffff)
}

/// The name of server `i`, which is also its node's name.
pub(crate) fn server_name(i: usize) -> String {
    format!("worker-{i:05}")
}

/// The fixed IP of server `i` (its port's, and its Nova address).
pub(crate) fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", 128 + (i >> 16) % 64, (i >> 8) & 0xff, i & 0xff)
}

impl Replay {
    /// Stamps out `n` servers and their ports from the recorded samples and starts serving.
    pub(crate) async fn start(n: usize) -> Replay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let base = format!("http://{addr}");
        let recorded = |name: &str| fixture(name).replace(RECORDED_BASE, &base);
        let server: Value = serde_json::from_str(&recorded("nova-server.json")).expect("JSON");
        let port: Value = serde_json::from_str(&recorded("neutron-port.json")).expect("JSON");
        let flavor = recorded("nova-flavor.json");
        let old: Value = serde_json::from_str(&recorded("nova-server-2.1.json")).expect("JSON");
        let flavor_ref = old["server"]["flavor"].clone();
        let network = server["server"]["addresses"]
            .as_object()
            .and_then(|a| a.keys().next().cloned())
            .expect("the recorded server has an address");
        let mut servers = Vec::with_capacity(n);
        let mut ports = Vec::with_capacity(n);
        let mut by_id = HashMap::with_capacity(n);
        let mut by_name = HashMap::with_capacity(n);
        let mut port_by_id = HashMap::with_capacity(n);
        let mut port_by_ip = HashMap::with_capacity(n);
        let started = jiff::Timestamp::now().round(jiff::Unit::Second).expect("whole seconds");
        let mut updated = Vec::with_capacity(n);
        for i in 0..n {
            let ago = UPDATED_SPAN * (n - i) as i32 / n as i32;
            let stamp = (started - ago).round(jiff::Unit::Second).expect("whole seconds");
            updated.push(stamp);
            let (id, name, addr) = (server_id(i), server_name(i), ip(i));
            let mut s = server["server"].clone();
            s["id"] = json!(id);
            s["name"] = json!(name);
            s["OS-EXT-SRV-ATTR:hostname"] = json!(name);
            s["created"] = json!(stamp.to_string());
            s["updated"] = json!(stamp.to_string());
            s["links"] = json!([{"rel": "self", "href": format!("{base}/compute/v2.1/servers/{id}")},
                {"rel": "bookmark", "href": format!("{base}/compute/servers/{id}")}]);
            let mut entry = s["addresses"][&network][0].clone();
            entry["addr"] = json!(addr);
            s["addresses"] = json!({ network.clone(): [entry] });
            servers.push(s);
            let mut p = port["port"].clone();
            let port_id = format!("{i:08x}-0b0b-4f0f-8c8c-{i:012x}");
            port_by_id.insert(port_id.clone(), i);
            port_by_ip.insert(addr.clone(), i);
            p["id"] = json!(port_id);
            p["device_id"] = json!(id);
            p["name"] = json!(format!("{name}-port"));
            p["fixed_ips"][0]["ip_address"] = json!(addr);
            // The recording's port is DOWN (the stack has no dataplane); a booted one is ACTIVE.
            p["status"] = json!("ACTIVE");
            ports.push(p);
            by_id.insert(id, i);
            by_name.insert(server_name(i), i);
        }
        let recorded_deleted: Value =
            serde_json::from_str(&recorded("nova-changes-since.json")).expect("JSON");
        let mut gone = recorded_deleted["servers"][0].clone();
        let deleted_at = started - jiff::SignedDuration::from_hours(24);
        gone["updated"] = json!(deleted_at.to_string());
        let mut router_body: Value =
            serde_json::from_str(&recorded("neutron-router.json")).expect("JSON");
        router_body["router"]["id"] = json!(ROUTER_ID);
        let revision = router_body["router"]["revision_number"].as_u64().unwrap_or(1);
        let extensions = recorded("neutron-extensions.json");
        let port_revision = port["port"]["revision_number"].as_u64().unwrap_or(1);
        let shared = Arc::new(Shared {
            token: serde_json::from_str(&recorded("keystone-token.json")).expect("JSON"),
            compute_version: recorded("nova-version.json"),
            network_versions: recorded("neutron-versions.json"),
            flavor,
            flavor_ref,
            base,
            servers,
            updated,
            deleted: vec![(deleted_at, gone)],
            by_id,
            by_name,
            port_state: Mutex::new(vec![(Vec::new(), port_revision); ports.len()]),
            ports,
            port_by_id,
            port_by_ip,
            router_body,
            router: Mutex::new((Vec::new(), revision)),
            extensions,
        });
        let counter = Arc::new(Counter::default());
        let app = Router::new().fallback(handle).with_state((shared, counter.clone()));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Replay { addr, counter }
    }

    /// Keystone's URL for cloud.conf `auth-url`.
    pub(crate) fn auth_url(&self) -> String {
        format!("http://{}/identity/v3", self.addr)
    }
}

fn respond(code: u16, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap_or_default()
}

/// The compute microversion the request asks for (2.1 when none).
fn microversion(headers: &HeaderMap) -> (u32, u32) {
    let value = headers
        .get("openstack-api-version")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("compute "))
        .or_else(|| headers.get("x-openstack-nova-api-version").and_then(|v| v.to_str().ok()));
    value
        .and_then(|v| v.trim().split_once('.'))
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or((2, 1))
}

/// The server body as Nova renders it at this microversion (flavor embedded from 2.47).
fn render(shared: &Shared, server: &Value, version: (u32, u32)) -> Value {
    if version >= (2, 47) {
        return server.clone();
    }
    let mut old = server.clone();
    old["flavor"] = shared.flavor_ref.clone();
    old
}

/// Nova's `name` filter is a regex; the controller sends `^<escaped>$`: the exact name it means.
fn exact_name(pattern: &str) -> Option<String> {
    let inner = pattern.strip_prefix('^')?.strip_suffix('$')?;
    let mut name = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.push(chars.next()?),
            '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' => {
                return None;
            }
            c => name.push(c),
        }
    }
    Some(name)
}

async fn handle(
    State((shared, counter)): State<(Arc<Shared>, Arc<Counter>)>,
    method: Method,
    uri: Uri,
    Query(pairs): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let path = uri.path().trim_end_matches('/');
    let query: HashMap<String, String> = pairs.iter().cloned().collect();
    let operation = classify(&method, path, &query);
    counter.record(operation, || format!("{method} {path}"));
    let request = Request {
        method: &method,
        path,
        query: &query,
        pairs: &pairs,
        headers: &headers,
        body: &body,
    };
    let response = answer(&shared, operation, &request);
    counter.time(operation, started.elapsed());
    response
}

/// One request as `answer` reads it.
struct Request<'a> {
    method: &'a Method,
    path: &'a str,
    /// The query, the last value of each name.
    query: &'a HashMap<String, String>,
    /// The query as sent, repeated names included (`device_id`, `fields`).
    pairs: &'a [(String, String)],
    headers: &'a HeaderMap,
    /// The body of a PUT.
    body: &'a [u8],
}

impl Request<'_> {
    /// Every value of a repeated query parameter.
    fn all(&self, name: &str) -> Vec<&str> {
        self.pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// Neutron's `fields`: only the named keys of an object (all of them without it).
fn pick(object: &Value, fields: &[&str]) -> Value {
    if fields.is_empty() {
        return object.clone();
    }
    let kept = fields.iter().filter_map(|f| Some(((*f).to_owned(), object.get(*f)?.clone())));
    Value::Object(kept.collect())
}

/// Neutron's `fields`: only the named keys of each port (all of them without it).
fn ports_body<'a>(ports: impl Iterator<Item = &'a Value>, fields: &[&str]) -> String {
    json!({ "ports": ports.map(|p| pick(p, fields)).collect::<Vec<_>>() }).to_string()
}

/// Port `i` with the pairs and revision route controllers gave it.
fn port_now(shared: &Shared, i: usize) -> Value {
    let state = shared.port_state.lock().unwrap_or_else(PoisonError::into_inner);
    let mut port = shared.ports[i].clone();
    port["allowed_address_pairs"] = json!(state[i].0);
    port["revision_number"] = json!(state[i].1);
    port
}

/// The router as Neutron renders it now.
fn router_now(shared: &Shared) -> Value {
    let (routes, revision) = &*shared.router.lock().unwrap_or_else(PoisonError::into_inner);
    let mut router = shared.router_body["router"].clone();
    router["routes"] = json!(routes);
    router["revision_number"] = json!(revision);
    router
}

/// `If-Match: revision_number=N` against the current revision: `Some(412)` when it differs.
fn precondition(headers: &HeaderMap, revision: u64) -> Option<Response> {
    let wanted = headers.get("if-match")?.to_str().ok()?.strip_prefix("revision_number=")?;
    (wanted.parse::<u64>().ok()? != revision).then(|| {
        let message = format!("Constrained to {wanted}, but current revision is {revision}");
        let body = json!({"NeutronError": {"type": "RevisionNumberConstraintFailed",
            "message": message, "detail": ""}});
        respond(412, body.to_string())
    })
}

/// The `routes` (or `allowed_address_pairs`) list of a PUT body under `root`.
fn put_list(body: &[u8], root: &str, key: &str) -> Option<Vec<Value>> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value.get(root)?.get(key)?.as_array().cloned()
}

/// The replayed answer to a router or extension request.
fn answer_router(shared: &Shared, operation: &'static str, request: &Request<'_>) -> Response {
    let id = request.path.split('/').nth(4).unwrap_or_default();
    if operation != "network/extension_list" && id != ROUTER_ID {
        let message = format!("Router {id} could not be found");
        let body =
            json!({"NeutronError": {"type": "RouterNotFound", "message": message, "detail": ""}});
        return respond(404, body.to_string());
    }
    let Some(routes) = put_list(request.body, "router", "routes").or_else(|| {
        matches!(operation, "network/router_get" | "network/extension_list").then(Vec::new)
    }) else {
        return respond(400, json!({"NeutronError": {"message": "no routes"}}).to_string());
    };
    let mut router = shared.router.lock().unwrap_or_else(PoisonError::into_inner);
    match operation {
        "network/extension_list" => return respond(200, shared.extensions.clone()),
        "network/router_get" => {}
        "network/router_add_extraroutes" => {
            let new: Vec<Value> = routes.into_iter().filter(|r| !router.0.contains(r)).collect();
            router.0.extend(new);
            router.1 += 1;
        }
        "network/router_remove_extraroutes" => {
            router.0.retain(|r| !routes.contains(r));
            router.1 += 1;
        }
        _ => {
            if let Some(refused) = precondition(request.headers, router.1) {
                return refused;
            }
            router.0 = routes;
            router.1 += 1;
        }
    }
    drop(router);
    let fields = request.all("fields");
    respond(200, json!({ "router": pick(&router_now(shared), &fields) }).to_string())
}

/// The replayed answer to a port's GET or PUT (its allowed address pairs).
fn answer_port(shared: &Shared, operation: &'static str, request: &Request<'_>) -> Response {
    let id = request.path.rsplit('/').next().unwrap_or_default();
    let Some(&i) = shared.port_by_id.get(id) else {
        let message = format!("Port {id} could not be found.");
        let body =
            json!({"NeutronError": {"type": "PortNotFound", "message": message, "detail": ""}});
        return respond(404, body.to_string());
    };
    if operation == "network/port_update" {
        let Some(pairs) = put_list(request.body, "port", "allowed_address_pairs") else {
            return respond(400, json!({"NeutronError": {"message": "not replayed"}}).to_string());
        };
        let mut state = shared.port_state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(refused) = precondition(request.headers, state[i].1) {
            return refused;
        }
        state[i] = (pairs, state[i].1 + 1);
    }
    let fields = request.all("fields");
    respond(200, json!({ "port": pick(&port_now(shared, i), &fields) }).to_string())
}

/// The replayed answer to one request that the classifier named `operation`.
fn answer(shared: &Shared, operation: &'static str, request: &Request<'_>) -> Response {
    let Request { method, path, query, headers, .. } = *request;
    // The last path segment: the server or flavor ID of a GET by ID.
    let last = path.rsplit('/').next().unwrap_or_default();
    match operation {
        "identity/authenticate" => {
            let mut token = shared.token.clone();
            let now = jiff::Timestamp::now();
            token["token"]["issued_at"] = json!(now.to_string());
            token["token"]["expires_at"] =
                json!((now + jiff::SignedDuration::from_hours(1)).to_string());
            Response::builder()
                .status(StatusCode::CREATED)
                .header(header::CONTENT_TYPE, "application/json")
                .header("x-subject-token", "gAAAAAB-replay-token")
                .body(Body::from(token.to_string()))
                .unwrap_or_default()
        }
        "compute/version_discovery" => respond(200, shared.compute_version.clone()),
        "network/version_discovery" => respond(200, shared.network_versions.clone()),
        "compute/server_list_by_name"
        | "compute/server_list_page"
        | "compute/server_list_changes" => {
            let version = microversion(headers);
            let by_name = query.get("name");
            let limit = query
                .get("limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(NOVA_MAX_LIMIT)
                .min(NOVA_MAX_LIMIT);
            let start = match query.get("marker") {
                Some(marker) => match shared.by_id.get(marker) {
                    Some(i) => i + 1,
                    None => {
                        let body = json!({"badRequest": {"code": 400,
                            "message": format!("marker [{marker}] not found")}});
                        return respond(400, body.to_string());
                    }
                },
                None => 0,
            };
            let since = match query.get("changes-since").map(|t| t.parse::<jiff::Timestamp>()) {
                None => None,
                Some(Ok(since)) => Some(since),
                Some(Err(_)) => {
                    let value = &query["changes-since"];
                    let message = format!(
                        "Invalid input for query parameters changes-since. Value: {value}. '{value}' is not a 'date-time'"
                    );
                    return respond(
                        400,
                        json!({"badRequest": {"code": 400, "message": message}}).to_string(),
                    );
                }
            };
            // Nova answers a name filter with a database query; an index keeps the replay's own
            // cost from growing with N (a scan per request would make initialization O(N²) here).
            let page: Vec<Value> = match by_name.map(|p| exact_name(p)) {
                Some(Some(name)) => {
                    let found = shared.by_name.get(&name).filter(|&&i| i >= start);
                    found
                        .map(|&i| render(shared, &shared.servers[i], version))
                        .into_iter()
                        .collect()
                }
                Some(None) => {
                    let body =
                        json!({"badRequest": {"code": 400, "message": "unsupported name filter"}});
                    return respond(400, body.to_string());
                }
                None => {
                    let changed = |i: &usize| since.is_none_or(|t| shared.updated[*i] >= t);
                    let listed = (start..shared.servers.len()).filter(changed);
                    let live = listed.map(|i| render(shared, &shared.servers[i], version));
                    // Deleted servers on the first page: the next page's marker is then a live
                    // server's, as the replay's paging needs.
                    let first = !query.contains_key("marker");
                    let gone = shared
                        .deleted
                        .iter()
                        .filter(|(at, _)| first && since.is_some_and(|t| *at >= t));
                    gone.map(|(_, s)| s.clone()).chain(live).take(limit).collect()
                }
            };
            let mut body = json!({ "servers": page });
            if page.len() == limit
                && let Some(last) = page.last()
            {
                let next = format!(
                    "{}/compute/v2.1/servers/detail?limit={limit}&marker={}",
                    shared.base,
                    last["id"].as_str().unwrap_or_default()
                );
                body["servers_links"] = json!([{"rel": "next", "href": next}]);
            }
            respond(200, body.to_string())
        }
        "compute/server_get" => match shared.by_id.get(last) {
            Some(&i) => {
                let server = render(shared, &shared.servers[i], microversion(headers));
                respond(200, json!({ "server": server }).to_string())
            }
            None => {
                let message = format!("Instance {last} could not be found.");
                respond(404, json!({"itemNotFound": {"code": 404, "message": message}}).to_string())
            }
        },
        "compute/flavor_get" => respond(200, shared.flavor.clone()),
        "network/port_list_by_device" => {
            let devices = request.all("device_id");
            let found = devices.iter().filter_map(|d| shared.by_id.get(*d));
            respond(200, ports_body(found.map(|&i| &shared.ports[i]), &request.all("fields")))
        }
        "network/port_list_all" => {
            respond(200, ports_body(shared.ports.iter(), &request.all("fields")))
        }
        "network/port_list_by_address" => {
            let addresses = request.all("fixed_ips");
            let found = addresses
                .iter()
                .filter_map(|f| shared.port_by_ip.get(f.strip_prefix("ip_address=")?))
                .map(|&i| port_now(shared, i))
                .collect::<Vec<_>>();
            respond(200, ports_body(found.iter(), &request.all("fields")))
        }
        "network/port_get" | "network/port_update" => answer_port(shared, operation, request),
        "network/extension_list"
        | "network/router_get"
        | "network/router_update"
        | "network/router_add_extraroutes"
        | "network/router_remove_extraroutes" => answer_router(shared, operation, request),
        _ => {
            debug_assert_eq!(operation, OTHER);
            let body = json!({"error": {"message": format!("not replayed: {method} {path}")}});
            respond(404, body.to_string())
        }
    }
}
