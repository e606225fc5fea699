//! One's own certificate and key as rustls presents them: the chain as given, the key checked
//! against it by public key only, so that an X.509 v1 certificate works as it does in Go.
//!
//! `openssl x509 -req` without `-extfile` mints version 1 certificates (the Kubernetes docs
//! make users that way), and kube-apiserver, kubectl and OpenSSL accept them. rustls's own
//! loaders (`with_client_auth_cert`, `with_single_cert`, and reqwest's `Identity` and kube-rs's
//! client, which call them) refuse them since rustls 0.23.23: `CertifiedKey::from_der` checks
//! the key against the certificate by parsing it with webpki, which takes v3 only
//! (`UnsupportedCertVersion`; see: rustls/rustls#2364). Nobody needs to parse their own
//! certificate: the peer verifies it. So the key is loaded and compared with the certificate's
//! `subjectPublicKeyInfo`, found by a DER walk that reads every version, and the
//! [`CertifiedKey`] is made directly, to be presented through
//! [`rustls::sign::SingleCertAndKey`].

use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// Why a certificate and key cannot be presented.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The certificate text is not PEM.
    #[error("the certificate is not PEM")]
    CertificatePem(#[source] pem::Error),
    /// The certificate text holds no `CERTIFICATE` block.
    #[error("no certificate (a PEM CERTIFICATE block) found")]
    NoCertificate,
    /// The key text holds no private key rustls reads.
    #[error("no private key (PEM PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY) found")]
    KeyPem(#[source] pem::Error),
    /// The key is of a kind rustls cannot sign with.
    #[error("the private key cannot be used")]
    Key(#[source] rustls::Error),
    /// The first certificate is not DER X.509.
    #[error("the certificate is not an X.509 certificate")]
    NotX509,
    /// The key is not the certificate's.
    #[error("the private key does not belong to the certificate (their public keys differ)")]
    KeyMismatch,
}

/// The chain in `cert_pem` (end entity first) with the key in `key_pem`, ready to present;
/// every X.509 version is taken.
pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<CertifiedKey>, Error> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(Error::CertificatePem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(Error::KeyPem)?;
    from_der(chain, key)
}

/// [`from_pem`] for DER: `chain` end entity first.
pub fn from_der(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<CertifiedKey>, Error> {
    let end_entity = chain.first().ok_or(Error::NoCertificate)?;
    let provider = rustls::crypto::ring::default_provider();
    let key = provider.key_provider.load_private_key(key).map_err(Error::Key)?;
    let spki = subject_public_key_info(end_entity).ok_or(Error::NotX509)?;
    // A key that cannot name its public key is taken, as rustls takes it
    // (`InconsistentKeys::Unknown`); ring's keys all can.
    if key.public_key().is_some_and(|ours| ours.as_ref() != spki) {
        return Err(Error::KeyMismatch);
    }
    Ok(Arc::new(CertifiedKey::new(chain, key)))
}

/// The `subjectPublicKeyInfo` of a DER certificate, tag and length included, whatever its
/// version: `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL (absent
/// in v1), serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, … }, … }`
/// (RFC 5280, 4.1).
fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    const SEQUENCE: u8 = 0x30;
    const VERSION: u8 = 0xa0;
    let (certificate, _) = tlv(cert, SEQUENCE)?;
    let (tbs, _) = tlv(certificate.content, SEQUENCE)?;
    let mut rest = tbs.content;
    if rest.first() == Some(&VERSION) {
        rest = tlv(rest, VERSION)?.1;
    }
    for tag in [0x02, SEQUENCE, SEQUENCE, SEQUENCE, SEQUENCE] {
        rest = tlv(rest, tag)?.1; // serialNumber, signature, issuer, validity, subject
    }
    Some(tlv(rest, SEQUENCE)?.0.whole)
}

/// One DER element.
struct Element<'a> {
    whole: &'a [u8],
    content: &'a [u8],
}

/// The element at the start of `input`, which must have `tag`, and what follows it.
fn tlv(input: &[u8], tag: u8) -> Option<(Element<'_>, &[u8])> {
    let (&found, after_tag) = input.split_first()?;
    let (&first, after_first) = after_tag.split_first()?;
    let (length, after_length) = if first < 0x80 {
        (usize::from(first), after_first)
    } else {
        // Long form: the low bits count the length's bytes (at most 4 here: 4 GiB).
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || after_first.len() < count {
            return None;
        }
        let (bytes, after) = after_first.split_at(count);
        (bytes.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b)), after)
    };
    if found != tag || after_length.len() < length {
        return None;
    }
    let header = input.len() - after_length.len();
    let (whole, rest) = input.split_at(header + length);
    Some((Element { whole, content: &whole[header..] }, rest))
}

#[cfg(test)]
mod tests;
