//! `options`: the command-line choices that change generated content.
//!
//! An asset, so that changing one (`--vsphere-config-format ini`, `--leader-migration`)
//! regenerates what depends on it, as a changed input does. The choices' own types (vSphere's
//! [`ConfigFormat`]) are defined here too: the provider contract carries [`Options`], so this
//! module names no platform module.

use serde::{Deserialize, Serialize};

use crate::graph::{Asset, AssetError, AssetId, Key, Output, Parents};

/// Asset id.
pub const ID: AssetId = "options";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<Options> = Key::new(ID);

/// The choices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Options {
    /// `--vsphere-config-format`: the vSphere cloud config as YAML (default) or legacy INI.
    pub vsphere_config_format: ConfigFormat,
    /// `--leader-migration`: generate what a move from the in-tree provider needs (KEP-2436).
    /// Left out of the state when off, so a directory made before the flag existed is
    /// up to date as it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leader_migration: bool,
}

/// Which vSphere cloud config to write (`--vsphere-config-format`; the flag's values are the
/// serde names).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ConfigFormat {
    /// The YAML of vsphere-cloud-provider, which the out-of-tree CCM reads natively.
    #[default]
    Yaml,
    /// The legacy gcfg (INI) file, which the CCM still accepts.
    Ini,
}

/// Carries the command's [`Options`] into the graph.
#[derive(Debug)]
pub struct OptionsAsset {
    options: Options,
}

impl OptionsAsset {
    /// Wraps what the command line chose.
    pub fn new(options: Options) -> OptionsAsset {
        OptionsAsset { options }
    }
}

impl Asset for OptionsAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Command-line Options"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        Output::new(&self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_format_defaults_to_yaml_and_its_flag_values_are_its_serde_names() {
        use clap::ValueEnum as _;
        assert_eq!(ConfigFormat::default(), ConfigFormat::Yaml);
        for format in ConfigFormat::value_variants() {
            let flag = format.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(serde_json::to_value(format).unwrap(), flag);
        }
        assert!(ConfigFormat::from_str("toml", false).is_err());
    }
}
