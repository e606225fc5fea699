//! The flat table of every cloud.conf key the upstream OCCM reads, with its kind and default.

/// How a value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text.
    Text,
    /// A repeatable key: every occurrence adds one element.
    List,
    /// gcfg boolean: `true/false/yes/no/on/off/1/0`, a bare key is true.
    Bool,
    /// A boolean that upstream declares as a Go string (`tls-insecure`): checked as [`Kind::Bool`],
    /// but a bare key is an error, as gcfg says for a string.
    TextBool,
    /// Go `time.ParseDuration` text: the unit is required (`5s`).
    Duration,
    /// A non-negative integer.
    Uint,
    /// A signed integer.
    Int,
}

/// One known key.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// Section name as upstream writes it.
    pub section: &'static str,
    /// Key name, lower case with dashes.
    pub name: &'static str,
    /// Value kind.
    pub kind: Kind,
    /// Upstream default (`None` = empty).
    pub(crate) default: Option<&'static str>,
    /// Printed as `<redacted>`.
    pub(crate) secret: bool,
}

const fn k(section: &'static str, name: &'static str, kind: Kind) -> Key {
    Key { section, name, kind, default: None, secret: false }
}
const fn d(section: &'static str, name: &'static str, kind: Kind, default: &'static str) -> Key {
    Key { section, name, kind, default: Some(default), secret: false }
}
const fn s(section: &'static str, name: &'static str) -> Key {
    Key { section, name, kind: Kind::Text, default: None, secret: true }
}

use Kind::{Bool, Duration, Int, List, Text, TextBool, Uint};

/// `[LoadBalancerClass "name"]` keys.
pub const LB_CLASS: &[Key] = &[
    k("LoadBalancerClass", "floating-network-id", Text),
    k("LoadBalancerClass", "floating-subnet-id", Text),
    k("LoadBalancerClass", "floating-subnet", Text),
    k("LoadBalancerClass", "floating-subnet-tags", Text),
    k("LoadBalancerClass", "network-id", Text),
    k("LoadBalancerClass", "subnet-id", Text),
    k("LoadBalancerClass", "member-subnet-id", Text),
];

/// Every key of the plain sections, in the order `--check-config` prints them.
pub const KEYS: &[Key] = &[
    k("Global", "auth-url", Text),
    k("Global", "user-id", Text),
    k("Global", "username", Text),
    s("Global", "password"),
    k("Global", "tenant-id", Text),
    k("Global", "tenant-name", Text),
    k("Global", "trust-id", Text),
    k("Global", "trustee-id", Text),
    s("Global", "trustee-password"),
    k("Global", "domain-id", Text),
    k("Global", "domain-name", Text),
    k("Global", "tenant-domain-id", Text),
    k("Global", "tenant-domain-name", Text),
    k("Global", "user-domain-id", Text),
    k("Global", "user-domain-name", Text),
    k("Global", "region", Text),
    k("Global", "os-endpoint-type", Text),
    k("Global", "ca-file", Text),
    d("Global", "tls-insecure", TextBool, "false"),
    s("Global", "token"),
    k("Global", "cert-file", Text),
    k("Global", "key-file", Text),
    d("Global", "use-clouds", Bool, "false"),
    k("Global", "clouds-file", Text),
    k("Global", "cloud", Text),
    k("Global", "application-credential-id", Text),
    k("Global", "application-credential-name", Text),
    s("Global", "application-credential-secret"),
    k("Global", "secret-name", Text),
    k("Global", "secret-namespace", Text),
    k("Global", "kubeconfig-path", Text),
    d("Networking", "ipv6-support-disabled", Bool, "false"),
    k("Networking", "public-network-name", List),
    k("Networking", "internal-network-name", List),
    k("Networking", "address-sort-order", Text),
    d("LoadBalancer", "enabled", Bool, "true"),
    k("LoadBalancer", "lb-version", Text),
    k("LoadBalancer", "subnet-id", Text),
    k("LoadBalancer", "member-subnet-id", Text),
    k("LoadBalancer", "network-id", Text),
    k("LoadBalancer", "floating-network-id", Text),
    k("LoadBalancer", "floating-subnet-id", Text),
    k("LoadBalancer", "floating-subnet", Text),
    k("LoadBalancer", "floating-subnet-tags", Text),
    d("LoadBalancer", "lb-method", Text, "ROUND_ROBIN"),
    d("LoadBalancer", "lb-provider", Text, "amphora"),
    d("LoadBalancer", "create-monitor", Bool, "false"),
    d("LoadBalancer", "monitor-delay", Duration, "5s"),
    d("LoadBalancer", "monitor-timeout", Duration, "3s"),
    d("LoadBalancer", "monitor-max-retries", Uint, "1"),
    d("LoadBalancer", "monitor-max-retries-down", Uint, "3"),
    d("LoadBalancer", "manage-security-groups", Bool, "false"),
    d("LoadBalancer", "internal-lb", Bool, "false"),
    k("LoadBalancer", "node-selector", Text),
    d("LoadBalancer", "cascade-delete", Bool, "true"),
    k("LoadBalancer", "flavor-id", Text),
    k("LoadBalancer", "availability-zone", Text),
    d("LoadBalancer", "enable-ingress-hostname", Bool, "false"),
    d("LoadBalancer", "ingress-hostname-suffix", Text, "nip.io"),
    d("LoadBalancer", "max-shared-lb", Int, "2"),
    d("LoadBalancer", "container-store", Text, "barbican"),
    d("LoadBalancer", "provider-requires-serial-api-calls", Bool, "false"),
    k("LoadBalancer", "default-tls-container-ref", Text),
    d("Metadata", "search-order", Text, "configDrive,metadataService"),
    d("Metadata", "request-timeout", Duration, "60s"),
    k("Route", "router-id", Text),
];

/// The plain section names, in print order.
pub const SECTIONS: &[&str] = &["Global", "Networking", "LoadBalancer", "Metadata", "Route"];

/// The known key `name` in `section` (case-insensitive).
pub(crate) fn find(section: &str, name: &str) -> Option<&'static Key> {
    let table = if section.eq_ignore_ascii_case("LoadBalancerClass") { LB_CLASS } else { KEYS };
    table.iter().find(|key| {
        key.section.eq_ignore_ascii_case(section) && key.name.eq_ignore_ascii_case(name)
    })
}

/// The known key of `section` closest to `name` (edit distance ≤ 3), for "did you mean".
pub(crate) fn closest(section: &str, name: &str) -> Option<&'static str> {
    let table = if section.eq_ignore_ascii_case("LoadBalancerClass") { LB_CLASS } else { KEYS };
    let name = name.to_ascii_lowercase().replace('_', "-");
    table
        .iter()
        .filter(|key| key.section.eq_ignore_ascii_case(section))
        .map(|key| (distance(&name, key.name), key.name))
        .filter(|(dist, _)| *dist <= 3)
        .min_by_key(|(dist, _)| *dist)
        .map(|(_, key)| key)
}

/// Levenshtein distance over bytes (names are ASCII).
fn distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            let next = (diagonal + usize::from(ca != *cb)).min(above + 1).min(row[j] + 1);
            diagonal = above;
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_unique_within_its_section() {
        let mut seen = std::collections::BTreeSet::new();
        for key in KEYS {
            assert!(seen.insert((key.section, key.name)), "{}.{}", key.section, key.name);
            assert!(SECTIONS.contains(&key.section));
        }
    }

    #[test]
    fn closest_key_suggests_a_typo_fix() {
        assert_eq!(closest("Global", "auth-ulr"), Some("auth-url"));
        assert_eq!(closest("LoadBalancer", "floating_network_id"), Some("floating-network-id"));
        assert_eq!(closest("Global", "completely-different-thing"), None);
    }
}
