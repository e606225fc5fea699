//! `manifests/user-ca-bundle-config.yaml`: `additionalTrustBundle` as `openshift-config/user-ca-bundle`.

use serde_json::json;

use super::install_config;
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "trust-bundle";

/// The file written, only when `additionalTrustBundle` is set.
pub const PATH: &str = "manifests/user-ca-bundle-config.yaml";

/// Writes the user CA bundle ConfigMap.
#[derive(Debug)]
pub struct TrustBundleAsset;

impl Asset for TrustBundleAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Additional Trust Bundle Config"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let Some(bundle) = config.additional_trust_bundle.filter(|b| !b.trim().is_empty()) else {
            return Ok(Output::default());
        };
        let map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "user-ca-bundle", "namespace": "openshift-config"},
            "data": {"ca-bundle.crt": bundle},
        });
        Ok(Output::default().with_file(File::new(PATH, to_yaml(&map)?)))
    }
}
