//! `openshift/99_cloud-creds-secret.yaml` and its reader Role: the platform's credentials in
//! `kube-system`, where the cloud-credential operator and the bootstrap CCM read them.
//!
//! The Secret is skipped with `credentialsMode: Manual` (the user provides credentials); the
//! reader Role is written whenever the platform has such a Secret.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::cloud_access::{self, CloudAccess};
use super::options::{self, Options};
use super::provider::{Context, SecretData};
use super::{cluster_id, install_config, platform};
use crate::graph::{Asset, AssetError, AssetId, File, Key, Output, Parents};
use crate::installconfig::{CredentialsMode, InstallConfig};
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "credentials";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<Option<Credentials>> = Key::new(ID);

/// The Secret's file (absent with `credentialsMode: Manual`).
pub const SECRET_PATH: &str = "openshift/99_cloud-creds-secret.yaml";

/// The reader Role's file.
pub const ROLE_PATH: &str = "openshift/99_role-cloud-creds-secret-reader.yaml";

/// Where the credentials Secret lives.
pub const NAMESPACE: &str = "kube-system";

/// What dependents read: the Secret's plaintext data, `None` when none was written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The data, when the Secret was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<SecretData>,
}

/// The reader Role's name for `platform` (`openstack-creds-secret-reader`).
pub fn reader_role(platform: &str) -> String {
    format!("{platform}-creds-secret-reader")
}

/// A Secret with `data` base64-encoded, as YAML.
pub fn secret(name: &str, namespace: &str, data: &SecretData) -> Result<String, AssetError> {
    let encoded: Map<String, Value> =
        data.iter().map(|(k, v)| (k.clone(), Value::from(STANDARD.encode(v)))).collect();
    Ok(to_yaml(&json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": encoded,
    }))?)
}

/// The plaintext data of a Secret file [`secret`] wrote (or the user edited): `data`
/// base64-decoded, then `stringData` over it. Errors name the key, never a value.
pub fn read_secret(text: &str) -> Result<SecretData, AssetError> {
    #[derive(Deserialize)]
    struct SecretFile {
        #[serde(default)]
        data: std::collections::BTreeMap<String, String>,
        #[serde(default, rename = "stringData")]
        string_data: std::collections::BTreeMap<String, String>,
    }
    let file: SecretFile =
        serde_saphyr::from_str(text).map_err(|_| "not a Secret with string data")?;
    let mut out = SecretData::new();
    for (key, encoded) in file.data {
        let bytes =
            STANDARD.decode(encoded.trim()).map_err(|_| format!("data.{key}: not base64"))?;
        let value = String::from_utf8(bytes).map_err(|_| format!("data.{key}: not UTF-8"))?;
        out.insert(key, value);
    }
    out.extend(file.string_data);
    Ok(out)
}

fn role(platform: &str, secret: &str) -> Result<String, AssetError> {
    Ok(to_yaml(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": reader_role(platform), "namespace": NAMESPACE},
        "rules": [{
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": [secret],
            "verbs": ["get"],
        }],
    }))?)
}

/// Writes the credentials Secret (unless Manual) and the reader Role.
#[derive(Debug)]
pub struct CredentialsAsset;

impl Asset for CredentialsAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Credentials"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_access::ID, options::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let id: cluster_id::ClusterId = parents.get(&cluster_id::KEY)?;
        let access: CloudAccess = parents.get(&cloud_access::KEY)?;
        let options: Options = parents.get(&options::KEY)?;
        let row = platform::of(&config)?;
        let Some(name) = row.provider.secret_name() else {
            return Ok(Output::default());
        };
        let mut files = vec![File::new(ROLE_PATH, role(row.name, name)?)];
        let data = if config.credentials_mode == Some(CredentialsMode::Manual) {
            None
        } else {
            let ctx = Context {
                config: &config,
                infra_id: &id.infra_id,
                access: &access,
                facts: None,
                options: &options,
            };
            let data = row.provider.secret_data(&ctx)?;
            files.push(File::secret(SECRET_PATH, secret(name, NAMESPACE, &data)?));
            Some(data)
        };
        let mut output = Output::new(&Credentials { data })?;
        output.files = files;
        Ok(output)
    }
}
