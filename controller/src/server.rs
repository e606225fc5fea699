//! `/healthz`, `/readyz` and `/metrics` over HTTPS (self-signed rcgen certificate unless files are given),
//! each request authorized by the API server unless its path is open to anyone ([`auth`]).

pub(crate) mod auth;

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

use crate::kube::refusals::Refused;
use crate::metrics::Metrics;

/// An error setting up TLS.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A certificate or key file could not be read.
    #[error("cannot read {path}")]
    Pem {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The self-signed certificate could not be made.
    #[error("cannot generate a self-signed certificate")]
    Generate(#[source] rcgen::Error),
    /// The certificate and key cannot be served.
    #[error("invalid serving certificate or key: {what}")]
    Identity {
        /// The files (`--tls-cert-file`, `--tls-private-key-file`), or the self-signed pair.
        what: String,
        /// Why.
        #[source]
        source: ccm_tls_explain::certified_key::Error,
    },
    /// rustls could not be set up.
    #[error("cannot set up TLS")]
    Tls(#[source] rustls::Error),
}

/// What the endpoints report.
#[derive(Clone)]
pub(crate) struct Health {
    /// Readiness: OpenStack session established (and credentials loaded), else why not.
    pub(crate) ready: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
    /// The metrics registry.
    pub(crate) metrics: Arc<Metrics>,
    /// Kubernetes API requests refused (403) and not since allowed.
    pub(crate) refused: Arc<Refused>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health").field("ready", &(self.ready)().is_ok()).finish_non_exhaustive()
    }
}

/// The routes, every request (an unknown path's too) first judged by `delegation`.
pub(crate) fn router(health: Health, delegation: Arc<auth::Delegation>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(health)
        .layer(axum::middleware::from_fn_with_state(delegation, auth::guard))
}

/// Ready when OpenStack is connected and no Kubernetes request is refused; else each reason on
/// a line of its own.
async fn readyz(State(health): State<Health>) -> impl IntoResponse {
    let openstack = (health.ready)().err().map(|why| format!("openstack: not connected: {why}"));
    let kubernetes = health.refused.readiness().err().map(|why| {
        why.lines().map(|line| format!("kubernetes: {line}")).collect::<Vec<_>>().join("\n")
    });
    let reasons: Vec<String> = openstack.into_iter().chain(kubernetes).collect();
    if reasons.is_empty() {
        (StatusCode::OK, "ok".to_owned())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, reasons.join("\n"))
    }
}

async fn metrics(State(health): State<Health>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        health.metrics.encode(),
    )
}

/// TLS settings: the given PEM files, or a fresh self-signed certificate for `localhost` and `bind`.
pub(crate) fn tls_config(
    files: Option<(&Path, &Path)>,
    bind: IpAddr,
) -> Result<Arc<rustls::ServerConfig>, Error> {
    let (certs, key, what) = match files {
        Some((cert, key)) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .map_err(pem(cert))?
                .collect::<Result<_, _>>()
                .map_err(pem(cert))?;
            let what = format!(
                "--tls-cert-file {}, --tls-private-key-file {}",
                cert.display(),
                key.display()
            );
            (certs, PrivateKeyDer::from_pem_file(key).map_err(pem(key))?, what)
        }
        None => {
            let mut names = vec!["localhost".to_owned()];
            if !bind.is_unspecified() {
                names.push(bind.to_string());
            }
            let generated = rcgen::generate_simple_self_signed(names).map_err(Error::Generate)?;
            let key = PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
            (vec![generated.cert.der().clone()], key, "self-signed".to_owned())
        }
    };
    // Not `with_single_cert`: it parses the certificate as X.509 v3 only, and refused a v1
    // one that every client verifying it (OpenSSL, Go) takes. See: issue 36.
    let identity = ccm_tls_explain::certified_key::from_der(certs, key)
        .map_err(|source| Error::Identity { what, source })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::Tls)?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(identity)));
    Ok(Arc::new(config))
}

fn pem(path: &Path) -> impl Fn(rustls::pki_types::pem::Error) -> Error + '_ {
    move |source| Error::Pem { path: path.display().to_string(), source }
}

/// Serves HTTPS until accepting fails; each connection runs in its own task.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
) -> std::io::Error {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => return error,
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                    return;
                }
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A client of the self-signed server; every request bounded: a server that stops
    /// answering fails the test, not hangs it.
    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .unwrap()
    }

    /// The guard of the default open paths, before an API server that knows the tokens
    /// `good` (may get `/metrics`) and `nobody` (may not).
    fn delegation() -> Arc<auth::Delegation> {
        let (client, _) = auth::tests::stub(auth::tests::apiserver());
        let open = auth::OpenPaths::new(["/healthz", "/readyz", "/livez"].map(String::from));
        Arc::new(auth::Delegation::new(open, client.clone(), client))
    }

    #[tokio::test]
    async fn endpoints_answer_over_tls_and_readyz_follows_readiness() {
        let ready = Arc::new(AtomicBool::new(false));
        let flag = ready.clone();
        let metrics = Metrics::shared();
        metrics.call("compute", "server_get", "ok", std::time::Duration::from_millis(3));
        let ready_or_why = move || {
            if flag.load(Ordering::SeqCst) { Ok(()) } else { Err("Keystone away".to_owned()) }
        };
        let refused = Refused::shared();
        let health = Health { ready: Arc::new(ready_or_why), metrics, refused: refused.clone() };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tls = tls_config(None, addr.ip()).unwrap();
        tokio::spawn(serve(listener, tls, router(health, delegation())));
        let client = client();
        let get = |path: &str| client.get(format!("https://{addr}{path}")).send();
        assert_eq!(get("/healthz").await.unwrap().status(), 200);
        let not_ready = get("/readyz").await.unwrap();
        assert_eq!(not_ready.status(), 503);
        assert_eq!(not_ready.text().await.unwrap(), "openstack: not connected: Keystone away");
        ready.store(true, Ordering::SeqCst);
        assert_eq!(get("/readyz").await.unwrap().status(), 200);
        // A refused Kubernetes request makes it not ready, naming it, until it is allowed.
        let update = |status| {
            let path = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/ccm";
            let access = crate::kube::refusals::Access::of(&axum::http::Method::PUT, path, None);
            refused.record(access.unwrap(), status);
        };
        update(axum::http::StatusCode::FORBIDDEN);
        let refusal = get("/readyz").await.unwrap();
        assert_eq!(refusal.status(), 503);
        let text = refusal.text().await.unwrap();
        assert!(
            text.starts_with("kubernetes: forbidden: cannot update coordination.k8s.io/leases:"),
            "{text}"
        );
        update(axum::http::StatusCode::OK);
        assert_eq!(get("/readyz").await.unwrap().status(), 200);
        // The metrics only for a token the API server allows; anything else is not served.
        assert_eq!(get("/metrics").await.unwrap().status(), 401);
        assert_eq!(get("/nowhere").await.unwrap().status(), 401);
        let scrape =
            |token: &str| client.get(format!("https://{addr}/metrics")).bearer_auth(token).send();
        let refused = scrape("nobody").await.unwrap();
        assert_eq!(refused.status(), 403);
        assert_eq!(
            refused.text().await.unwrap(),
            r#"forbidden: User "nobody" cannot get path "/metrics""#
        );
        let text = scrape("good").await.unwrap().text().await.unwrap();
        assert!(text.contains("occm_openstack_api_requests_total{service=\"compute\",operation=\"server_get\",result=\"ok\"} 1"), "{text}");
        let plain = client.get(format!("http://{addr}/healthz")).send().await;
        assert!(
            plain.is_err() || !plain.unwrap().status().is_success(),
            "plain HTTP is not served"
        );
    }

    /// See: issue 36 (`with_single_cert` refused it: rustls parses it as X.509 v3).
    #[tokio::test]
    async fn a_v1_serving_certificate_from_files_is_served() {
        let (cert, key) = testkit::openssl::OpensslCa::new("serving CA").v1_client("occm", &[]);
        let dir = tempfile::tempdir().unwrap();
        let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&cert_file, cert).unwrap();
        std::fs::write(&key_file, &key).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tls = tls_config(Some((&cert_file, &key_file)), addr.ip())
            .unwrap_or_else(|e| panic!("{}", crate::cloud::session::chain(&e)));
        let health = Health {
            ready: Arc::new(|| Ok(())),
            metrics: Metrics::shared(),
            refused: Refused::shared(),
        };
        tokio::spawn(serve(listener, tls, router(health, delegation())));
        let client = client();
        let answer = client.get(format!("https://{addr}/healthz")).send().await.unwrap();
        assert_eq!(answer.status(), 200);

        // A key that is not the certificate's is still refused, naming both files.
        let other = testkit::openssl::OpensslCa::new("other").v1_client("other", &[]).1;
        std::fs::write(&key_file, other).unwrap();
        let err = tls_config(Some((&cert_file, &key_file)), addr.ip()).unwrap_err();
        assert_eq!(
            crate::cloud::session::chain(&err),
            format!(
                "invalid serving certificate or key: --tls-cert-file {}, --tls-private-key-file \
                 {}: the private key does not belong to the certificate (their public keys \
                 differ)",
                cert_file.display(),
                key_file.display()
            )
        );
    }
}
