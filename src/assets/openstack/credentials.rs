//! The data of `kube-system/openstack-credentials`: the re-keyed clouds.yaml, the legacy
//! clouds.conf and the CA.

use serde_json::json;

use super::{CA_PATH, Cloud};
use crate::assets::provider::SecretData;
use crate::graph::AssetError;
use ccm_formats::clouds_yaml::CloudEntry;
use ccm_formats::gcfg;
use ccm_formats::yaml::to_yaml;

/// `{clouds: {openstack: entry}}`, with `cacert` pointing at the CA on the node.
pub fn clouds_yaml(cloud: &Cloud) -> Result<String, AssetError> {
    let mut entry = cloud.entry.clone();
    if cloud.ca_bundle.is_some() {
        entry.cacert = Some(CA_PATH.to_owned());
    }
    Ok(to_yaml(&json!({"clouds": {"openstack": entry}}))?)
}

/// The legacy `[Global]` clouds.conf: every value double-quoted, then an unquoted `ca-file`.
pub fn clouds_conf(cloud: &Cloud) -> String {
    let auth = &cloud.entry.auth;
    let first = |a: &Option<String>, b: &Option<String>| {
        a.clone().filter(|v| !v.is_empty()).or_else(|| b.clone())
    };
    let mut out = String::from("[Global]\n");
    for (key, value) in [
        ("auth-url", auth.auth_url.clone()),
        ("username", auth.username.clone()),
        ("password", auth.password.clone()),
        ("tenant-id", auth.project_id.clone()),
        ("tenant-name", auth.project_name.clone()),
        ("domain-id", first(&auth.domain_id, &auth.user_domain_id)),
        ("domain-name", first(&auth.domain_name, &auth.user_domain_name)),
        ("region", cloud.entry.region_name.clone()),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            out.push_str(&format!("{key} = {}\n", gcfg::quoted(&value)));
        }
    }
    if cloud.ca_bundle.is_some() {
        out.push_str(&format!("ca-file = {CA_PATH}\n"));
    }
    out
}

/// True for the auth types that send a user's password.
pub fn is_password_auth(entry: &CloudEntry) -> bool {
    matches!(entry.auth_type.as_deref(), None | Some("password" | "v3password"))
}

/// The Secret's data: `clouds.yaml` (cloud re-keyed as `openstack`), `clouds.conf`, and
/// `cacert` when the cloud has a CA. Warns when the cloud uses password authentication.
pub fn secret_data(cloud: &Cloud) -> Result<SecretData, AssetError> {
    if is_password_auth(&cloud.entry) {
        tracing::warn!(
            "Cloud {:?} uses password authentication: application credentials \
             (auth_type: v3applicationcredential) are preferred, they can be rotated and \
             revoked without touching a user account",
            cloud.name
        );
    }
    let mut data = SecretData::from([
        ("clouds.yaml".to_owned(), clouds_yaml(cloud)?),
        ("clouds.conf".to_owned(), clouds_conf(cloud)),
    ]);
    if let Some(ca) = &cloud.ca_bundle {
        data.insert("cacert".to_owned(), ca.clone());
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud_with_password(password: &str) -> Cloud {
        let mut entry = CloudEntry::default();
        entry.auth.auth_url = Some("https://my_auth_url.com/v3/".into());
        entry.auth.username = Some("my_user".into());
        entry.auth.password = Some(password.into());
        entry.auth.project_id = Some("f12f928576ae4d21bdb984da5dd1d3bf".into());
        entry.auth.user_domain_id = Some("default".into());
        entry.auth.domain_name = Some("Default".into());
        entry.region_name = Some("my_region".into());
        Cloud { name: "c".into(), entry, ca_bundle: None, trust_bundle: None }
    }

    #[test]
    fn clouds_conf_matches_the_installer_and_falls_back_to_user_domain() {
        assert_eq!(
            clouds_conf(&cloud_with_password("my_secret_password")),
            "[Global]\nauth-url = \"https://my_auth_url.com/v3/\"\nusername = \"my_user\"\n\
             password = \"my_secret_password\"\ntenant-id = \"f12f928576ae4d21bdb984da5dd1d3bf\"\n\
             domain-id = \"default\"\ndomain-name = \"Default\"\nregion = \"my_region\"\n"
        );
    }

    #[test]
    fn clouds_conf_quoting_reads_back_exactly_with_gcfg_rules() {
        for password in [
            "with\\n",
            "real\nnewline",
            "q\"uote",
            "back\\slash",
            "hash#",
            "semi;",
            "dollar$",
            "bang!",
            "what?",
            "back`tick",
            "with \\n \" \\ ",
        ] {
            let conf = clouds_conf(&cloud_with_password(password));
            let doc = gcfg::parse(&conf).unwrap();
            assert_eq!(doc.get("Global", "password"), Some(password), "{conf}");
        }
        let conf = clouds_conf(&cloud_with_password("with \\n \" \\ "));
        assert!(conf.contains(r#"password = "with \\n \" \\ ""#), "{conf}");
    }

    #[test]
    fn a_ca_adds_an_unquoted_ca_file_and_rewrites_cacert() {
        let mut cloud = cloud_with_password("p");
        cloud.entry.cacert = Some("/home/me/ca.pem".into());
        cloud.ca_bundle = Some("PEM".into());
        assert!(
            clouds_conf(&cloud)
                .ends_with(&format!("region = \"my_region\"\nca-file = {CA_PATH}\n"))
        );
        let yaml = clouds_yaml(&cloud).unwrap();
        assert!(yaml.contains(&format!("cacert: {CA_PATH}\n")), "{yaml}");
        assert!(!yaml.contains("/home/me"), "{yaml}");
    }

    #[test]
    fn password_auth_types_are_recognised() {
        let mut entry = CloudEntry::default();
        assert!(is_password_auth(&entry));
        entry.auth_type = Some("v3applicationcredential".into());
        assert!(!is_password_auth(&entry));
    }
}
