//! `bootkube/ccm-bootstrap.sh`: the bootkube.sh stage that starts the bootstrap CCM.

use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::templates;

/// Asset id.
pub const ID: AssetId = "bootkube";

/// The file written.
pub const PATH: &str = "bootkube/ccm-bootstrap.sh";

/// Writes the stage on every platform: it is a no-op where there is no cloud config.
#[derive(Debug)]
pub struct BootkubeAsset {
    image: String,
}

impl BootkubeAsset {
    /// `image` is the ccm-assets image the stage renders with.
    pub fn new(image: impl Into<String>) -> BootkubeAsset {
        BootkubeAsset { image: image.into() }
    }
}

impl Asset for BootkubeAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Bootkube CCM Stage"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        Ok(Output::default().with_file(File::new(PATH, templates::bootkube_stage(&self.image)?)))
    }
}
