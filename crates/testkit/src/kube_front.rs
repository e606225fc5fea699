//! A slow front for a Kubernetes API server: forwards every request and answers the ones a
//! [`Delay`] chooses late, so that ordering races (a CCM acting before its Node cache synced)
//! show in tests.
//!
//! The fake API server answers at once, so such a race never loses against it. Behind a
//! [`KubeFront`] the client (the CCM binary through [`KubeFront::kubeconfig`], or a kube client)
//! sees a plain-HTTP server on 127.0.0.1 without credentials; the front talks to the upstream
//! as the upstream's kubeconfig says ([`Upstream::from_kubeconfig`]: its CA, its client
//! certificate) or over plain HTTP ([`Upstream::plain`]). Answers stream back as they come (a
//! watch is one long chunked response). Not forwarded: connection upgrades (exec,
//! port-forward).

use std::convert::Infallible;
use std::error::Error;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Body;
use base64::Engine as _;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// The largest request body forwarded: kube-apiserver itself takes at most 3 MiB.
const MAX_REQUEST_BODY: usize = 16 << 20;

/// Where the front forwards to, and as whom.
#[derive(Clone)]
pub struct Upstream {
    /// The server URL without a trailing `/`; a request's path and query are appended.
    base: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for Upstream {
    /// The URL only: the client holds the identity's private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("base", &self.base).finish_non_exhaustive()
    }
}

impl Upstream {
    /// A server over plain HTTP without authentication (the fake API server's `url()`).
    pub fn plain(url: &str) -> Upstream {
        let client = client_builder().build().expect("a plain-HTTP client builds");
        Upstream { base: url.trim_end_matches('/').to_owned(), client }
    }

    /// The server of the current context of the kubeconfig at `path`, trusted and
    /// authenticated as that file says: its CA (`certificate-authority[-data]`; the public
    /// roots when it names none) and its user's client certificate and key
    /// (`client-certificate[-data]`, `client-key[-data]`), files relative to the kubeconfig as
    /// kubectl reads them. Panics naming the file when it cannot (a token or an exec plugin,
    /// which the front does not present; a certificate rustls refuses).
    pub fn from_kubeconfig(path: &Path) -> Upstream {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let config: Value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not a kubeconfig: {e}", path.display()));
        let file = KubeconfigFile { path, dir: path.parent().unwrap_or(Path::new(".")) };
        let context_name = config["current-context"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no current-context", path.display()));
        let context = &file.named(&config, "contexts", context_name)["context"];
        let cluster = &file.named(&config, "clusters", file.text(context, "cluster"))["cluster"];
        let user_name = file.text(context, "user");
        let user = &file.named(&config, "users", user_name)["user"];
        file.client_certificate_only(user, user_name);

        let mut builder = client_builder();
        if let Some(ca) = file.pem(cluster, "certificate-authority") {
            let roots = reqwest::Certificate::from_pem_bundle(&ca)
                .ok()
                .filter(|roots| !roots.is_empty())
                .unwrap_or_else(|| {
                    panic!("{}: certificate-authority holds no PEM", path.display())
                });
            // kubectl trusts the CA the file names and nothing else.
            builder = builder.tls_built_in_root_certs(false);
            for root in roots {
                builder = builder.add_root_certificate(root);
            }
        }
        match (file.pem(user, "client-certificate"), file.pem(user, "client-key")) {
            (Some(cert), Some(key)) => {
                let identity = reqwest::Identity::from_pem(&[cert, b"\n".to_vec(), key].concat())
                    .unwrap_or_else(|e| {
                        panic!("{}: user {user_name}: {}", path.display(), chain(&e))
                    });
                builder = builder.identity(identity);
            }
            (None, None) => {}
            _ => panic!("{}: user {user_name} has a certificate or a key alone", path.display()),
        }
        // rustls parses the client certificate here, to match it with the key: unlike Go's
        // clients, it reads X.509 v3 only.
        let client = builder.build().unwrap_or_else(|e| {
            let why = chain(&e);
            let hint = if why.contains("UnsupportedCertVersion") {
                "the client certificate is X.509 v1 (as `openssl x509 -req` mints it without \
                 -extfile) and rustls takes v3 only: mint it with extensions"
            } else {
                "rustls takes X.509 v3 certificates and the key of the certificate"
            };
            panic!(
                "{}: rustls refused the CA or the client certificate of user {user_name}: \
                 {why}; {hint}",
                path.display()
            )
        });
        let server = file.text(cluster, "server");
        Upstream { base: server.trim_end_matches('/').to_owned(), client }
    }
}

/// Never through a proxy of the environment (the upstream is a local test server), never
/// following a redirect (the client sees the upstream's answer as it is), no timeout (a watch
/// lasts minutes).
fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none())
}

/// A kubeconfig being read: every panic names the file.
struct KubeconfigFile<'a> {
    path: &'a Path,
    dir: &'a Path,
}

impl KubeconfigFile<'_> {
    /// The entry of `list` (`contexts`, `clusters`, `users`) named `name`.
    fn named<'v>(&self, config: &'v Value, list: &str, name: &str) -> &'v Value {
        let entries = config[list].as_array().into_iter().flatten();
        let mut entries = entries.filter(|entry| entry["name"] == name);
        entries.next().unwrap_or_else(|| panic!("{}: no {list} entry {name}", self.path.display()))
    }

    /// A string field that must be there.
    fn text<'v>(&self, section: &'v Value, field: &str) -> &'v str {
        section[field].as_str().unwrap_or_else(|| panic!("{}: no {field}", self.path.display()))
    }

    /// The PEM bytes of `field-data` (base64) or of the file `field` names, if either is set.
    fn pem(&self, section: &Value, field: &str) -> Option<Vec<u8>> {
        let path = self.path.display();
        if let Some(data) = section[format!("{field}-data").as_str()].as_str() {
            let data: String = data.split_whitespace().collect();
            let pem = base64::engine::general_purpose::STANDARD.decode(data);
            return Some(pem.unwrap_or_else(|e| panic!("{path}: {field}-data: {e}")));
        }
        let file = self.dir.join(section[field].as_str()?);
        Some(std::fs::read(&file).unwrap_or_else(|e| panic!("{path}: {}: {e}", file.display())))
    }

    /// Panics when the user authenticates otherwise: the front would drop that identity
    /// silently and the test would run as nobody.
    fn client_certificate_only(&self, user: &Value, name: &str) {
        let known =
            ["client-certificate", "client-certificate-data", "client-key", "client-key-data"];
        let others: Vec<&str> = (user.as_object().into_iter().flatten())
            .map(|(key, _)| key.as_str())
            .filter(|key| !known.contains(key))
            .collect();
        assert!(
            others.is_empty(),
            "{}: user {name} has {others:?}; the front presents a client certificate only",
            self.path.display()
        );
    }
}

/// Which requests the front answers late, and how late; chosen when a request arrives, before
/// it is forwarded (the answer comes late, as from a slow API server).
#[derive(Debug, Clone)]
pub struct Delay(Policy);

#[derive(Debug, Clone)]
enum Policy {
    None,
    Lists { resource: String, by: Duration },
    Random { max: Duration, state: u64 },
}

impl Delay {
    /// Nothing is delayed.
    pub fn none() -> Delay {
        Delay(Policy::None)
    }

    /// Every LIST of `resource` (its plural, `"nodes"`), in any namespace and group, answers
    /// `by` late; its gets, watches and writes do not.
    pub fn lists_of(resource: &str, by: Duration) -> Delay {
        Delay(Policy::Lists { resource: resource.to_owned(), by })
    }

    /// Every LIST and WATCH of any resource answers late by a uniformly random `0..=max`: the
    /// n-th such request gets the n-th draw from `seed`, so a seed that failed replays (the
    /// order of concurrent requests aside).
    pub fn random(max: Duration, seed: u64) -> Delay {
        Delay(Policy::Random { max, state: seed })
    }

    /// The delay of one request (`target`: its path and query), `None` when it has none.
    fn choose(&mut self, method: &str, target: &str) -> Option<Duration> {
        let read = read(method, target)?;
        match &mut self.0 {
            Policy::None => None,
            Policy::Lists { resource, by } => (read == Read::List(resource)).then_some(*by),
            Policy::Random { max, state } => Some(uniform(splitmix(state), *max)),
        }
    }
}

/// What a GET reads.
#[derive(Debug, PartialEq, Eq)]
enum Read<'a> {
    /// A collection of this resource.
    List(&'a str),
    /// Changes to this resource (a collection or one object).
    Watch(&'a str),
}

/// What a request reads, as kube-apiserver's request-info parser tells it: a GET of a
/// collection is a LIST, one with a true `watch` parameter or under the old `/watch/` prefix
/// a WATCH; a get, a write or discovery is `None`.
fn read<'a>(method: &str, target: &'a str) -> Option<Read<'a>> {
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
fn uniform(x: u64, max: Duration) -> Duration {
    let span = u128::from(u64::try_from(max.as_nanos()).unwrap_or(u64::MAX)) + 1;
    let nanos = (u128::from(x) * span) >> 64;
    Duration::from_nanos(u64::try_from(nanos).expect("at most max, which fits"))
}

/// A running front on 127.0.0.1 (plain HTTP); it stops, with every connection through it,
/// when dropped.
pub struct KubeFront {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

/// What the front's connections share with the test.
struct Shared {
    upstream: Upstream,
    delay: Mutex<Delay>,
    delayed: AtomicUsize,
    requests: Mutex<Vec<(String, String)>>,
}

impl std::fmt::Debug for KubeFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let upstream = &self.shared.upstream;
        f.debug_struct("KubeFront").field("addr", &self.addr).field("upstream", upstream).finish()
    }
}

impl Drop for KubeFront {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl KubeFront {
    /// Starts it (inside a tokio runtime) on a free port, forwarding to `upstream`, delaying
    /// as `delay` chooses.
    pub async fn start(upstream: Upstream, delay: Delay) -> KubeFront {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            upstream,
            delay: Mutex::new(delay),
            delayed: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        });
        let server = tokio::spawn(serve(listener, shared.clone()));
        KubeFront { addr, shared, server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes `dir/kubeconfig` for the front (no credentials: the front presents the
    /// upstream's) and returns its path.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        crate::kube::kubeconfig(dir, &self.url())
    }

    /// Delays as `delay` chooses from the next request on (a request already waiting keeps
    /// its delay; a random policy starts from its seed).
    pub fn set_delay(&self, delay: Delay) {
        *lock(&self.shared.delay) = delay;
    }

    /// How many requests were delayed so far, counted when their delay starts (a random
    /// draw of zero counts).
    pub fn delayed(&self) -> usize {
        self.shared.delayed.load(Ordering::SeqCst)
    }

    /// Every request so far in arrival order: its method and its path with the query as sent.
    pub fn requests(&self) -> Vec<(String, String)> {
        lock(&self.shared.requests).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Accepts connections until aborted. The connections are tasks of a set this future owns,
/// so aborting it ends them too: an open watch must not outlive the front (`axum::serve`
/// detaches them).
async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors, say: wait for some to close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let shared = shared.clone();
        let service = hyper::service::service_fn(move |request| forward(shared.clone(), request));
        connections.spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new();
            // A client that goes away mid-answer is not the front's failure.
            let _ = connection.serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// One request: recorded, delayed as the policy chooses, forwarded, its answer streamed back.
async fn forward(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let target = parts.uri.path_and_query().map_or("/", |target| target.as_str()).to_owned();
    lock(&shared.requests).push((parts.method.to_string(), target.clone()));
    // Request bodies are small objects; read whole, they keep their Content-Length.
    let body = match axum::body::to_bytes(Body::new(body), MAX_REQUEST_BODY).await {
        Ok(body) => body,
        Err(e) => return Ok(failure(StatusCode::BAD_REQUEST, &chain(&e))),
    };
    let delay = lock(&shared.delay).choose(parts.method.as_str(), &target);
    if let Some(delay) = delay {
        shared.delayed.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(delay).await;
    }
    let mut headers = parts.headers;
    // The upstream sees the front's identity, never the client's, and its own host name.
    headers.remove(header::HOST);
    headers.remove(header::AUTHORIZATION);
    end_to_end(&mut headers);
    let url = format!("{}{target}", shared.upstream.base);
    let mut outgoing = shared.upstream.client.request(parts.method, url).headers(headers);
    if !body.is_empty() {
        outgoing = outgoing.body(body);
    }
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(e) => return Ok(failure(StatusCode::BAD_GATEWAY, &chain(&e))),
    };
    let status = answer.status();
    let mut headers = answer.headers().clone();
    end_to_end(&mut headers);
    let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

/// Drops the headers of one connection rather than of the message (RFC 9110 §7.6.1), and
/// Content-Length, which each side sets again for the body it sends.
fn end_to_end(headers: &mut HeaderMap) {
    let named: Vec<String> = (headers.get_all(header::CONNECTION).iter())
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let hop = [
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    ];
    let drop: Vec<_> = (headers.keys())
        .filter(|name| hop.contains(&name.as_str()) || named.iter().any(|n| n == name.as_str()))
        .cloned()
        .collect();
    for name in drop {
        headers.remove(name);
    }
}

/// The front's own error, as a Kubernetes `Status` (which clients print).
fn failure(code: StatusCode, message: &str) -> Response<Body> {
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("kube front: {message}"),
        "code": code.as_u16(),
    });
    let mut response = Response::new(Body::from(status.to_string()));
    *response.status_mut() = code;
    let json = HeaderValue::from_static("application/json");
    response.headers_mut().insert(header::CONTENT_TYPE, json);
    response
}

/// An error with its causes (reqwest's Display leaves out the TLS reason).
fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ccm_formats::kubeconfig::{ClientCertificate, Kubeconfig};
    use fake_kube_apiserver::FakeApiServer;
    use futures::StreamExt as _;
    use kube::api::{
        Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, WatchEvent, WatchParams,
    };
    use rcgen::{CertificateParams, KeyPair};

    use super::*;
    use crate::kube::NodeFixture;
    use crate::tls::{TestCa, TlsServer, Validity};

    const SLOW: Duration = Duration::from_secs(1);

    async fn front_of(fake: &FakeApiServer, delay: Delay) -> KubeFront {
        KubeFront::start(Upstream::plain(&fake.url()), delay).await
    }

    /// Nodes through a kube client built from the front's kubeconfig, as the CCM builds one.
    async fn nodes(front: &KubeFront, dir: &Path) -> Api<DynamicObject> {
        let kubeconfig = kube::config::Kubeconfig::read_from(front.kubeconfig(dir))
            .expect("the front's kubeconfig reads");
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .expect("a config from the front's kubeconfig");
        let client = kube::Client::try_from(config).expect("a client for the front");
        let gvk = GroupVersionKind::gvk("", "v1", "Node");
        Api::all_with(client, &ApiResource::from_gvk_with_plural(&gvk, "nodes"))
    }

    fn names(list: &[DynamicObject]) -> Vec<String> {
        list.iter().filter_map(|node| node.metadata.name.clone()).collect()
    }

    #[test]
    fn only_collection_gets_are_lists_and_true_watch_queries_are_watches() {
        let cases = [
            ("GET", "/api/v1/nodes?limit=100&resourceVersion=0", Some(Read::List("nodes"))),
            ("GET", "/api/v1/nodes", Some(Read::List("nodes"))),
            ("GET", "/api/v1/nodes?watch=false", Some(Read::List("nodes"))),
            ("GET", "/api/v1/nodes/foo", None),
            ("GET", "/api/v1/nodes/foo/status", None),
            ("GET", "/api/v1/nodes?watch=true&resourceVersion=5", Some(Read::Watch("nodes"))),
            ("GET", "/api/v1/nodes?fieldSelector=a%3Db&watch=1", Some(Read::Watch("nodes"))),
            ("GET", "/api/v1/watch/nodes", Some(Read::Watch("nodes"))),
            ("GET", "/api/v1/namespaces/ns/services", Some(Read::List("services"))),
            ("GET", "/api/v1/namespaces/ns/services/lb", None),
            ("GET", "/api/v1/namespaces", Some(Read::List("namespaces"))),
            ("GET", "/api/v1/namespaces/ns", None),
            ("GET", "/api/v1/namespaces/ns/status", None),
            (
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases",
                Some(Read::List("leases")),
            ),
            ("GET", "/apis/discovery.k8s.io/v1/endpointslices", Some(Read::List("endpointslices"))),
            ("POST", "/api/v1/nodes", None),
            ("PATCH", "/api/v1/nodes/foo/status", None),
            ("GET", "/api/v1", None),
            ("GET", "/apis/coordination.k8s.io/v1", None),
            ("GET", "/version", None),
        ];
        for (method, target, expected) in cases {
            assert_eq!(read(method, target), expected, "{method} {target}");
        }
    }

    #[test]
    fn lists_of_holds_that_resources_lists_only() {
        let mut delay = Delay::lists_of("nodes", SLOW);
        assert_eq!(delay.choose("GET", "/api/v1/nodes?limit=500"), Some(SLOW));
        assert_eq!(delay.choose("GET", "/api/v1/nodes/foo"), None);
        assert_eq!(delay.choose("GET", "/api/v1/nodes?watch=true"), None);
        assert_eq!(delay.choose("GET", "/api/v1/namespaces/ns/services"), None);
        assert_eq!(delay.choose("PATCH", "/api/v1/nodes/foo"), None);
        assert_eq!(Delay::none().choose("GET", "/api/v1/nodes"), None);
    }

    #[test]
    fn a_random_delay_repeats_with_its_seed() {
        let max = Duration::from_millis(500);
        let requests = [
            "/api/v1/nodes?limit=500",
            "/api/v1/nodes/foo",
            "/api/v1/nodes?watch=true",
            "/api/v1/namespaces/ns/services",
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lease",
            "/api/v1/services?watch=1",
        ];
        let draws = |seed| {
            let mut delay = Delay::random(max, seed);
            let rounds = requests.iter().cycle().take(60);
            rounds.map(|target| delay.choose("GET", target)).collect::<Vec<_>>()
        };
        let first = draws(42);
        assert_eq!(first, draws(42), "one seed, one sequence");
        assert_ne!(first, draws(43), "another seed, another sequence");
        let held: Vec<Duration> = first.iter().flatten().copied().collect();
        assert_eq!(held.len(), 40, "lists and watches are held, gets are not: {first:?}");
        assert!(held.iter().all(|d| *d <= max), "{held:?}");
        // Spread over the range, not one value.
        assert!(held.iter().any(|d| *d < max / 4) && held.iter().any(|d| *d > max * 3 / 4));
    }

    #[test]
    fn a_draw_covers_zero_to_max_inclusive() {
        let max = Duration::from_millis(7);
        assert_eq!(uniform(0, max), Duration::ZERO);
        assert_eq!(uniform(u64::MAX, max), max);
        assert_eq!(uniform(u64::MAX, Duration::ZERO), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_node_list_answers_late_and_a_get_at_once() {
        let fake = FakeApiServer::start().await.expect("fake API server");
        fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
        let front = front_of(&fake, Delay::none()).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let nodes = nodes(&front, dir.path()).await;

        let start = Instant::now();
        nodes.list(&ListParams::default()).await.expect("an undelayed list");
        assert!(start.elapsed() < SLOW, "no delay yet: {:?}", start.elapsed());
        assert_eq!(front.delayed(), 0);

        front.set_delay(Delay::lists_of("nodes", SLOW));
        let start = Instant::now();
        let list = nodes.list(&ListParams::default().limit(100)).await.expect("a delayed list");
        assert!(start.elapsed() >= SLOW, "answered after {:?}", start.elapsed());
        assert_eq!(names(&list.items), ["n1"]);
        assert_eq!(front.delayed(), 1);

        let start = Instant::now();
        nodes.get("n1").await.expect("the node");
        assert!(start.elapsed() < SLOW, "a get waited {:?}", start.elapsed());
        assert_eq!(front.delayed(), 1);

        let seen = front.requests();
        let lists = seen.iter().filter(|(m, t)| m == "GET" && t.starts_with("/api/v1/nodes?"));
        assert_eq!(lists.count(), 2, "{seen:?}");
        assert!(seen.contains(&("GET".into(), "/api/v1/nodes/n1".into())), "{seen:?}");
    }

    #[tokio::test]
    async fn a_watch_streams_an_event_while_it_stays_open() {
        let fake = FakeApiServer::start().await.expect("fake API server");
        let front = front_of(&fake, Delay::none()).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let nodes = nodes(&front, dir.path()).await;
        let list = nodes.list(&ListParams::default()).await.expect("a list");
        let version = list.metadata.resource_version.expect("a list's resourceVersion");

        // Open for minutes: a front that buffered would show nothing, not even the headers,
        // within the limit.
        let params = WatchParams::default().timeout(290);
        let limit = Duration::from_secs(10);
        let watch = tokio::time::timeout(limit, nodes.watch(&params, &version)).await;
        let mut events = watch.expect("the watch's headers within 10 s").expect("a watch").boxed();
        fake.create("v1", "nodes", "", NodeFixture::tainted("late").build());
        let added = tokio::time::timeout(limit, async {
            while let Some(event) = events.next().await {
                if let WatchEvent::Added(node) = event.expect("a watch event") {
                    return node.metadata.name;
                }
            }
            None
        })
        .await
        .expect("the ADDED event within 10 s, while the watch is open");
        assert_eq!(added.as_deref(), Some("late"));
        let seen = front.requests();
        assert!(seen.iter().any(|(_, t)| t.contains("watch=true")), "{seen:?}");
    }

    #[tokio::test]
    async fn a_random_delay_holds_lists_and_watches_not_gets() {
        let fake = FakeApiServer::start().await.expect("fake API server");
        fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
        let front = front_of(&fake, Delay::random(Duration::from_millis(50), 7)).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let nodes = nodes(&front, dir.path()).await;
        nodes.list(&ListParams::default()).await.expect("a list");
        nodes.get("n1").await.expect("a get");
        let watch = nodes.watch(&WatchParams::default().timeout(10), "0").await.expect("a watch");
        drop(watch);
        assert_eq!(front.delayed(), 2, "{:?}", front.requests());
    }

    #[tokio::test]
    async fn the_query_body_and_content_type_reach_the_upstream_as_sent() {
        let fake = FakeApiServer::start().await.expect("fake API server");
        let front = front_of(&fake, Delay::none()).await;
        let http = reqwest::Client::new();
        let query = "labelSelector=app%3Dweb%2Ctier%21%3Ddb&limit=5";
        let url = format!("{}/api/v1/namespaces/default/services?{query}", front.url());
        let answer = http.get(&url).bearer_auth("not-for-upstream").send().await.expect("a list");
        assert_eq!(answer.status(), 200);
        let content_type = answer.headers()[header::CONTENT_TYPE].to_str().expect("ASCII");
        assert!(content_type.starts_with("application/json"), "{content_type}");

        let service = crate::kube::load_balancer_service("default", "web", &[(80, 30080)]);
        let url = format!("{}/api/v1/namespaces/default/services", front.url());
        let body = service.to_string();
        let answer = (http.post(&url).header(header::CONTENT_TYPE, "application/json"))
            .body(body.clone())
            .send()
            .await
            .expect("a create");
        assert_eq!(answer.status(), 201, "{}", answer.text().await.unwrap_or_default());

        let seen = fake.requests();
        assert_eq!(seen[0].query, query);
        assert_eq!((seen[1].method.as_str(), seen[1].body.as_str()), ("POST", body.as_str()));
        assert_eq!(seen[1].content_type.as_deref(), Some("application/json"));
        assert!(fake.get("v1", "services", "default", "web").is_some());
    }

    /// A client certificate and its key, PEM, self-signed (the TLS server asks for none).
    fn client_identity() -> (String, String) {
        let key = KeyPair::generate().expect("client key");
        let params = CertificateParams::new(Vec::<String>::new()).expect("client parameters");
        (params.self_signed(&key).expect("client certificate").pem(), key.serialize_pem())
    }

    /// A TLS upstream with a certificate for 127.0.0.1 from `ca`.
    async fn tls_upstream(ca: &TestCa) -> TlsServer {
        let (cert, key) = ca.server(&["127.0.0.1"], Validity::Now);
        TlsServer::start(&cert, &key).await
    }

    #[tokio::test]
    async fn an_upstream_kubeconfig_with_embedded_data_is_trusted_and_authenticates() {
        let ca = TestCa::new("front upstream CA");
        let server = tls_upstream(&ca).await;
        let (cert, key) = client_identity();
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("https://127.0.0.1:{}", server.port);
        let text = Kubeconfig {
            server: &url,
            server_ca: Some(&ca.pem()),
            user: "tester",
            client: Some(ClientCertificate { cert: &cert, key: &key }),
        }
        .to_yaml()
        .expect("a kubeconfig");
        let path = dir.path().join("upstream.kubeconfig");
        std::fs::write(&path, text).expect("write the kubeconfig");

        let front = KubeFront::start(Upstream::from_kubeconfig(&path), Delay::none()).await;
        let answer = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.text().await.expect("a body"), "{}");
    }

    #[tokio::test]
    async fn an_upstream_kubeconfig_names_files_relative_to_itself() {
        let ca = TestCa::new("front upstream CA");
        let other = TestCa::new("another CA");
        let server = tls_upstream(&ca).await;
        let (cert, key) = client_identity();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("pki")).expect("pki dir");
        for (name, pem) in [("ca.crt", ca.pem()), ("other.crt", other.pem())] {
            std::fs::write(dir.path().join("pki").join(name), pem).expect("write a CA");
        }
        std::fs::write(dir.path().join("pki/client.crt"), cert).expect("write the certificate");
        std::fs::write(dir.path().join("pki/client.key"), key).expect("write the key");
        let kubeconfig = |ca_file: &str| {
            let text = serde_saphyr::to_string(&json!({
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {
                    "server": format!("https://127.0.0.1:{}/", server.port),
                    "certificate-authority": ca_file,
                }}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
                "users": [{"name": "u", "user": {
                    "client-certificate": "pki/client.crt",
                    "client-key": "pki/client.key",
                }}],
            }))
            .expect("a kubeconfig");
            let path = dir.path().join(format!("{ca_file}.kubeconfig").replace('/', "-"));
            std::fs::write(&path, text).expect("write the kubeconfig");
            Upstream::from_kubeconfig(&path)
        };

        let front = KubeFront::start(kubeconfig("pki/ca.crt"), Delay::none()).await;
        let answer = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
        assert_eq!(answer.status(), 200);

        // Trusting only the CA it names: the server's certificate is not another CA's.
        let front = KubeFront::start(kubeconfig("pki/other.crt"), Delay::none()).await;
        let answer = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
        assert_eq!(answer.status(), 502);
        let status: Value = answer.json().await.expect("a Status");
        let message = status["message"].as_str().expect("a message");
        assert!(message.contains("certificate"), "{message}");
    }

    #[test]
    #[should_panic(expected = "rustls refused the CA or the client certificate of user tester")]
    fn a_client_key_that_is_not_the_certificates_panics_naming_rustls() {
        let (cert, _) = client_identity();
        let (_, key) = client_identity();
        let dir = tempfile::tempdir().expect("temp dir");
        let text = Kubeconfig {
            server: "https://127.0.0.1:1",
            server_ca: None,
            user: "tester",
            client: Some(ClientCertificate { cert: &cert, key: &key }),
        }
        .to_yaml()
        .expect("a kubeconfig");
        let path = dir.path().join("mismatch.kubeconfig");
        std::fs::write(&path, text).expect("write the kubeconfig");
        Upstream::from_kubeconfig(&path);
    }

    #[test]
    fn a_v1_client_certificate_panics_saying_rustls_takes_v3_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let openssl = |args: &[&str]| {
            let mut cmd = std::process::Command::new("openssl");
            cmd.current_dir(dir.path()).args(args);
            let out = crate::cluster::run_bounded(cmd, None);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "openssl {}: {stderr}", args.join(" "));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj"];
        openssl(
            &[&["req", "-x509"], &ec[..], &["/CN=ca", "-keyout", "ca.key", "-out", "ca.crt"]]
                .concat(),
        );
        openssl(
            &[&["req", "-new"], &ec[..], &["/CN=u", "-keyout", "u.key", "-out", "u.csr"]].concat(),
        );
        // Without -extfile, `x509 -req` mints version 1.
        let sign = ["-in", "u.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial"];
        openssl(&[&["x509", "-req", "-days", "1", "-out", "u.crt"], &sign[..]].concat());
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).expect("PEM");
        let (cert, key) = (read("u.crt"), read("u.key"));
        let text = openssl(&["x509", "-in", "u.crt", "-noout", "-text"]);
        assert!(text.contains("Version: 1 (0x0)"), "this openssl minted no v1 certificate: {text}");
        let text = Kubeconfig {
            server: "https://127.0.0.1:1",
            server_ca: Some(&read("ca.crt")),
            user: "v1-user",
            client: Some(ClientCertificate { cert: &cert, key: &key }),
        }
        .to_yaml()
        .expect("a kubeconfig");
        let path = dir.path().join("v1.kubeconfig");
        std::fs::write(&path, text).expect("write the kubeconfig");
        let panic = std::panic::catch_unwind(|| Upstream::from_kubeconfig(&path))
            .expect_err("rustls refuses a v1 client certificate");
        let message = panic.downcast_ref::<String>().expect("a formatted panic");
        assert!(message.contains("the client certificate is X.509 v1"), "{message}");
    }

    #[test]
    #[should_panic(expected = "the front presents a client certificate only")]
    fn a_token_user_is_refused_not_dropped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = serde_saphyr::to_string(&json!({
            "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
            "users": [{"name": "u", "user": {"token": "t"}}],
        }))
        .expect("a kubeconfig");
        let path = dir.path().join("token.kubeconfig");
        std::fs::write(&path, text).expect("write the kubeconfig");
        Upstream::from_kubeconfig(&path);
    }

    #[tokio::test]
    #[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
    async fn a_node_list_from_the_real_api_server_answers_late() {
        let stack = crate::kube_stack::KubeStack::load();
        let dir = tempfile::tempdir().expect("temp dir");
        let user = crate::kube_stack::unique("front");
        let upstream = stack.client_kubeconfig(dir.path(), &user, &["system:masters"]);
        let delay = Delay::lists_of("nodes", SLOW);
        let front = KubeFront::start(Upstream::from_kubeconfig(&upstream), delay).await;
        let nodes = nodes(&front, dir.path()).await;
        let start = Instant::now();
        let list = nodes.list(&ListParams::default()).await.expect("a list of the real nodes");
        assert!(start.elapsed() >= SLOW, "answered after {:?}", start.elapsed());
        assert!(!list.items.is_empty(), "the real cluster has its node");
        assert_eq!(front.delayed(), 1);
        nodes.get(&names(&list.items)[0]).await.expect("a node by name");
        assert_eq!(front.delayed(), 1);
    }
}
