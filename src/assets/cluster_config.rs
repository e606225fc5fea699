//! `manifests/cluster-config.yaml`: the normalized install-config, as the installer stores it.
//!
//! ConfigMap `kube-system/cluster-config-v1`, key `install-config`: the config with every
//! default applied, so operators in the cluster read the same values the assets were made from.
//! Credentials never land in it: the model drops `pullSecret`, and every `password` under
//! `platform` (vSphere vCenters, Nutanix Prism) is removed here.

use serde_json::{Value, json};

use super::install_config;
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "cluster-config";

/// The file written.
pub const PATH: &str = "manifests/cluster-config.yaml";

/// Writes the cluster-config-v1 ConfigMap.
#[derive(Debug)]
pub struct ClusterConfigAsset;

impl Asset for ClusterConfigAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cluster Config"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let mut config = parents.get(&install_config::KEY.raw())?;
        if let Some(platform) = config.get_mut("platform") {
            drop_passwords(platform);
        }
        let config_map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cluster-config-v1", "namespace": "kube-system"},
            "data": {"install-config": to_yaml(&config)?},
        });
        Ok(Output::default().with_file(File::new(PATH, to_yaml(&config_map)?)))
    }
}

fn drop_passwords(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("password");
            map.values_mut().for_each(drop_passwords);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_passwords),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_removed_at_any_depth() {
        let mut v = json!({"vsphere": {"vcenters": [{"server": "vc", "password": "p"}]},
                           "nutanix": {"prismCentral": {"password": "q", "username": "u"}}});
        drop_passwords(&mut v);
        assert_eq!(
            v,
            json!({"vsphere": {"vcenters": [{"server": "vc"}]}, "nutanix": {"prismCentral": {"username": "u"}}})
        );
    }
}
