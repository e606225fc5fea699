//! Fault injection in front of the real services: a failing or hanging Nova, a TCP forwarder,
//! an Octavia that goes away, and a front that stops the controller right after one call.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use tokio::sync::oneshot;

/// A proxy in front of the real Nova: version discovery passes, everything else fails.
pub(crate) async fn faulty_nova(real: String, hang: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let client = reqwest::Client::new();
    let app = axum::Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
        let (client, real) = (client.clone(), real.clone());
        async move {
            let path = uri.path().trim_end_matches('/');
            if path.contains("/servers") {
                if hang {
                    std::future::pending::<()>().await;
                }
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Bytes::from_static(b"{\"computeFault\": {\"code\": 500}}"),
                );
            }
            let url = format!("{real}{}", uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
            let response = client.request(method, url).body(body).send().await.unwrap();
            let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
            let text = response.bytes().await.unwrap();
            // The version document names the real URL; point it back at the proxy.
            let fixed = String::from_utf8_lossy(&text).replace(&real, &format!("http://{addr}"));
            (status, Bytes::from(fixed))
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v2.1")
}

/// Forwards TCP connections on `listener` to `target`.
pub(crate) async fn forward(listener: tokio::net::TcpListener, target: String) {
    loop {
        let (mut inbound, _) = listener.accept().await.unwrap();
        let target = target.clone();
        tokio::spawn(async move {
            if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}

/// A front before the real Octavia, as an operator's haproxy is: it forwards every request
/// until the first load-balancer create has gone through, then (once) answers 503 (the API behind it
/// stopped) until [`OctaviaFront::resume`]. The create is accepted by the real Octavia, so the
/// controller is cut off in the middle of its reconcile, waiting for ACTIVE.
pub(crate) struct OctaviaFront {
    pub(crate) url: String,
    pub(crate) down: Arc<std::sync::atomic::AtomicBool>,
}

impl OctaviaFront {
    pub(crate) async fn start(real: String) -> OctaviaFront {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let client = reqwest::Client::new();
        let (flag, armed) = (down.clone(), Arc::new(AtomicBool::new(true)));
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (client, real) = (client.clone(), real.clone());
                let (down, armed) = (flag.clone(), armed.clone());
                async move {
                    if down.load(Ordering::SeqCst) {
                        return (StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(b"503"));
                    }
                    let creates = method == Method::POST
                        && uri.path().trim_end_matches('/').ends_with("/lbaas/loadbalancers");
                    let front = format!("http://{addr}");
                    let (status, _, text) =
                        relay(&client, &real, &front, method, &uri, &headers, body).await;
                    if creates && status.is_success() && armed.swap(false, Ordering::SeqCst) {
                        down.store(true, Ordering::SeqCst);
                    }
                    (status, text)
                }
            },
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        OctaviaFront { url: format!("http://{addr}"), down }
    }

    /// Whether the front answers 503.
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Octavia is back: requests are forwarded again.
    pub(crate) fn resume(&self) {
        self.down.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Sends the request to `real`, as it came (its headers but `Host`), and returns the answer
/// with the real service's URL in its body pointed back at `front` (version documents name it).
pub(crate) async fn relay(
    client: &reqwest::Client,
    real: &str,
    front: &str,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> (StatusCode, Option<axum::http::HeaderValue>, Bytes) {
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = client.request(method, format!("{real}{path}")).body(body);
    for (name, value) in headers.iter().filter(|(n, _)| *n != header::HOST) {
        request = request.header(name, value);
    }
    let response = request.send().await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    let text = response.bytes().await.unwrap();
    let fixed = String::from_utf8_lossy(&text).replace(real, front);
    (status, content_type, Bytes::from(fixed))
}

/// The call a [`Front`] stops the controller after.
struct Hold {
    method: Method,
    /// A part of the path (`/lbaas/listeners/`, `/ports/<id>`).
    path: String,
    went_through: oneshot::Sender<()>,
}

/// A front before a real service (Octavia, Neutron: a region of the catalog points there) that
/// forwards every request and can stop the controller right after one call: the first request
/// matching the armed [`Front::hold`] goes through to the real service, which answers it with
/// success, and then the answer is kept back for good and the test told. The call has taken
/// effect and the controller, waiting for its answer, has made none after it: a test kills it
/// there, at an exact step, with no timing luck involved.
pub(crate) struct Front {
    pub(crate) url: String,
    armed: Arc<Mutex<Option<Hold>>>,
}

impl Front {
    /// A front before `real` (the catalog's URL of the service, without a version).
    pub(crate) async fn start(real: String) -> Front {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let armed: Arc<Mutex<Option<Hold>>> = Arc::new(Mutex::new(None));
        let client = reqwest::Client::new();
        let (front, hold) = (url.clone(), armed.clone());
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (client, real, front, armed) =
                    (client.clone(), real.clone(), front.clone(), hold.clone());
                async move {
                    let path = uri.path().to_owned();
                    let wanted = |h: &Hold| h.method == method && path.contains(h.path.as_str());
                    let matches = armed.lock().unwrap().as_ref().is_some_and(wanted);
                    let (status, content_type, text) =
                        relay(&client, &real, &front, method.clone(), &uri, &headers, body).await;
                    if matches && status.is_success() {
                        let taken = armed.lock().unwrap().take_if(|h| wanted(h));
                        if let Some(hold) = taken {
                            let _ = hold.went_through.send(());
                            std::future::pending::<()>().await;
                        }
                    }
                    let mut answer = HeaderMap::new();
                    if let Some(value) = content_type {
                        answer.insert(header::CONTENT_TYPE, value);
                    }
                    (status, answer, text)
                }
            },
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Front { url, armed }
    }

    /// Arms the front: the next `method` request whose path contains `path` that the real
    /// service answers with success is held; the receiver is told then.
    pub(crate) fn hold(&self, method: Method, path: &str) -> oneshot::Receiver<()> {
        let (went_through, rx) = oneshot::channel();
        let hold = Hold { method, path: path.to_owned(), went_through };
        let previous = self.armed.lock().unwrap().replace(hold);
        assert!(previous.is_none(), "the front holds one call at a time");
        rx
    }
}

/// A front of the real Nova whose first answers to `/servers` requests are `throttled` (a
/// status and an optional `Retry-After`), then passes everything through, each `/servers`
/// request held `delay`; it counts them and the most it held at once.
pub(crate) struct ThrottlingNova {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<(usize, usize, usize)>>,
}

impl ThrottlingNova {
    pub(crate) async fn start(
        real: String,
        throttled: Vec<(u16, Option<&'static str>)>,
        delay: std::time::Duration,
    ) -> ThrottlingNova {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = reqwest::Client::new();
        // (requests to /servers, held now, held at most)
        let seen = Arc::new(Mutex::new((0usize, 0usize, 0usize)));
        let plan = Arc::new(Mutex::new(std::collections::VecDeque::from(throttled)));
        let counts = seen.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (client, real, seen, plan) =
                    (client.clone(), real.clone(), counts.clone(), plan.clone());
                async move {
                    let servers = uri.path().contains("/servers");
                    let mut out = HeaderMap::new();
                    if servers {
                        {
                            let mut s = seen.lock().unwrap();
                            s.0 += 1;
                            s.1 += 1;
                            s.2 = s.2.max(s.1);
                        }
                        tokio::time::sleep(delay).await;
                        seen.lock().unwrap().1 -= 1;
                        let next = plan.lock().unwrap().pop_front();
                        if let Some((status, retry_after)) = next {
                            if let Some(after) = retry_after {
                                out.insert(header::RETRY_AFTER, after.parse().unwrap());
                            }
                            let status = StatusCode::from_u16(status).unwrap();
                            return (status, out, Bytes::from_static(b"{\"overLimit\": {}}"));
                        }
                    }
                    let url = format!(
                        "{real}{}",
                        uri.path_and_query().map(|p| p.as_str()).unwrap_or("/")
                    );
                    let mut request = client.request(method, url).body(body);
                    for (name, value) in &headers {
                        if name != header::HOST {
                            request = request.header(name, value);
                        }
                    }
                    let response = request.send().await.unwrap();
                    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
                    let text = response.bytes().await.unwrap();
                    let fixed =
                        String::from_utf8_lossy(&text).replace(&real, &format!("http://{addr}"));
                    (status, out, Bytes::from(fixed))
                }
            },
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        ThrottlingNova { url: format!("http://{addr}/v2.1"), seen }
    }
}
