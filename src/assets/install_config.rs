//! The install-config source asset: the validated config, defaults applied, as graph content.

use crate::graph::{Asset, AssetError, AssetId, Key, Output, Parents};
use crate::installconfig::InstallConfig;

/// Asset id.
pub const ID: AssetId = "install-config";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<InstallConfig> = Key::new(ID);

/// Holds the install-config the command loaded; it writes no file (inputs are never rewritten).
#[derive(Debug)]
pub struct InstallConfigAsset {
    config: Option<InstallConfig>,
}

impl InstallConfigAsset {
    /// Wraps the loaded config (`None` when only describing the graph).
    pub fn new(config: Option<InstallConfig>) -> InstallConfigAsset {
        InstallConfigAsset { config }
    }
}

impl Asset for InstallConfigAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Install Config"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        let config = self.config.as_ref().ok_or("install-config.yaml was not loaded")?;
        Output::new(config)
    }
}
