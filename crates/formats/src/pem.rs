//! PEM helpers: wrap a PKCS#1 RSA key (what the installer writes) as PKCS#8 (what ring loads).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

const PKCS1: &str = "RSA PRIVATE KEY";
const PKCS8: &str = "PRIVATE KEY";
/// `AlgorithmIdentifier { rsaEncryption (1.2.840.113549.1.1.1), NULL }`, DER.
const RSA_ALGORITHM: &[u8] =
    &[0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];

/// A key that is not PEM or not base64.
#[derive(Debug, thiserror::Error)]
#[error("not a PEM private key: {0}")]
pub struct Error(&'static str);

/// Returns `pem` unchanged unless it is a PKCS#1 `RSA PRIVATE KEY`, which becomes the same key
/// as a PKCS#8 `PRIVATE KEY`.
pub fn to_pkcs8(pem: &str) -> Result<String, Error> {
    let begin = format!("-----BEGIN {PKCS1}-----");
    let end = format!("-----END {PKCS1}-----");
    let Some(start) = pem.find(&begin) else {
        return Ok(pem.to_owned());
    };
    let body = &pem[start + begin.len()..];
    let body = &body[..body.find(&end).ok_or(Error("missing END line"))?];
    let base64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let pkcs1 = STANDARD.decode(base64).map_err(|_| Error("invalid base64"))?;
    let mut info = vec![0x02, 0x01, 0x00]; // version 0
    info.extend_from_slice(RSA_ALGORITHM);
    info.extend(der(0x04, &pkcs1)); // privateKey OCTET STRING
    let pkcs8 = der(0x30, &info);
    let encoded = STANDARD.encode(pkcs8);
    let mut out = format!("-----BEGIN {PKCS8}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {PKCS8}-----\n"));
    Ok(out)
}

/// A DER TLV with a definite length.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(u8::try_from(len).expect("checked < 0x80"));
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | u8::try_from(bytes.len()).expect("a usize has at most 8 bytes"));
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths_use_the_short_and_long_forms() {
        assert_eq!(der(0x04, &[1, 2]), [0x04, 0x02, 1, 2]);
        assert_eq!(&der(0x04, &[0; 200])[..3], &[0x04, 0x81, 200]);
        assert_eq!(&der(0x04, &[0; 1000])[..4], &[0x04, 0x82, 0x03, 0xe8]);
    }

    #[test]
    fn pkcs8_and_other_pem_pass_through_unchanged() {
        let pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(to_pkcs8(pem).unwrap(), pem);
    }
}
