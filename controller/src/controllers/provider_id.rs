//! `spec.providerID`: `openstack:///<id>`, or `openstack://<region>/<id>` when regional.

/// The providerID for a server.
pub(crate) fn format(server_id: &str, region: Option<&str>, regional: bool) -> String {
    match region.filter(|_| regional) {
        Some(region) => format!("openstack://{region}/{server_id}"),
        None => format!("openstack:///{server_id}"),
    }
}

/// The server ID in a providerID, as upstream parses it: `^openstack://([^/]*)/([^/]+)$`, a
/// value without `://` prefixed with `openstack://` first, a region other than ours refused.
pub(crate) fn parse(provider_id: &str, our_region: Option<&str>) -> Result<String, String> {
    let full = if provider_id.contains("://") {
        provider_id.to_owned()
    } else {
        format!("openstack://{provider_id}")
    };
    let bad = || {
        format!(
            "ProviderID {provider_id:?} didn't match expected format \"openstack://region/InstanceID\""
        )
    };
    let rest = full.strip_prefix("openstack://").ok_or_else(bad)?;
    let (region, id) = rest.split_once('/').ok_or_else(bad)?;
    if id.is_empty() || id.contains('/') {
        return Err(bad());
    }
    if !region.is_empty() && our_region.is_some_and(|ours| ours != region) {
        let ours = our_region.unwrap_or_default();
        return Err(format!("ProviderID {provider_id:?} didn't match supported region {ours:?}"));
    }
    Ok(id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_and_regional_forms() {
        assert_eq!(format("abc", Some("R1"), false), "openstack:///abc");
        assert_eq!(format("abc", Some("R1"), true), "openstack://R1/abc");
        assert_eq!(parse("openstack:///abc", Some("R1")), Ok("abc".into()));
        assert_eq!(parse("openstack://R1/abc", Some("R1")), Ok("abc".into()));
        assert_eq!(parse("/abc", None), Ok("abc".into()), "k/k#85731: missing scheme");
    }

    #[test]
    fn wrong_format_and_foreign_region_are_errors() {
        assert!(parse("aws:///abc", None).unwrap_err().contains("expected format"));
        assert!(parse("openstack://", None).is_err());
        assert!(parse("openstack:///a/b", None).is_err());
        assert!(
            parse("openstack://R2/abc", Some("R1"))
                .unwrap_err()
                .contains("supported region \"R1\"")
        );
    }

    proptest! {
        #[test]
        fn format_then_parse_returns_the_id(id in "[a-f0-9-]{1,36}", region in "[A-Za-z0-9]{1,10}", regional: bool) {
            let text = format(&id, Some(&region), regional);
            prop_assert_eq!(parse(&text, Some(&region)), Ok(id));
        }
    }
}
