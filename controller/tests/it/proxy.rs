//! Fault injection in front of the real services: a failing or hanging Nova, a TCP forwarder.

use axum::body::Bytes;
use axum::http::{Method, StatusCode, Uri};

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
    pub(crate) down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl OctaviaFront {
    pub(crate) async fn start(real: String) -> OctaviaFront {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let down = std::sync::Arc::new(AtomicBool::new(false));
        let client = reqwest::Client::new();
        let (flag, armed) = (down.clone(), std::sync::Arc::new(AtomicBool::new(true)));
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: axum::http::HeaderMap, body: Bytes| {
                let (client, real) = (client.clone(), real.clone());
                let (down, armed) = (flag.clone(), armed.clone());
                async move {
                    if down.load(Ordering::SeqCst) {
                        return (StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(b"503"));
                    }
                    let creates = method == Method::POST
                        && uri.path().trim_end_matches('/').ends_with("/lbaas/loadbalancers");
                    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
                    let mut request = client.request(method, format!("{real}{path}")).body(body);
                    for (name, value) in headers.iter().filter(|(n, _)| *n != "host") {
                        request = request.header(name, value);
                    }
                    let response = request.send().await.unwrap();
                    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
                    let text = response.bytes().await.unwrap();
                    if creates && status.is_success() && armed.swap(false, Ordering::SeqCst) {
                        down.store(true, Ordering::SeqCst);
                    }
                    // The version document names the real URL; point it back at the front.
                    let fixed =
                        String::from_utf8_lossy(&text).replace(&real, &format!("http://{addr}"));
                    (status, Bytes::from(fixed))
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
