//! `options`: the command-line choices that change generated content.
//!
//! An asset, so that changing one (`--vsphere-config-format ini`, `--leader-migration`)
//! regenerates what depends on it, as a changed input does.

use serde::{Deserialize, Serialize};

use super::vsphere::ConfigFormat;
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
