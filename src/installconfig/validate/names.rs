//! Name rules with the installer's wording: RFC 1123 subdomains, cluster names, domains.

/// k8s `validation.IsDNS1123Subdomain`'s message for a value that does not match.
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
    alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
    (e.g. 'example.com', regex used for validation is \
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// k8s `DNS1123SubdomainMaxLength`.
const SUBDOMAIN_MAX: usize = 253;

/// The installer keeps 9 characters of a DNS label for `\052.apps` (the wildcard record).
const CLUSTER_NAME_MAX: usize = 63 - 9;

/// Checks an RFC 1123 subdomain; the errors are joined as k8s' `NewAggregate` joins them.
pub(crate) fn subdomain(value: &str) -> Result<(), String> {
    let mut messages = Vec::new();
    if value.len() > SUBDOMAIN_MAX {
        messages.push(format!("must be no more than {SUBDOMAIN_MAX} characters"));
    }
    if !value.split('.').all(is_label) {
        messages.push(SUBDOMAIN_MESSAGE.to_owned());
    }
    match messages.len() {
        0 => Ok(()),
        1 => Err(messages.remove(0)),
        _ => Err(format!("[{}]", messages.join(", "))),
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            edge(first) && edge(last) && bytes.iter().all(|b| edge(b) || *b == b'-')
        }
        _ => false,
    }
}

/// A domain name; a trailing dot is accepted.
pub(crate) fn domain(value: &str) -> Result<(), String> {
    subdomain(value.strip_suffix('.').unwrap_or(value))
}

/// Which cluster-name rule the platform applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// RFC 1123 subdomain, at most 54 characters.
    Default,
    /// GCP and Azure: must also start with a letter (resource names are RFC 1035).
    Rfc1035,
    /// OpenStack, vSphere, bare metal, Nutanix: no dots (the name is a DNS label on the nodes).
    OnPremises,
}

/// The installer's `validate.ClusterName` family.
pub(crate) fn cluster_name(value: &str, rule: NameRule) -> Result<(), String> {
    match rule {
        NameRule::Rfc1035 if !value.starts_with(|c: char| c.is_ascii_lowercase()) => {
            return Err("cluster name must begin with a lower-case letter".to_owned());
        }
        NameRule::OnPremises if value.contains('.') => {
            return Err("cluster name must not contain '.'".to_owned());
        }
        _ => {}
    }
    if value.len() > CLUSTER_NAME_MAX {
        return Err(format!("must be no more than {CLUSTER_NAME_MAX} characters"));
    }
    subdomain(value)
}

/// A `noProxy` domain entry: a leading `.` means "and subdomains".
pub(crate) fn no_proxy_domain(value: &str) -> Result<(), String> {
    subdomain(value.strip_prefix('.').unwrap_or(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_follow_the_rfc_1123_regex() {
        assert!(subdomain("example.com").is_ok());
        assert!(subdomain("a-b.c0").is_ok());
        for bad in ["", "bad-name-", "-a", "A", "a..b", "a_b", "a."] {
            assert_eq!(subdomain(bad), Err(SUBDOMAIN_MESSAGE.to_owned()), "{bad}");
        }
        let long = format!("{}-", "a".repeat(260));
        let err = subdomain(&long).unwrap_err();
        assert!(err.starts_with("[must be no more than 253 characters, a lowercase"));
    }

    #[test]
    fn cluster_names_apply_the_platform_rule() {
        assert!(cluster_name("ocp", NameRule::Default).is_ok());
        assert_eq!(
            cluster_name("1ocp", NameRule::Rfc1035).unwrap_err(),
            "cluster name must begin with a lower-case letter"
        );
        assert_eq!(
            cluster_name("a.b", NameRule::OnPremises).unwrap_err(),
            "cluster name must not contain '.'"
        );
        assert_eq!(
            cluster_name(&"a".repeat(55), NameRule::Default).unwrap_err(),
            "must be no more than 54 characters"
        );
        assert!(domain("example.com.").is_ok());
        assert!(no_proxy_domain(".example.com").is_ok());
    }
}
