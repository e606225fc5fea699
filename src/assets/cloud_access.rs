//! `cloud-access`: what the command loaded to reach the cloud, for the platform in use.
//!
//! The command line reads clouds.yaml, credential files and the environment
//! (`cli::resolve`); this asset only carries the result into the graph, so a change of
//! credentials regenerates everything that depends on them. Its content holds secrets, which
//! is why the state file is written with mode 0600.

use serde::{Deserialize, Serialize};

use super::openstack::Cloud;
use crate::graph::{Asset, AssetError, AssetId, Output, Parents};

/// Asset id.
pub const ID: AssetId = "cloud-access";

/// The loaded access, one variant per platform that needs one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "platform", content = "access", rename_all = "lowercase")]
pub enum CloudAccess {
    /// No platform input (the platform needs none, or `graph` only describes the structure).
    #[default]
    None,
    /// The clouds.yaml entry named by `platform.openstack.cloud`, with its CA.
    OpenStack(Box<Cloud>),
}

impl CloudAccess {
    /// The OpenStack cloud, when that is the platform.
    pub fn openstack(&self) -> Option<&Cloud> {
        match self {
            CloudAccess::OpenStack(cloud) => Some(cloud),
            _ => None,
        }
    }
}

/// Carries the command's [`CloudAccess`] into the graph.
#[derive(Debug)]
pub struct CloudAccessAsset {
    access: CloudAccess,
}

impl CloudAccessAsset {
    /// Wraps what the command loaded.
    pub fn new(access: CloudAccess) -> CloudAccessAsset {
        CloudAccessAsset { access }
    }
}

impl Asset for CloudAccessAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Access"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        Output::new(&self.access)
    }
}
