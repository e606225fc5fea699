//! The rustls configuration of the OpenStack HTTP client: the web's roots plus the CA bundles,
//! verification off on request, and the client certificate presented as given (X.509 v1 too).
//!
//! reqwest loads a client certificate (`Identity`) with rustls's `with_client_auth_cert`, which
//! refuses an X.509 v1 certificate (`UnsupportedCertVersion`) though Keystone's front (Apache,
//! HAProxy: OpenSSL) takes it; see: issue 36, `ccm_tls_explain::certified_key`. So the client
//! gets its whole configuration from here (`use_preconfigured_tls`), made as reqwest makes its
//! own: ring, TLS 1.2 and 1.3, the webpki roots, ALPN `http/1.1`.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Why a CA bundle cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The bundle is not PEM.
    #[error("not a PEM bundle")]
    Pem(#[source] rustls::pki_types::pem::Error),
    /// The bundle holds no certificate.
    #[error("no certificate found")]
    Empty,
    /// A certificate of the bundle is not one rustls can trust.
    #[error("a certificate cannot be trusted")]
    Root(#[source] rustls::Error),
}

/// What the client trusts and presents.
#[derive(Debug)]
pub(crate) struct Tls {
    roots: RootCertStore,
    insecure: bool,
    identity: Option<Arc<CertifiedKey>>,
}

impl Tls {
    /// The web's roots (as reqwest's `rustls-tls` trusts them), no client certificate.
    pub(crate) fn new() -> Tls {
        let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        Tls { roots, insecure: false, identity: None }
    }

    /// Also trusts every certificate of the PEM bundle `pem`; one without any is an error.
    pub(crate) fn trust(&mut self, pem: &[u8]) -> Result<(), Error> {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(pem).collect::<Result<_, _>>().map_err(Error::Pem)?;
        if certs.is_empty() {
            return Err(Error::Empty);
        }
        for cert in certs {
            self.roots.add(cert).map_err(Error::Root)?;
        }
        Ok(())
    }

    /// Verifies no server certificate (`tls-insecure`, `verify: false`).
    pub(crate) fn insecure(&mut self) {
        self.insecure = true;
    }

    /// Presents `identity` when a server asks for a client certificate.
    pub(crate) fn present(&mut self, identity: Arc<CertifiedKey>) {
        self.identity = Some(identity);
    }

    /// The configuration for `reqwest::ClientBuilder::use_preconfigured_tls`.
    pub(crate) fn client_config(self) -> rustls::ClientConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .expect("ring supports TLS 1.2 and 1.3");
        let builder = if self.insecure {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerifier(provider)))
        } else {
            builder.with_root_certificates(self.roots)
        };
        let mut config = match self.identity {
            Some(identity) => {
                builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(identity)))
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        config
    }
}

/// Accepts every server certificate and handshake signature, as reqwest's
/// `danger_accept_invalid_certs` does.
#[derive(Debug)]
struct NoVerifier(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
