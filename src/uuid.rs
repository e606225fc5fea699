//! UUIDs, one check for the whole crate: the forms github.com/google/uuid's `Parse` accepts
//! (the installer's checks) with their version, and the canonical form OpenStack writes its
//! IDs in. Below both the install-config's validation and the assets, which each need it.

/// The version digit of `text` when github.com/google/uuid's `Parse` accepts it: hyphenated,
/// `{…}`-wrapped, `urn:uuid:`-prefixed or bare 32 hex digits.
pub(crate) fn version(text: &str) -> Option<u8> {
    let bytes = text.as_bytes();
    let hyphenated: &[u8] = match bytes.len() {
        36 => bytes,
        45 if text.get(..9).is_some_and(|p| p.eq_ignore_ascii_case("urn:uuid:")) => &bytes[9..],
        38 => &bytes[1..37],
        32 => return bytes.iter().all(u8::is_ascii_hexdigit).then_some(bytes[12]),
        _ => return None,
    };
    let dashes_ok = [8, 13, 18, 23].iter().all(|&i| hyphenated[i] == b'-');
    let hex_ok = hyphenated
        .iter()
        .enumerate()
        .all(|(i, b)| matches!(i, 8 | 13 | 18 | 23) || b.is_ascii_hexdigit());
    (dashes_ok && hex_ok).then_some(hyphenated[14])
}

/// A version-4 UUID in any form [`version`] reads, as the installer's `ValidUUIDv4` accepts.
pub(crate) fn is_v4(text: &str) -> bool {
    version(text) == Some(b'4')
}

/// The canonical 8-4-4-4-12 hex form (either case) Neutron uses for IDs, of any version.
pub(crate) fn is_canonical(text: &str) -> bool {
    text.len() == 36 && version(text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_v4_is_what_google_uuid_parses_with_version_4() {
        for ok in [
            "c664df47-4f7e-4852-819e-e66f9882b7b3",
            "C664DF47-4F7E-4852-819E-E66F9882B7B3",
            "{c664df47-4f7e-4852-819e-e66f9882b7b3}",
            "urn:uuid:c664df47-4f7e-4852-819e-e66f9882b7b3",
            "c664df474f7e4852819ee66f9882b7b3",
        ] {
            assert!(is_v4(ok), "{ok}");
        }
        for bad in [
            "",
            "subnet-c17b",
            "c664df47-4f7e-1852-819e-e66f9882b7b3",
            "c664df47-4f7e-4852-819e-e66f9882b7bz",
            "c664df47_4f7e-4852-819e-e66f9882b7b3",
            "urx:uuid:c664df47-4f7e-4852-819e-e66f9882b7b3",
        ] {
            assert!(!is_v4(bad), "{bad}");
        }
        assert_eq!(version("c664df47-4f7e-1852-819e-e66f9882b7b3"), Some(b'1'));
    }

    #[test]
    fn canonical_uuids_are_recognised_strictly() {
        assert!(is_canonical("6D8A7B3C-5f1e-4a2b-9c0d-1e2f3a4b5c6d"));
        assert!(is_canonical("6d8a7b3c-5f1e-1a2b-9c0d-1e2f3a4b5c6d"), "any version");
        for bad in [
            "",
            "public",
            "6d8a7b3c5f1e4a2b9c0d1e2f3a4b5c6d",
            "{6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6d}",
            "urn:uuid:6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6d",
            "6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6g",
            "6d8a7b3c-5f1e4-a2b-9c0d-1e2f3a4b5c6d",
        ] {
            assert!(!is_canonical(bad), "{bad}");
        }
    }
}
