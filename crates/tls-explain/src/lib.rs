//! The trust bundles of both binaries' HTTP clients ([`trust_bundle`]), and why a TLS
//! connection to OpenStack failed, said in one line: the host, the verifier's reason
//! and the setting that fixes it. osauth folds a handshake failure into "error sending request",
//! so after a failed login the caller fetches the auth URL once more with the same trust
//! settings and [`diagnose`] digs the rustls error out of the chain. Both binaries word the fix
//! in their own settings ([`Settings`]). A certificate of one's own (a client's, or the
//! `/metrics` server's) goes to rustls through [`certified_key`], which takes X.509 v1 too.

pub mod certified_key;
mod chain;

pub use chain::chain;

/// `builder` trusting, besides what it already trusts, every certificate of the PEM bundle
/// `pem`; with how many were added (0 for a text without a certificate: the caller decides
/// whether that is an error). Both binaries' clients take their CA bundles through this.
pub fn trust_bundle(
    mut builder: reqwest::ClientBuilder,
    pem: &[u8],
) -> Result<(reqwest::ClientBuilder, usize), reqwest::Error> {
    let certs = reqwest::Certificate::from_pem_bundle(pem)?;
    let count = certs.len();
    for cert in certs {
        builder = builder.add_root_certificate(cert);
    }
    Ok((builder, count))
}

/// How a binary names its trust settings in the fix.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Where a CA bundle goes, e.g. "set \[Global\] ca-file (cacert in clouds.yaml) to".
    pub ca: &'static str,
    /// How verification is turned off, e.g. "tls-insecure = true"; `None` where it cannot be.
    pub insecure: Option<&'static str>,
}

/// The explanation of a failed TLS handshake with `url`, or `None` when `url` is not HTTPS, or
/// the request fails for another reason (or not at all).
pub async fn diagnose(client: &reqwest::Client, url: &str, settings: Settings) -> Option<String> {
    if !url.starts_with("https://") {
        return None;
    }
    let error = client.get(url).send().await.err()?;
    from_error(&error, settings)
}

/// The explanation of `error` when a TLS handshake is what failed.
pub fn from_error(error: &reqwest::Error, settings: Settings) -> Option<String> {
    let reason = rustls_reason(error)?;
    let host = error
        .url()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_else(|| "the server".to_owned());
    Some(explain(&host, &reason, settings))
}

/// The rustls error in `error`'s chain, as rustls words it. An `io::Error` hides the error it
/// wraps from `source()` (and reqwest's chain has two of them), so those are opened by hand.
fn rustls_reason(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        next = match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// One line: what failed, rustls's own reason, and what to change.
pub fn explain(host: &str, reason: &str, settings: Settings) -> String {
    let lower = reason.to_ascii_lowercase().replace(' ', "");
    let insecure = match settings.insecure {
        Some(setting) => format!(", or {setting} to skip verification (unsafe)"),
        None => String::new(),
    };
    let (what, fix) = if lower.contains("unknownissuer") || lower.contains("badsignature") {
        (
            "certificate signed by an unknown authority",
            format!("{} the CA bundle that signed it{insecure}", settings.ca),
        )
    } else if lower.contains("expired") || lower.contains("notvalidyet") {
        (
            "certificate expired or not yet valid",
            format!("the server needs a certificate valid now (check its clock too){insecure}"),
        )
    } else if lower.contains("notvalidforname") {
        (
            "certificate not valid for this host name",
            format!("use a host name the certificate names in the URL{insecure}"),
        )
    } else {
        ("TLS handshake refused", format!("{} the right CA bundle{insecure}", settings.ca))
    };
    format!("TLS with {host} failed: {what} ({reason}); {fix}")
}

#[cfg(test)]
mod tests {
    use super::{Settings, explain};

    const CONTROLLER: Settings = Settings {
        ca: "set [Global] ca-file (cacert in clouds.yaml) to",
        insecure: Some("tls-insecure = true"),
    };

    #[test]
    fn each_verifier_reason_gets_its_own_fix() {
        let explain = |host: &str, reason: &str| explain(host, reason, CONTROLLER);
        let unknown = explain("127.0.0.1:25020", "invalid peer certificate: UnknownIssuer");
        assert_eq!(
            unknown,
            "TLS with 127.0.0.1:25020 failed: certificate signed by an unknown authority \
             (invalid peer certificate: UnknownIssuer); set [Global] ca-file (cacert in \
             clouds.yaml) to the CA bundle that signed it, or tls-insecure = true to skip \
             verification (unsafe)"
        );
        let expired = explain("h:1", "invalid peer certificate: certificate expired: …");
        assert!(expired.contains("certificate expired or not yet valid"), "{expired}");
        let name = explain("h:1", "invalid peer certificate: NotValidForName");
        assert!(name.contains("not valid for this host name"), "{name}");
        assert!(explain("h:1", "peer is incompatible").contains("TLS handshake refused"));
    }
}
