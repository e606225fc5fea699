//! Shape checks for key material: the PEM trust bundle and SSH public keys.
//!
//! These check structure only (PEM framing, base64 alphabet, key type); they do not decode
//! DER, which the installer does and which would need an X.509 parser here.

/// At least one PEM block, every block a `CERTIFICATE` with a base64 body.
pub(crate) fn ca_bundle(text: &str) -> Result<(), String> {
    let mut rest = text;
    let mut blocks = 0;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(label_end) = after.find("-----") else {
            return Err("invalid block".to_owned());
        };
        let label = &after[..label_end];
        let body_and_rest = &after[label_end + "-----".len()..];
        let end_marker = format!("-----END {label}-----");
        let Some(body_end) = body_and_rest.find(&end_marker) else {
            return Err("invalid block".to_owned());
        };
        if label != "CERTIFICATE" {
            return Err(format!("PEM block of type \"{label}\" is not a certificate"));
        }
        if !is_base64(&body_and_rest[..body_end]) {
            return Err("invalid block".to_owned());
        }
        blocks += 1;
        rest = &body_and_rest[body_end + end_marker.len()..];
    }
    if blocks == 0 {
        return Err("invalid block".to_owned());
    }
    Ok(())
}

/// Standard base64 with padding, whitespace ignored, non-empty.
fn is_base64(body: &str) -> bool {
    let compact: Vec<u8> = body.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let data_len = compact.iter().position(|b| *b == b'=').unwrap_or(compact.len());
    let (data, padding) = compact.split_at(data_len);
    !compact.is_empty()
        && compact.len().is_multiple_of(4)
        && padding.len() <= 2
        && padding.iter().all(|b| *b == b'=')
        && data.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

/// At least one `authorized_keys` line: `[options] <type> <base64> [comment]`.
pub(crate) fn ssh_public_key(text: &str) -> Result<(), String> {
    let is_key_type = |token: &str| {
        token.starts_with("ssh-") || token.starts_with("ecdsa-") || token.starts_with("sk-")
    };
    let found =
        text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).any(
            |line| {
                let tokens: Vec<&str> = line.split_whitespace().collect();
                tokens.windows(2).any(|pair| is_key_type(pair[0]) && is_base64(pair[1]))
            },
        );
    if found { Ok(()) } else { Err("ssh: no key found".to_owned()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str =
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\nYWJj\n-----END CERTIFICATE-----\n";

    #[test]
    fn bundles_need_certificate_blocks() {
        assert!(ca_bundle(CERT).is_ok());
        assert!(ca_bundle(&format!("# comment\n{CERT}\n{CERT}\n")).is_ok());
        assert_eq!(ca_bundle("not a cert").unwrap_err(), "invalid block");
        assert_eq!(ca_bundle("").unwrap_err(), "invalid block");
        assert_eq!(
            ca_bundle("-----BEGIN RSA PRIVATE KEY-----\nYWJj\n-----END RSA PRIVATE KEY-----\n")
                .unwrap_err(),
            "PEM block of type \"RSA PRIVATE KEY\" is not a certificate"
        );
        assert_eq!(
            ca_bundle("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n").unwrap_err(),
            "invalid block"
        );
    }

    #[test]
    fn ssh_keys_need_a_type_and_base64() {
        assert!(ssh_public_key("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA== me@host").is_ok());
        assert!(ssh_public_key("ecdsa-sha2-nistp256 AAAA").is_ok());
        assert_eq!(ssh_public_key("hello").unwrap_err(), "ssh: no key found");
    }
}
