//! The generator's Keystone login: the selected clouds.yaml entry as the credentials both
//! binaries log in with (`ccm-openstack-auth`), its `cacert` as read (relative to the working
//! directory, as openstacksdk has it) and the install-config's `additionalTrustBundle` trusted
//! beside it.

use ccm_openstack_auth::Credentials;

use crate::assets::openstack::Cloud;

/// The credentials of the selected cloud.
pub(super) fn credentials(cloud: &Cloud) -> Result<Credentials, String> {
    let mut credentials = Credentials::from_clouds_entry(&cloud.name, &cloud.entry)
        .map_err(|e| format!("cloud {:?}: {e}", cloud.name))?;
    credentials.ca_file = None;
    credentials.ca_bundle.clone_from(&cloud.ca_bundle);
    credentials.trust_bundle.clone_from(&cloud.trust_bundle);
    Ok(credentials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cacert_is_trusted_as_read_and_the_trust_bundle_beside_it() {
        let entry = ccm_formats::clouds_yaml::CloudEntry {
            cacert: Some("relative/ca.pem".into()),
            interface: Some("internal".into()),
            ..Default::default()
        };
        let cloud = Cloud {
            name: "c".into(),
            entry,
            ca_bundle: Some("CA".into()),
            trust_bundle: Some("TRUST".into()),
        };
        let c = credentials(&cloud).unwrap();
        assert_eq!(
            (c.ca_file, c.ca_bundle.as_deref(), c.trust_bundle.as_deref()),
            (None, Some("CA"), Some("TRUST"))
        );
        assert_eq!(c.interface, ccm_openstack_auth::Interface::Internal);
        let mut bad = cloud.clone();
        bad.entry.interface = Some("private".into());
        assert_eq!(
            credentials(&bad).unwrap_err(),
            "cloud \"c\": interface: \"private\" is not public, internal or admin"
        );
    }
}
