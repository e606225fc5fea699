//! Node label values from OpenStack data: sanitized zone, instance type, region.

/// `node.kubernetes.io/instance-type`.
pub(crate) const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// `topology.kubernetes.io/zone`.
pub(crate) const ZONE: &str = "topology.kubernetes.io/zone";
/// `topology.kubernetes.io/region`.
pub(crate) const REGION: &str = "topology.kubernetes.io/region";

/// Upstream `SanitizeLabel`: runs outside `[-A-Za-z0-9_.]` become `-`, ends trimmed, ≤ 63
/// chars — trimmed again after the cut so the value always ends alphanumeric (upstream can
/// leave a trailing `-` there, which the API server rejects).
pub(crate) fn sanitize(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut in_run = false;
    for c in input.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let trim = |s: &str| s.trim_matches(|c| matches!(c, '-' | '_' | '.')).to_owned();
    let mut out = trim(&out);
    if out.len() > 63 {
        out.truncate(63);
        out = trim(&out);
    }
    out
}

/// True for a valid label value.
pub(crate) fn is_valid(value: &str) -> bool {
    value.is_empty() || (value.len() <= 63 && sanitize(value) == value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_of_invalid_characters_become_one_dash() {
        assert_eq!(sanitize("nova"), "nova");
        assert_eq!(sanitize("az 1 / rack:2"), "az-1-rack-2");
        assert_eq!(sanitize("  zone__a  "), "zone__a");
        assert_eq!(sanitize("zone—ä"), "zone");
        assert_eq!(sanitize(&"a".repeat(70)).len(), 63);
        assert_eq!(sanitize(&format!("{}-b", "a".repeat(62))), "a".repeat(62));
    }

    proptest! {
        #[test]
        fn sanitized_values_are_valid_label_values(input in ".{0,100}") {
            let out = sanitize(&input);
            prop_assert!(out.len() <= 63);
            prop_assert!(out.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')));
            prop_assert!(out.is_empty() || (out.starts_with(|c: char| c.is_ascii_alphanumeric()) && out.ends_with(|c: char| c.is_ascii_alphanumeric())));
            prop_assert_eq!(sanitize(&out), out.clone());
        }
    }
}
