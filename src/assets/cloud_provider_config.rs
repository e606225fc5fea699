//! `manifests/cloud-provider-config.yaml`: ConfigMap `openshift-config/cloud-provider-config`.
//!
//! Key `config` holds the platform's cloud config (the provider writes it), plus
//! `ca-bundle.pem` when the CCM must trust a CA. Every other config is derived from this file,
//! so a user's edit of it flows downstream (the in-cluster `cloud-conf`, the bootstrap
//! cloud.conf, and `render` on the bootstrap node).

use serde::Deserialize;
use serde_json::json;

use super::cloud_access::{self, CloudAccess};
use super::cloud_facts::CloudFacts;
use super::openstack::lookup;
use super::options::{self, Options};
use super::provider::{CloudProviderConfig, Context};
use super::{cluster_id, install_config, platform};
use crate::graph::{Asset, AssetError, AssetId, File, Key, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "cloud-provider-config";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<Option<CloudProviderConfig>> = Key::new(ID);

/// The file written.
pub const PATH: &str = "manifests/cloud-provider-config.yaml";

/// The edited ConfigMap is not a ConfigMap with a `config` key.
#[derive(Debug, thiserror::Error)]
#[error("{PATH}: expected a ConfigMap with a `data.config` key")]
pub struct ShapeError(#[source] serde_saphyr::Error);

/// The ConfigMap as YAML.
pub fn config_map(content: &CloudProviderConfig) -> Result<String, AssetError> {
    let mut data = json!({"config": content.config});
    if let Some(ca) = &content.ca_bundle {
        data["ca-bundle.pem"] = json!(ca);
    }
    Ok(to_yaml(&json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cloud-provider-config", "namespace": "openshift-config"},
        "data": data,
    }))?)
}

/// Reads a (possibly edited) ConfigMap back. Its `config` is checked where it is used: each
/// derivation parses it in the platform's format and names this file when it cannot.
pub fn read_config_map(text: &str) -> Result<CloudProviderConfig, ShapeError> {
    #[derive(Deserialize)]
    struct ConfigMap {
        data: Data,
    }
    #[derive(Deserialize)]
    struct Data {
        config: String,
        #[serde(rename = "ca-bundle.pem")]
        ca_bundle: Option<String>,
    }
    let map: ConfigMap = serde_saphyr::from_str(text).map_err(ShapeError)?;
    Ok(CloudProviderConfig { config: map.data.config, ca_bundle: map.data.ca_bundle })
}

/// Writes the cloud-provider ConfigMap where the platform has a cloud config; `null` content
/// elsewhere, which tells dependents there is no CCM to configure.
#[derive(Debug)]
pub struct CloudProviderConfigAsset;

impl Asset for CloudProviderConfigAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Provider Config"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_access::ID, lookup::ID, options::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let id: cluster_id::ClusterId = parents.get(&cluster_id::KEY)?;
        let access: CloudAccess = parents.get(&cloud_access::KEY)?;
        let facts: Option<CloudFacts> = parents.get(&lookup::KEY)?;
        let options: Options = parents.get(&options::KEY)?;
        let ctx = Context {
            config: &config,
            infra_id: &id.infra_id,
            access: &access,
            facts: facts.as_ref(),
            options: &options,
        };
        let provider = platform::of(&config)?.provider;
        let Some(content) = provider.cloud_provider_config(&ctx)? else {
            tracing::info!(
                "Platform {:?} has no cloud-provider config: no CCM manifests are written",
                config.platform_name()
            );
            return Ok(Output::default());
        };
        let mut output = Output::new(&content)?.with_file(File::new(PATH, config_map(&content)?));
        output.files.extend(provider.extra_manifests(&ctx)?);
        Ok(output)
    }
    fn load(&self, files: &[File]) -> Option<Result<serde_json::Value, AssetError>> {
        let file = files.iter().find(|f| f.path == PATH)?;
        Some(
            std::str::from_utf8(&file.bytes)
                .map_err(AssetError::from)
                .and_then(|text| Ok(read_config_map(text)?))
                .and_then(|content| Ok(serde_json::to_value(content)?)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_config_map_is_read_back() {
        let content = CloudProviderConfig {
            config: "[Global]\nregion = X\n".into(),
            ca_bundle: Some("PEM\n".into()),
        };
        let text = config_map(&content).unwrap();
        assert_eq!(read_config_map(&text).unwrap(), content);
        let err = read_config_map("kind: ConfigMap\ndata: {}\n").unwrap_err().to_string();
        assert_eq!(err, format!("{PATH}: expected a ConfigMap with a `data.config` key"));
    }
}
