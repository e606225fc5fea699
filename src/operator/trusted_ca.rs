//! The trusted CA bundle the CCM reads (`openshift-cloud-controller-manager/ccm-trusted-ca`,
//! key `ca-bundle.crt`): the proxy's trusted CA, the cloud config's CA and the system bundle,
//! each PEM block checked on its own.
//!
//! CCCMO drops a whole source when one of its blocks does not parse; here only the broken
//! block is left out, and each one is reported with its source and position, so that one bad
//! certificate pasted into the proxy's ConfigMap never takes the others' trust away.

/// The target ConfigMap's name (in the CCM's namespace).
pub const NAME: &str = "ccm-trusted-ca";

/// The target's key.
pub const KEY: &str = "ca-bundle.crt";

/// The key of the proxy's trusted-CA ConfigMap (`Proxy.spec.trustedCA.name` in
/// `openshift-config`).
pub const PROXY_KEY: &str = "ca-bundle.crt";

/// Where the system bundle is read by default: the trust store of our image
/// (`scripts/image.sh` installs it there), as CCCMO reads its own image's.
pub const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// One source of certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Where it comes from, for messages (`openshift-config/user-ca-bundle key ca-bundle.crt`).
    pub origin: String,
    /// Its PEM text.
    pub pem: String,
}

/// A block left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The source it came from.
    pub origin: String,
    /// Its position in the source (1-based).
    pub block: usize,
    /// Why it was left out.
    pub reason: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: PEM block {} left out: {}", self.origin, self.block, self.reason)
    }
}

/// The merged bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// Every good certificate, in source order, each block once, `\n`-terminated.
    pub pem: String,
    /// What was left out.
    pub broken: Vec<Broken>,
}

/// Merges `sources` in order: every block that is a parsable X.509 certificate, once (a block
/// byte-equal to an earlier one, as when the cloud config's CA is also the proxy's, is not
/// repeated).
pub fn merge(sources: &[Source]) -> Merged {
    let mut pem = String::new();
    let mut seen: Vec<String> = Vec::new();
    let mut broken = Vec::new();
    for source in sources {
        for (index, block) in blocks(&source.pem).into_iter().enumerate() {
            let report =
                |reason: String| Broken { origin: source.origin.clone(), block: index + 1, reason };
            match block.and_then(|b| check(&b).map(|()| b)) {
                Ok(block) if seen.contains(&block) => {}
                Ok(block) => {
                    pem.push_str(&block);
                    pem.push('\n');
                    seen.push(block);
                }
                Err(reason) => broken.push(report(reason)),
            }
        }
    }
    Merged { pem, broken }
}

/// The PEM blocks of `text`, each from its BEGIN line to its END line, or why it is no block.
fn blocks(text: &str) -> Vec<Result<String, String>> {
    const BEGIN: &str = "-----BEGIN ";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start..];
        let Some(label_end) = after[BEGIN.len()..].find("-----") else {
            out.push(Err("a BEGIN line without its closing dashes".to_owned()));
            break;
        };
        let label = &after[BEGIN.len()..BEGIN.len() + label_end];
        let end = format!("-----END {label}-----");
        let Some(end_at) = after.find(&end) else {
            out.push(Err(format!("no \"{end}\" line")));
            break;
        };
        let block = &after[..end_at + end.len()];
        out.push(match label {
            "CERTIFICATE" => Ok(block.to_owned()),
            other => Err(format!("a {other:?} block, not a certificate")),
        });
        rest = &after[end_at + end.len()..];
    }
    out
}

/// Whether `block` is one X.509 certificate.
fn check(block: &str) -> Result<(), String> {
    let (_, pem) =
        x509_parser::pem::parse_x509_pem(block.as_bytes()).map_err(|e| format!("not PEM: {e}"))?;
    pem.parse_x509().map(|_| ()).map_err(|e| format!("not an X.509 certificate: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(name: &str) -> String {
        let key = rcgen::KeyPair::generate().expect("a key");
        let params = rcgen::CertificateParams::new(vec![name.to_owned()]).expect("params");
        params.self_signed(&key).expect("a certificate").pem()
    }

    fn source(origin: &str, pem: &str) -> Source {
        Source { origin: origin.to_owned(), pem: pem.to_owned() }
    }

    #[test]
    fn a_broken_block_is_left_out_alone_and_named_with_its_source() {
        let (a, b, system) = (cert("a"), cert("b"), cert("system"));
        let garbled = a.replace("MII", "MIIZZ");
        let proxy = format!("{garbled}{b}");
        let merged = merge(&[source("proxy", &proxy), source("system", &system)]);
        assert_eq!(merged.pem, format!("{}\n{}\n", b.trim_end(), system.trim_end()));
        assert_eq!(merged.broken.len(), 1, "{:?}", merged.broken);
        assert_eq!((merged.broken[0].origin.as_str(), merged.broken[0].block), ("proxy", 1));
        assert!(merged.broken[0].to_string().starts_with("proxy: PEM block 1 left out: "));
    }

    #[test]
    fn a_certificate_in_two_sources_is_written_once() {
        let (ca, system) = (cert("ca"), cert("system"));
        let merged =
            merge(&[source("proxy", &ca), source("cloud", &ca), source("system", &system)]);
        assert_eq!(merged.pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(merged.broken.is_empty());
    }

    #[test]
    fn a_key_or_an_unterminated_block_is_not_a_certificate() {
        let key = rcgen::KeyPair::generate().expect("a key").serialize_pem();
        let merged =
            merge(&[source("proxy", &key), source("cloud", "-----BEGIN CERTIFICATE-----\nMII")]);
        assert_eq!(merged.pem, "");
        let reasons: Vec<&str> = merged.broken.iter().map(|b| b.reason.as_str()).collect();
        assert_eq!(
            reasons,
            ["a \"PRIVATE KEY\" block, not a certificate", "no \"-----END CERTIFICATE-----\" line"]
        );
    }

    #[test]
    fn the_same_sources_give_the_same_bytes() {
        let sources = [source("a", &cert("a")), source("b", &cert("b"))];
        assert_eq!(merge(&sources), merge(&sources));
    }
}
