//! A slow or failing front for a Kubernetes API server: forwards every request and answers the
//! ones a [`Delay`] chooses late, or passes a watch's events on late, so that ordering races (a
//! CCM acting before its Node cache synced, or on a cached copy older than its own write) show
//! in tests; or answers them itself with a failure, or not at all, for as long as the test says
//! ([`Delay::fail`], [`Delay::hang`], [`Delay::lasting`]), so that an API server outage does.
//!
//! The fake API server answers at once, so such a race never loses against it. Behind a
//! [`KubeFront`] the client (the CCM binary through [`KubeFront::kubeconfig`], or a kube client)
//! sees a plain-HTTP server on 127.0.0.1 without credentials; the front talks to the upstream
//! as the upstream's kubeconfig says ([`Upstream::from_kubeconfig`]: its CA, its client
//! certificate) or over plain HTTP ([`Upstream::plain`]). Answers stream back as they come (a
//! watch is one long chunked response). Not forwarded: connection upgrades (exec,
//! port-forward).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Body;
use base64::Engine as _;
use ccm_tls_explain::chain;
use futures::StreamExt as _;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use self::delay::Active;
pub use self::delay::Delay;
use self::fault::Fault;

mod delay;
mod fault;

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
    delay: Mutex<Active>,
    /// Counts policy changes: held requests and open responses look again at each.
    changes: watch::Sender<u64>,
    delayed: AtomicUsize,
    faulted: AtomicUsize,
    requests: Mutex<Vec<(String, String)>>,
}

impl Shared {
    /// The fault for `target` under the policy in force now, and when that policy ends.
    fn fault_for(&self, target: &str) -> (Option<Fault>, Option<Instant>) {
        let mut active = lock(&self.delay);
        let fault = active.at(Instant::now()).fault_for(target);
        (fault, active.ends)
    }
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
            delay: Mutex::new(Active::new(delay, Instant::now())),
            changes: watch::Sender::new(0),
            delayed: AtomicUsize::new(0),
            faulted: AtomicUsize::new(0),
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
    /// its delay; a random policy starts from its seed). A request held by [`Delay::hang`]
    /// goes on as `delay` says; a response still streaming is cut if `delay` fails or holds
    /// its request.
    pub fn set_delay(&self, delay: Delay) {
        *lock(&self.shared.delay) = Active::new(delay, Instant::now());
        self.shared.changes.send_modify(|n| *n += 1);
    }

    /// How many requests were delayed so far, counted when their delay starts (a random
    /// draw of zero counts).
    pub fn delayed(&self) -> usize {
        self.shared.delayed.load(Ordering::SeqCst)
    }

    /// How many requests the front failed or held, and responses it cut, so far (each
    /// counted once, when it happens).
    pub fn faulted(&self) -> usize {
        self.shared.faulted.load(Ordering::SeqCst)
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

/// One request: recorded, failed or held or delayed as the policy chooses, forwarded, its
/// answer streamed back (and cut if a later policy fails or holds it).
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
    // Subscribed before the fault check: a policy taken after it is seen by the cut below.
    let changes = shared.changes.subscribe();
    if let Some(injected) = injected(&shared, &target).await {
        return Ok(injected);
    }
    let (delay, lag) = {
        let mut active = lock(&shared.delay);
        let policy = active.at(Instant::now());
        let method = parts.method.as_str();
        (policy.choose(method, &target), policy.each_piece(method, &target))
    };
    if let Some(delay) = delay {
        shared.delayed.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(delay).await;
    }
    if lag.is_some() {
        shared.delayed.fetch_add(1, Ordering::SeqCst);
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
    let pieces = answer.bytes_stream().boxed();
    let pieces = match lag {
        None => pieces,
        Some(by) => pieces
            .then(move |piece| async move {
                tokio::time::sleep(by).await;
                piece
            })
            .boxed(),
    };
    let cut = fault_begins(shared.clone(), target, changes);
    let body = Body::from_stream(until_cut(pieces, cut));
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

/// The answer the front gives itself when the policy fails `target`, after holding it while
/// the policy holds it; `None` when it is to be forwarded.
async fn injected(shared: &Shared, target: &str) -> Option<Response<Body>> {
    let mut changes = shared.changes.subscribe();
    let mut counted = false;
    loop {
        let (fault, ends) = shared.fault_for(target);
        if fault.is_some() && !counted {
            shared.faulted.fetch_add(1, Ordering::SeqCst);
            counted = true;
        }
        match fault {
            None => return None,
            Some(Fault::Fail(code)) => return Some(fault::failure(code)),
            Some(Fault::Hang) => {
                let ended = async {
                    match ends {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    changed = changes.changed() => {
                        // The sender lives as long as `shared`: never closed here.
                        if changed.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    () = ended => {}
                }
            }
        }
    }
}

/// Resolves when a policy taken after `changes` was subscribed fails or holds `target`.
async fn fault_begins(shared: Arc<Shared>, target: String, mut changes: watch::Receiver<u64>) {
    loop {
        if changes.changed().await.is_err() {
            return std::future::pending().await;
        }
        if shared.fault_for(&target).0.is_some() {
            shared.faulted.fetch_add(1, Ordering::SeqCst);
            return;
        }
    }
}

/// `pieces` until `cut` resolves, then an error: the response ends without its last chunk
/// and the client sees the connection break, as when the server goes away mid-answer.
fn until_cut<S, E>(
    pieces: S,
    cut: impl Future<Output = ()> + Send + 'static,
) -> impl futures::Stream<Item = Result<axum::body::Bytes, std::io::Error>> + Send + 'static
where
    S: futures::Stream<Item = Result<axum::body::Bytes, E>> + Send + Unpin + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let state = Some((pieces, Box::pin(cut)));
    futures::stream::unfold(state, |state| async move {
        let (mut pieces, mut cut) = state?;
        tokio::select! {
            biased;
            () = &mut cut => {
                let error = std::io::Error::other("kube front: cut by an injected fault");
                Some((Err(error), None))
            }
            piece = pieces.next() => {
                let piece = piece?.map_err(std::io::Error::other);
                Some((piece, Some((pieces, cut))))
            }
        }
    })
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

#[cfg(test)]
mod tests;
