use rcgen::{CertificateParams, KeyPair};

use super::*;

/// A self-signed v3 certificate (rcgen, P-256) and its key, PEM.
fn v3() -> (String, String) {
    let key = KeyPair::generate().expect("a key");
    let params = CertificateParams::new(vec!["u".to_owned()]).expect("parameters");
    (params.self_signed(&key).expect("a certificate").pem(), key.serialize_pem())
}

/// A DER element with a definite length.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = u16::try_from(content.len()).expect("a test certificate is small");
    // DER's lengths are minimal: one byte below 128, else as few bytes as the length needs.
    match u8::try_from(len) {
        Ok(short) if short < 0x80 => out.push(short),
        Ok(byte) => out.extend([0x81, byte]),
        Err(_) => {
            out.push(0x82);
            out.extend(len.to_be_bytes());
        }
    }
    out.extend_from_slice(content);
    out
}

/// `cert` laid out as version 1: its `tbsCertificate` without the `[0]` version and the `[3]`
/// extensions (the signature no longer matches: nothing here checks it).
fn as_v1(cert: &[u8]) -> Vec<u8> {
    let (certificate, _) = tlv(cert, 0x30).expect("a certificate");
    let (tbs, mut after_tbs) = tlv(certificate.content, 0x30).expect("a tbsCertificate");
    let mut fields = Vec::new();
    let mut rest = tbs.content;
    while let Some(&tag) = rest.first() {
        let (element, next) = tlv(rest, tag).expect("a field");
        if tag != 0xa0 && tag != 0xa3 {
            fields.extend_from_slice(element.whole);
        }
        rest = next;
    }
    let mut body = der(0x30, &fields);
    while let Some(&tag) = after_tbs.first() {
        let (element, next) = tlv(after_tbs, tag).expect("the signature fields");
        body.extend_from_slice(element.whole);
        after_tbs = next;
    }
    der(0x30, &body)
}

#[test]
fn a_v3_certificate_is_taken_with_its_key() {
    let (cert, key) = v3();
    let certified = from_pem(cert.as_bytes(), key.as_bytes()).expect("presentable");
    assert_eq!(certified.cert.len(), 1);
}

#[test]
fn a_v1_certificate_is_taken_with_its_key_where_rustls_refuses_it() {
    let (cert, key) = v3();
    let v3_der = CertificateDer::from_pem_slice(cert.as_bytes()).expect("PEM");
    let v1 = CertificateDer::from(as_v1(&v3_der));
    let key_der = || PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("a key");
    assert_eq!(subject_public_key_info(&v1), subject_public_key_info(&v3_der));

    let certified = from_der(vec![v1.clone()], key_der()).expect("presentable");
    assert_eq!(certified.cert, vec![v1.clone()]);
    // What this module is for: rustls's own loader refuses the same pair.
    let provider = rustls::crypto::ring::default_provider();
    let refused = CertifiedKey::from_der(vec![v1], key_der(), &provider).unwrap_err();
    assert!(format!("{refused:?}").contains("UnsupportedCertVersion"), "{refused:?}");
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused() {
    let ((cert, _), (_, other_key)) = (v3(), v3());
    let err = from_pem(cert.as_bytes(), other_key.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::KeyMismatch), "{err:?}");
}

#[test]
fn text_without_a_certificate_or_a_key_is_refused_as_such() {
    let (cert, key) = v3();
    assert!(matches!(from_pem(b"", key.as_bytes()), Err(Error::NoCertificate)));
    assert!(matches!(from_pem(cert.as_bytes(), b"no key"), Err(Error::KeyPem(_))));
    let garbage = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("a key");
    assert!(matches!(from_der(vec![garbage], key), Err(Error::NotX509)));
}

#[test]
fn der_lengths_in_the_long_form_are_read_and_overruns_refused() {
    let long = der(0x30, &[0; 300]);
    let (element, rest) = tlv(&long, 0x30).expect("an element");
    assert_eq!((element.content.len(), element.whole.len(), rest.len()), (300, 304, 0));
    assert!(tlv(&long[..100], 0x30).is_none(), "shorter than its length");
    assert!(tlv(&long, 0x02).is_none(), "another tag");
    assert!(tlv(&[0x30, 0x80], 0x30).is_none(), "indefinite length is not DER");
}
