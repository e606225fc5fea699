//! The Azure CCM's service principal, merged into its cloud config.
//!
//! The upstream Azure CCM reads `aadClientId`/`aadClientSecret` from its cloud config only
//! (reading `kube-system/azure-cloud-provider` was dropped upstream), while the config in
//! `openshift-config/cloud-provider-config` must not hold them: it is a ConfigMap. OpenShift
//! merges them in an init container (`azure-config-credentials-injector`); here the in-cluster
//! Deployment runs `ccm-assets inject-azure-credentials` the same way, and `render` merges them
//! into the bootstrap pod's config, which is written as a secret.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::assets::go_json::go_json_indented;

/// The in-cluster Secret's key holding the client ID.
pub const CLIENT_ID_KEY: &str = "azure_client_id";
/// The in-cluster Secret's key holding the client secret.
pub const CLIENT_SECRET_KEY: &str = "azure_client_secret";

/// Why the credentials could not be merged. No message carries a credential.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cloud config is not a JSON object.
    #[error("the Azure cloud config is not a JSON object: {0}")]
    Config(String),
    /// A credential is absent or empty.
    #[error("no {0} in the credentials")]
    Missing(&'static str),
}

/// `config` with `aadClientId` and `aadClientSecret` set from `credentials` (keys
/// [`CLIENT_ID_KEY`], [`CLIENT_SECRET_KEY`]); every other setting as it was. Written as Go
/// writes JSON, keys sorted (the CCM does not care about order).
pub fn inject(config: &str, credentials: &BTreeMap<String, String>) -> Result<String, Error> {
    let get = |key: &'static str| {
        credentials.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()).ok_or(Error::Missing(key))
    };
    let (client_id, client_secret) = (get(CLIENT_ID_KEY)?, get(CLIENT_SECRET_KEY)?);
    let mut value: Value =
        serde_json::from_str(config).map_err(|e| Error::Config(e.to_string()))?;
    let object = value.as_object_mut().ok_or_else(|| Error::Config("not an object".to_owned()))?;
    object.insert("aadClientId".to_owned(), Value::from(client_id));
    object.insert("aadClientSecret".to_owned(), Value::from(client_secret));
    Ok(go_json_indented(&value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(id: &str, secret: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (CLIENT_ID_KEY.to_owned(), id.to_owned()),
            (CLIENT_SECRET_KEY.to_owned(), secret.to_owned()),
            ("azure_tenant_id".to_owned(), "ignored".to_owned()),
        ])
    }

    #[test]
    fn the_client_is_set_and_everything_else_kept() {
        let config = "{\n\t\"cloud\": \"AzurePublicCloud\",\n\t\"aadClientId\": \"\",\n\t\"aadClientSecret\": \"\",\n\t\"vmType\": \"standard\",\n\t\"cloudProviderBackoffDuration\": 6\n}\n";
        let merged = inject(config, &creds("cid", "s3cr<t\n")).unwrap();
        assert_eq!(
            merged,
            "{\n\t\"aadClientId\": \"cid\",\n\t\"aadClientSecret\": \"s3cr\\u003ct\",\n\t\"cloud\": \"AzurePublicCloud\",\n\t\"cloudProviderBackoffDuration\": 6,\n\t\"vmType\": \"standard\"\n}\n"
        );
        let back: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(back["aadClientSecret"], "s3cr<t");
    }

    #[test]
    fn missing_credentials_and_bad_configs_are_errors_without_values() {
        let err = inject("{}", &creds("", "x")).unwrap_err();
        assert_eq!(err.to_string(), "no azure_client_id in the credentials");
        let err = inject("{}", &creds("id", " ")).unwrap_err();
        assert_eq!(err.to_string(), "no azure_client_secret in the credentials");
        let err = inject("[1]", &creds("id", "topsecret")).unwrap_err();
        assert_eq!(err.to_string(), "the Azure cloud config is not a JSON object: not an object");
        let err = inject("{", &creds("id", "topsecret")).unwrap_err();
        assert!(!err.to_string().contains("topsecret"), "{err}");
    }
}
