//! Why a TLS connection to OpenStack failed, said in one line: the host, the verifier's reason
//! and the setting that fixes it. osauth folds a handshake failure into "error sending request",
//! so after a failed login the auth URL is fetched once more with the same client and the
//! rustls error is dug out of the chain.

/// The explanation of a failed TLS handshake with `url`, or `None` when `url` is not HTTPS, or
/// the request fails for another reason (or not at all).
pub(crate) async fn diagnose(client: &reqwest::Client, url: &str) -> Option<String> {
    if !url.starts_with("https://") {
        return None;
    }
    let error = client.get(url).send().await.err()?;
    let reason = rustls_reason(&error)?;
    let host = error
        .url()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_else(|| url.to_owned());
    Some(explain(&host, &reason))
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
pub(crate) fn explain(host: &str, reason: &str) -> String {
    let lower = reason.to_ascii_lowercase().replace(' ', "");
    let insecure = "or tls-insecure = true to skip verification (unsafe)";
    let (what, fix) = if lower.contains("unknownissuer") || lower.contains("badsignature") {
        (
            "certificate signed by an unknown authority",
            format!(
                "set [Global] ca-file (cacert in clouds.yaml) to the CA bundle that signed it, \
                 {insecure}"
            ),
        )
    } else if lower.contains("expired") || lower.contains("notvalidyet") {
        (
            "certificate expired or not yet valid",
            format!("the server needs a certificate valid now (check its clock too), {insecure}"),
        )
    } else if lower.contains("notvalidforname") {
        (
            "certificate not valid for this host name",
            format!(
                "use a host name the certificate names in auth-url (and in the catalog), \
                 {insecure}"
            ),
        )
    } else {
        (
            "TLS handshake refused",
            format!("check [Global] ca-file (cacert in clouds.yaml), {insecure}"),
        )
    };
    format!("TLS with {host} failed: {what} ({reason}); {fix}")
}

#[cfg(test)]
mod tests {
    use super::explain;

    #[test]
    fn each_verifier_reason_gets_its_own_fix() {
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
