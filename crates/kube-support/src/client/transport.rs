//! The client's HTTP stack: kube-rs's own, except that the kubeconfig's client certificate is
//! presented as given, so that an X.509 v1 one works as it does with kubectl.
//!
//! kube-rs builds its rustls configuration with `with_client_auth_cert`, which parses the
//! client certificate with webpki to match it with the key, and webpki takes v3 only: a
//! certificate minted as the Kubernetes docs show (`openssl x509 -req` without `-extfile`, so
//! v1) stopped the controller with `UnsupportedCertVersion`, though kube-apiserver accepts it (see:
//! issue 36; rustls/rustls#2364). So the identity is taken out of the `Config`, kube-rs builds
//! the rest of the TLS configuration (the kubeconfig's CA, `insecure-skip-tls-verify`, the
//! in-cluster CA reload), the identity goes in as a [`SingleCertAndKey`], and the stack around
//! it is kube-rs's `ClientBuilder::try_from`: `tls-server-name`, its timeouts, retries, auth
//! (token, exec) and headers.

use std::path::Path;
use std::sync::Arc;

use ::kube::client::middleware::BaseUriLayer;
use ::kube::client::retry::RetryPolicy;
use ::kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use ::kube::config::AuthInfo;
use base64::Engine as _;
use http_body_util::BodyExt as _;
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::ServerName;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use secrecy::ExposeSecret;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt as _};
use tower_http::trace::TraceLayer;

/// The service under every client: what kube-rs's default stack is.
pub type Stack = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// An error building the stack.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The client certificate or key file could not be read.
    #[error("cannot read {field} {path}")]
    Read {
        /// `client-certificate` or `client-key`.
        field: &'static str,
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A `-data` field is not base64.
    #[error("{field}-data is not base64")]
    Base64 {
        /// `client-certificate` or `client-key`.
        field: &'static str,
        /// Why.
        #[source]
        source: base64::DecodeError,
    },
    /// A client certificate without a key, or a key without a certificate.
    #[error("{given} is set but {missing} is not")]
    Half {
        /// The field that is set.
        given: &'static str,
        /// The field that is not.
        missing: &'static str,
    },
    /// The client certificate and key cannot be presented.
    #[error("client-certificate and client-key")]
    Identity(#[source] ccm_tls_explain::certified_key::Error),
    /// The exec plugin returned an X.509 v1 client certificate: kube-rs runs the plugin and
    /// loads its certificate itself, with the v3-only parse this module avoids for the
    /// kubeconfig's own certificate.
    #[error(
        "the exec plugin's client certificate is X.509 v1, which kube-rs cannot present: have \
         it issued as v3 (openssl x509 -req … -extfile <(printf 'extendedKeyUsage=clientAuth'))"
    )]
    ExecV1,
    /// kube-rs could not build the rest of the TLS configuration.
    #[error("cannot set up TLS (certificate-authority, insecure-skip-tls-verify)")]
    Tls(#[source] ::kube::Error),
    /// kube-rs could not build the authentication or header layer.
    #[error("cannot set up authentication (token, exec) or headers")]
    Layer(#[source] ::kube::Error),
    /// `tls-server-name` is not a DNS name or IP address.
    #[error("tls-server-name {name:?} is not a DNS name or IP address")]
    ServerName {
        /// The name.
        name: String,
    },
    /// A proxy, which kube-rs is not built to use here either.
    #[error("proxy-url {0}: proxies are not supported")]
    Proxy(Uri),
}

/// A client builder for `config` over kube-rs's stack, its client certificate presented as
/// given.
pub fn builder(mut config: ::kube::Config) -> Result<ClientBuilder<Stack>, Error> {
    if let Some(proxy) = config.proxy_url.take() {
        return Err(Error::Proxy(proxy));
    }
    let identity = take_identity(&mut config.auth_info)?;
    let mut tls = config.rustls_client_config().map_err(|e| {
        // webpki's error is wrapped type-erased (`Other(OtherError(UnsupportedCertVersion))`):
        // its name is what is left to match.
        let v1 = ccm_tls_explain::chain(&e).contains("UnsupportedCertVersion");
        if v1 && config.auth_info.exec.is_some() { Error::ExecV1 } else { Error::Tls(e) }
    })?;
    if let Some(identity) = identity {
        tls.client_auth_cert_resolver = Arc::new(SingleCertAndKey::from(identity));
    }

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    let https = match &config.tls_server_name {
        Some(name) => {
            let fixed = ServerName::try_from(name.clone())
                .map_err(|_| Error::ServerName { name: name.clone() })?;
            https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(fixed))
        }
        None => https,
    };
    let mut connector =
        hyper_timeout::TimeoutConnector::new(https.enable_http1().wrap_connector(http));
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let client: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector);

    // Layer for layer what `ClientBuilder::try_from` stacks (kube-client 5.0, builder.rs).
    let service = ServiceBuilder::new()
        .layer(BaseUriLayer::new(config.cluster_url.clone()))
        .option_layer(
            config
                .default_retry
                .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer().map_err(Error::Layer)?)
        .layer(config.extra_headers_layer().map_err(Error::Layer)?)
        .layer(TraceLayer::new_for_http())
        .map_err(BoxError::from)
        .service(client)
        .map_response(|response| {
            response.map(|body| Box::new(body.map_err(BoxError::from)) as Box<DynBody>)
        });
    Ok(ClientBuilder::new(BoxService::new(service), config.default_namespace))
}

/// The client certificate and key of `auth`, removed from it (kube-rs must not load them:
/// it refuses v1), each from its `-data` field (base64) or else its file, as kube-rs and
/// client-go read them.
fn take_identity(auth: &mut AuthInfo) -> Result<Option<Arc<CertifiedKey>>, Error> {
    const CERT: &str = "client-certificate";
    const KEY: &str = "client-key";
    let cert =
        read(CERT, auth.client_certificate_data.take().as_deref(), auth.client_certificate.take())?;
    let key_data = auth.client_key_data.take();
    let key = read(KEY, key_data.as_ref().map(|k| k.expose_secret()), auth.client_key.take())?;
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(Error::Half { given: CERT, missing: KEY }),
        (None, Some(_)) => Err(Error::Half { given: KEY, missing: CERT }),
        (Some(cert), Some(key)) => {
            ccm_tls_explain::certified_key::from_pem(&cert, &key).map(Some).map_err(Error::Identity)
        }
    }
}

/// The bytes of `field`: its `-data` form (base64) when set, else the file it names.
fn read(
    field: &'static str,
    data: Option<&str>,
    file: Option<String>,
) -> Result<Option<Vec<u8>>, Error> {
    match (data, file) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|source| Error::Base64 { field, source }),
        (None, Some(path)) => std::fs::read(Path::new(&path))
            .map(Some)
            .map_err(|source| Error::Read { field, path, source }),
        (None, None) => Ok(None),
    }
}
