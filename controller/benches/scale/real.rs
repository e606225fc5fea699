//! The real services of scripts/openstack-up.sh (Keystone, Nova with the FakeDriver, Neutron)
//! behind a counting reverse proxy, and the servers the benchmark boots there.
//!
//! The proxy lays the services out as the replay does (Keystone under `/identity`, Nova under
//! `/compute`, Neutron under `/network`, Glance under `/image`, Octavia under `/load-balancer`), so ops.rs's one classifier names
//! every request; it rewrites the real base URLs in every response (the token's service catalog,
//! the version documents, Nova's next links) to its own, so that every later call of the
//! controller goes through it too. The servers are booted, waited for and deleted directly
//! against the real APIs (not through the proxy: not counted). On request ([`Captures::keep`])
//! it keeps a copy of the bodies of chosen operations (the soak's member lists, issue 35).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};
use testkit::stack::StackEnv;

use crate::ops::{Counter, classify};

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> String {
    let parsed = reqwest::Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    parsed.origin().ascii_serialization()
}

struct Routes {
    /// (proxy prefix, real origin), e.g. `("compute", "http://127.0.0.1:25007")`.
    services: Vec<(&'static str, String)>,
    /// The proxy's own origin.
    base: String,
    client: reqwest::Client,
    counter: Arc<Counter>,
    captures: Arc<Captures>,
}

/// One request whose body was kept, as it went to the real service.
#[allow(dead_code, reason = "read by benches/soak, not by every bench that includes this file")]
#[derive(Debug, Clone)]
pub(crate) struct Captured {
    /// When the proxy had it (before forwarding).
    pub(crate) at: Instant,
    /// ops.rs's name, `load-balancer/members_replace`, …
    pub(crate) operation: &'static str,
    /// The path in the proxy's layout (`/load-balancer/v2/lbaas/pools/ID/members`).
    pub(crate) path: String,
    pub(crate) body: Bytes,
    /// The real service's answer; `None` until it came, or when none came.
    pub(crate) status: Option<u16>,
}

/// The bodies kept, of the operations asked for (none unless asked: they cost memory).
#[derive(Debug, Default)]
pub(crate) struct Captures {
    operations: Mutex<Vec<&'static str>>,
    taken: Mutex<Vec<Captured>>,
}

#[allow(dead_code, reason = "used by benches/soak, not by every bench that includes this file")]
impl Captures {
    /// From now on, keeps the request bodies of `operations` (ops.rs's names).
    pub(crate) fn keep(&self, operations: &[&'static str]) {
        let mut kept = self.operations.lock().unwrap_or_else(PoisonError::into_inner);
        kept.extend_from_slice(operations);
    }

    /// The kept requests from index `from` on, in arrival order.
    pub(crate) fn since(&self, from: usize) -> Vec<Captured> {
        let taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        taken.get(from..).map(<[Captured]>::to_vec).unwrap_or_default()
    }

    /// Keeps a copy of `body` when `operation` is wanted; its index, to note the answer.
    fn take(&self, operation: &'static str, path: &str, body: &Bytes) -> Option<usize> {
        let wanted = self.operations.lock().unwrap_or_else(PoisonError::into_inner);
        if !wanted.contains(&operation) {
            return None;
        }
        let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        taken.push(Captured {
            at: Instant::now(),
            operation,
            path: path.to_owned(),
            // A second reference to the same bytes: the request still sends them.
            body: body.clone(),
            status: None,
        });
        Some(taken.len() - 1)
    }

    fn answered(&self, index: usize, status: u16) {
        let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(captured) = taken.get_mut(index) {
            captured.status = Some(status);
        }
    }
}

/// A booted server.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    pub(crate) id: String,
    pub(crate) name: String,
}

/// The counting proxy in front of the real stack, and a client of the real APIs.
pub(crate) struct Real {
    env: StackEnv,
    base: String,
    client: reqwest::Client,
    /// Every request of the controller, by operation.
    pub(crate) counter: Arc<Counter>,
    /// The request bodies kept (none unless [`Captures::keep`] asked for some).
    #[allow(
        dead_code,
        reason = "used by benches/soak, not by every bench that includes this file"
    )]
    pub(crate) captures: Arc<Captures>,
}

impl Real {
    /// Starts the proxy (127.0.0.1, a free port) for the stack that `env` describes.
    pub(crate) async fn start(env: StackEnv) -> Real {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .expect("an HTTP client");
        let counter = Arc::new(Counter::default());
        let captures = Arc::new(Captures::default());
        let mut services = vec![
            ("identity", origin(&env["OPENSTACK_AUTH_URL"])),
            ("compute", origin(&env["OPENSTACK_COMPUTE_URL"])),
            ("network", origin(&env["OPENSTACK_NETWORK_URL"])),
            ("image", origin(&env["OPENSTACK_IMAGE_URL"])),
        ];
        if let Some(octavia) = env.get("OPENSTACK_LOADBALANCER_URL") {
            services.push(("load-balancer", origin(octavia)));
        }
        let routes = Arc::new(Routes {
            services,
            base: base.clone(),
            client: client.clone(),
            counter: counter.clone(),
            captures: captures.clone(),
        });
        let app = Router::new().fallback(forward).with_state(routes);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Real { env, base, client, counter, captures }
    }

    /// Keystone's URL through the proxy, for cloud.conf `auth-url`.
    pub(crate) fn auth_url(&self) -> String {
        let path = reqwest::Url::parse(&self.env["OPENSTACK_AUTH_URL"])
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        format!("{}/identity{path}", self.base)
    }

    /// The member user's name, password, project and domain (the controller's credentials).
    pub(crate) fn member(&self) -> [&str; 4] {
        ["OPENSTACK_USER", "OPENSTACK_PASSWORD", "OPENSTACK_PROJECT", "OPENSTACK_DOMAIN"]
            .map(|k| self.env[k].as_str())
    }

    /// A project-scoped token, directly from the real Keystone.
    async fn token(&self, user: &str, password: &str, project: &str) -> String {
        let domain = &self.env["OPENSTACK_DOMAIN"];
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"name": domain}, "password": password}}},
            "scope": {"project": {"name": project, "domain": {"name": domain}}}}});
        let url = format!("{}/auth/tokens", &self.env["OPENSTACK_AUTH_URL"]);
        let response = self.client.post(&url).json(&body).send().await;
        let response = response.unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let status = response.status();
        let token = response.headers().get("x-subject-token").and_then(|v| v.to_str().ok());
        match token {
            Some(token) if status.is_success() => token.to_owned(),
            _ => panic!("Keystone login of {user} failed: {status}"),
        }
    }

    /// One Nova call; panics with the answer unless it is a success (or `allowed`). Nova on
    /// SQLite answers 500 now and then ('database is locked'): a GET, PUT or DELETE is repeated
    /// up to three times (idempotent); a POST is not.
    async fn nova(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
        allowed: &[u16],
    ) -> (u16, Value) {
        let url = format!("{}{path}", &self.env["OPENSTACK_COMPUTE_URL"]);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request =
                self.client.request(method.clone(), &url).header("x-auth-token", token);
            if let Some(body) = &body {
                request = request.json(body);
            }
            let response = request.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
            let status = response.status().as_u16();
            let text = response.text().await.unwrap_or_default();
            if (200..300).contains(&status) || allowed.contains(&status) {
                return (status, serde_json::from_str(&text).unwrap_or(Value::Null));
            }
            if status < 500 || method == Method::POST || attempt == 3 {
                panic!("{method} {url}: {status} {text}");
            }
            eprintln!("{method} {url}: {status}; repeated");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Raises the project's instance, core and RAM quotas (as admin) where `n` more servers of
    /// the benchmark's flavor would not fit.
    async fn make_room(&self, n: usize) {
        let [user, password, project, _] = self.member();
        let token = self.token(user, password, project).await;
        let project_id = &self.env["OPENSTACK_PROJECT_ID"];
        let flavor_id = &self.env["OPENSTACK_FLAVOR_ID"];
        let (_, flavor) =
            self.nova(&token, Method::GET, &format!("/flavors/{flavor_id}"), None, &[]).await;
        let per = |key: &str| flavor["flavor"][key].as_u64().unwrap_or(1);
        let need = [("instances", 1), ("cores", per("vcpus")), ("ram", per("ram"))];
        let path = format!("/os-quota-sets/{project_id}");
        let (_, quotas) =
            self.nova(&token, Method::GET, &format!("{path}/detail"), None, &[]).await;
        let mut raise = serde_json::Map::new();
        for (key, each) in need {
            let q = &quotas["quota_set"][key];
            let limit = q["limit"].as_i64().unwrap_or(0);
            let used = q["in_use"].as_i64().unwrap_or(0) + q["reserved"].as_i64().unwrap_or(0);
            let want = used + (n as u64 * each) as i64;
            if limit >= 0 && limit < want {
                raise.insert(key.to_owned(), json!(want + 10 * each as i64));
            }
        }
        if raise.is_empty() {
            return;
        }
        eprintln!("raising the quotas of project {project} (as admin): {raise:?}");
        let admin = self.admin_token().await;
        self.nova(&admin, Method::PUT, &path, Some(json!({ "quota_set": raise })), &[]).await;
    }

    /// Revokes `token` in Keystone (a token may revoke itself), as if it had expired: the
    /// next request that carries it gets a 401. Returns Keystone's status code.
    #[allow(dead_code, reason = "used by benches/soak, not by every bench that includes this file")]
    pub(crate) async fn revoke(&self, token: &str) -> u16 {
        let url = format!("{}/auth/tokens", &self.env["OPENSTACK_AUTH_URL"]);
        let request =
            self.client.delete(&url).header("x-auth-token", token).header("x-subject-token", token);
        request.send().await.map_or(0, |r| r.status().as_u16())
    }

    /// The servers whose names start with `prefix`, with their status and fault.
    async fn list(&self, token: &str, prefix: &str) -> Vec<Value> {
        let path = format!("/servers/detail?name=%5E{prefix}&limit=1000");
        let (_, body) = self.nova(token, Method::GET, &path, None, &[]).await;
        body["servers"].as_array().cloned().unwrap_or_default()
    }

    /// The admin's token (for quotas and for resetting a server stuck in a failed delete).
    async fn admin_token(&self) -> String {
        let [user, password, project] =
            ["OPENSTACK_ADMIN_USER", "OPENSTACK_ADMIN_PASSWORD", "OPENSTACK_ADMIN_PROJECT"]
                .map(|k| self.env[k].as_str());
        self.token(user, password, project).await
    }

    /// Boots `n` servers named `<prefix>-001` … on the stack's flavor, image and internal
    /// network, [`WAVE`] at a time (their builds overlap), and waits until all are ACTIVE.
    /// Nova on SQLite fails a build now and then ('database is locked' in the conductor: the
    /// server goes to ERROR, or stays in BUILD): such a server is deleted and booted again, up
    /// to three more rounds. On a failure it deletes what it booted and panics.
    pub(crate) async fn create_servers(&self, prefix: &str, n: usize) -> Vec<Server> {
        self.make_room(n).await;
        let [user, password, project, _] = self.member();
        let token = self.token(user, password, project).await;
        let started = Instant::now();
        let names: Vec<String> = (1..=n).map(|i| format!("{prefix}-{i:03}")).collect();
        let mut active: BTreeMap<String, String> = BTreeMap::new();
        let mut discarded: Vec<Server> = Vec::new();
        let mut faults: Vec<String> = Vec::new();
        for _round in 0..4 {
            let missing: Vec<&String> = names.iter().filter(|n| !active.contains_key(*n)).collect();
            if missing.is_empty() {
                break;
            }
            for wave in missing.chunks(WAVE) {
                for name in wave {
                    let body = json!({"server": {
                        "name": name,
                        "flavorRef": &self.env["OPENSTACK_FLAVOR_ID"],
                        "imageRef": &self.env["OPENSTACK_IMAGE_ID"],
                        "networks": [{"uuid": &self.env["OPENSTACK_INTERNAL_NETWORK_ID"]}],
                    }});
                    // A 500 may or may not have created it: the wait below sees which.
                    self.nova(&token, Method::POST, "/servers", Some(body), &[500]).await;
                }
                // A build takes 3–7 s here; one whose scheduling failed on a locked database
                // stays in BUILD for ever: after 30 s it counts as failed.
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let ignored: Vec<&str> = discarded.iter().map(|s| s.id.as_str()).collect();
                    let listed: Vec<Value> = self
                        .list(&token, prefix)
                        .await
                        .into_iter()
                        .filter(|s| wave.iter().any(|n| s["name"] == n.as_str()))
                        .filter(|s| !ignored.contains(&s["id"].as_str().unwrap_or_default()))
                        .collect();
                    let building = listed.iter().any(|s| s["status"] == "BUILD");
                    if !building || Instant::now() > deadline {
                        for s in &listed {
                            let server = server(s);
                            if s["status"] == "ACTIVE" {
                                active.insert(server.name, server.id);
                            } else {
                                faults.push(format!(
                                    "{} {}: {}",
                                    server.name, s["status"], s["fault"]
                                ));
                                discarded.push(server);
                            }
                        }
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
            if !discarded.is_empty() {
                self.delete_servers(prefix, &std::mem::take(&mut discarded)).await;
            }
        }
        let booted: Vec<Server> =
            active.iter().map(|(name, id)| Server { id: id.clone(), name: name.clone() }).collect();
        if booted.len() < n {
            self.delete_servers(prefix, &booted).await;
            panic!(
                "booting {n} servers on the real stack failed: {} ACTIVE after four rounds; \
                 failures: {}",
                booted.len(),
                faults.join("; ")
            );
        }
        eprintln!(
            "booted {n} servers ({prefix}-*) in {:.1} s ({} failed builds booted again)",
            started.elapsed().as_secs_f64(),
            faults.len()
        );
        booted
    }

    /// Deletes the servers (named `<prefix>-…`), [`WAVE`] at a time, and waits until Nova no
    /// longer lists them. A server whose delete failed in Nova (ERROR, task `deleting`, on
    /// SQLite's 'database is locked') is reset as admin and deleted again. Bounded; what is
    /// left is reported, not a panic: this also runs after a failed measurement.
    pub(crate) async fn delete_servers(&self, prefix: &str, servers: &[Server]) {
        if servers.is_empty() {
            return;
        }
        let [user, password, project, _] = self.member();
        let token = self.token(user, password, project).await;
        let started = Instant::now();
        let mut left_over = Vec::new();
        for wave in servers.chunks(WAVE) {
            let ids: Vec<&str> = wave.iter().map(|s| s.id.as_str()).collect();
            for s in wave {
                let path = format!("/servers/{}", s.id);
                self.nova(&token, Method::DELETE, &path, None, &DELETE_OK).await;
            }
            let deadline = Instant::now() + Duration::from_secs(90);
            let mut retried = Instant::now();
            loop {
                let left: Vec<Value> = self
                    .list(&token, prefix)
                    .await
                    .into_iter()
                    .filter(|s| ids.contains(&s["id"].as_str().unwrap_or_default()))
                    .collect();
                if left.is_empty() {
                    break;
                }
                if Instant::now() > deadline {
                    left_over.extend(left.iter().map(server));
                    break;
                }
                if retried.elapsed() > Duration::from_secs(15) {
                    retried = Instant::now();
                    for s in &left {
                        let path = format!("/servers/{}", s["id"].as_str().unwrap_or_default());
                        if s["status"] == "ERROR" {
                            let admin = self.admin_token().await;
                            let reset = json!({"os-resetState": {"state": "error"}});
                            let action = format!("{path}/action");
                            self.nova(&admin, Method::POST, &action, Some(reset), &[404, 409, 500])
                                .await;
                        }
                        self.nova(&token, Method::DELETE, &path, None, &DELETE_OK).await;
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        if left_over.is_empty() {
            eprintln!(
                "deleted {} servers in {:.1} s",
                servers.len(),
                started.elapsed().as_secs_f64()
            );
        } else {
            eprintln!("WARNING: {} servers could not be deleted: {left_over:?}", left_over.len());
        }
    }
}

/// Servers booted or deleted at a time: Nova on SQLite fails more builds the more overlap.
const WAVE: usize = 5;

/// Answers to a DELETE that the wait after it sorts out: gone already, busy, or a 500 that
/// the next round repeats (a real failure shows as servers still listed at the end).
const DELETE_OK: [u16; 3] = [404, 409, 500];

fn server(s: &Value) -> Server {
    let text = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
    Server { id: text("id"), name: text("name") }
}

/// Headers not copied across the proxy: hop-by-hop ones, the length (bodies are rewritten),
/// `Host` (the real service's), and `Accept-Encoding` (a compressed body could not be rewritten).
fn skipped(name: &header::HeaderName) -> bool {
    [
        header::HOST,
        header::CONTENT_LENGTH,
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::ACCEPT_ENCODING,
        header::HeaderName::from_static("keep-alive"),
    ]
    .contains(name)
}

async fn forward(
    State(routes): State<Arc<Routes>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path();
    let query: HashMap<String, String> =
        reqwest::Url::parse(&format!("http://query.invalid/?{}", uri.query().unwrap_or_default()))
            .map(|u| u.query_pairs().into_owned().collect())
            .unwrap_or_default();
    let operation = classify(&method, path, &query);
    let hit = routes.counter.record(operation, || format!("{method} {path}"));
    if let Some(token) = headers.get("x-auth-token").and_then(|v| v.to_str().ok()) {
        routes.counter.note_token(token);
    }
    let started = Instant::now();
    let captured = routes.captures.take(operation, path, &body);

    let fail = |code: StatusCode, message: String| {
        Response::builder()
            .status(code)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json!({"error": {"message": message}}).to_string()))
            .unwrap_or_default()
    };
    let trimmed = path.trim_start_matches('/');
    let (prefix, rest) = trimmed.split_once('/').unwrap_or((trimmed, ""));
    let Some((_, real)) = routes.services.iter().find(|(p, _)| *p == prefix) else {
        return fail(StatusCode::NOT_FOUND, format!("the proxy has no service at /{prefix}"));
    };
    let mut url = format!("{real}/{rest}");
    if let Some(q) = uri.query() {
        url = format!("{url}?{q}");
    }
    let mut request = routes.client.request(method.clone(), &url).body(body);
    for (name, value) in &headers {
        if !skipped(name) {
            request = request.header(name, value);
        }
    }
    let answer = match request.send().await {
        Ok(answer) => answer,
        Err(e) => return fail(StatusCode::BAD_GATEWAY, format!("{method} {url}: {e}")),
    };
    let status = answer.status();
    routes.counter.answered_with(hit, status.as_u16());
    if let Some(index) = captured {
        routes.captures.answered(index, status.as_u16());
    }
    let mut response = Response::builder().status(status.as_u16());
    for (name, value) in answer.headers() {
        if !skipped(name) {
            response = response.header(name, value);
        }
    }
    let bytes = match answer.bytes().await {
        Ok(bytes) => bytes,
        Err(e) => return fail(StatusCode::BAD_GATEWAY, format!("{method} {url}: body: {e}")),
    };
    routes.counter.time(operation, started.elapsed());
    // Every real base URL in the body (catalog, version documents, links) points back here.
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    for (prefix, real) in &routes.services {
        text = text.replace(real.as_str(), &format!("{}/{prefix}", routes.base));
    }
    response.body(Body::from(text)).unwrap_or_default()
}
