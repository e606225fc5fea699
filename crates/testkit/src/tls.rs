//! A private CA, and TLS servers on 127.0.0.1 whose certificate is wrong on purpose (expired,
//! for another host name, from another CA), for the tests of both binaries' TLS errors.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, date_time_ymd};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A throwaway certificate authority.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// When a certificate is valid.
#[derive(Debug, Clone, Copy)]
pub enum Validity {
    /// From 2020 to 2100.
    Now,
    /// 2020 to 2021: expired.
    Expired,
}

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("CA key");
        TestCa { issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate") }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` (IP addresses or DNS names) and its key, both PEM.
    pub fn server(&self, names: &[&str], validity: Validity) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("server parameters");
        (params.not_before, params.not_after) = match validity {
            Validity::Now => (date_time_ymd(2020, 1, 1), date_time_ymd(2100, 1, 1)),
            Validity::Expired => (date_time_ymd(2020, 1, 1), date_time_ymd(2021, 1, 1)),
        };
        let key = KeyPair::generate().expect("server key");
        let cert = params.signed_by(&key, &self.issuer).expect("server certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// A rustls server configuration for this certificate and key (PEM), for blocking servers too.
pub fn server_config(cert_pem: &str, key_pem: &str) -> rustls::ServerConfig {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("certificate PEM");
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server certificate and key")
}

/// A TLS server on 127.0.0.1 with this certificate that answers every request with
/// `200 {}` (so a client that trusts it gets through, and one that does not fails in the
/// handshake); stops when dropped.
pub struct TlsServer {
    /// Its port.
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsServer {
    /// Starts it (inside a tokio runtime).
    pub async fn start(cert_pem: &str, key_pem: &str) -> TlsServer {
        let config = server_config(cert_pem, key_pem);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let Ok(mut tls) = acceptor.accept(stream).await else { return };
                    let mut buf = [0u8; 4096];
                    let _ = tls.read(&mut buf).await;
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                                  content-length: 2\r\nconnection: close\r\n\r\n{}";
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        TlsServer { port, task }
    }
}
