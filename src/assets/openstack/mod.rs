//! What OpenStack contributes to the graph: the selected clouds.yaml entry as a source asset.

use crate::graph::{Asset, AssetError, AssetId, Output, Parents};
use crate::installconfig::clouds::SelectedCloud;

/// Asset id of the selected cloud.
pub const CLOUDS: AssetId = "openstack/clouds";

/// The clouds.yaml entry named by `platform.openstack.cloud`; `null` content on other platforms.
///
/// Its content holds credentials, which is why the state file is written with mode 0600.
#[derive(Debug)]
pub struct CloudsAsset {
    cloud: Option<SelectedCloud>,
}

impl CloudsAsset {
    /// Wraps the cloud the command selected.
    pub fn new(cloud: Option<SelectedCloud>) -> CloudsAsset {
        CloudsAsset { cloud }
    }
}

impl Asset for CloudsAsset {
    fn id(&self) -> AssetId {
        CLOUDS
    }
    fn name(&self) -> &'static str {
        "OpenStack Cloud"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        match &self.cloud {
            Some(cloud) => Output::new(&serde_json::json!({
                "name": cloud.name,
                "entry": cloud.entry,
            })),
            None => Ok(Output::default()),
        }
    }
}
