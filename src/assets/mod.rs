//! The registry: every asset, the targets of each command, and the platform table.
//!
//! ```text
//! install-config ──┬── cluster-id ──┐
//!                  ├────────────────┴── infrastructure   manifests/cluster-infrastructure-02-config.yml
//!                  └── cluster-config                     manifests/cluster-config.yaml
//! openstack/clouds                                        (source: the selected clouds.yaml entry)
//! ```

pub mod cluster_config;
pub mod cluster_id;
pub mod infrastructure;
pub mod install_config;
pub mod openstack;
pub mod platform;

use crate::graph::{self, Asset, AssetId, Graph};
use crate::installconfig::InstallConfig;
use crate::installconfig::clouds::SelectedCloud;

/// What the command line resolved: the loaded inputs and the options assets depend on.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The validated install-config with defaults applied (`None` for `graph`, which only
    /// describes the structure).
    pub install_config: Option<InstallConfig>,
    /// The selected clouds.yaml entry, on OpenStack.
    pub cloud: Option<SelectedCloud>,
    /// `--infra-id`, when pinned.
    pub infra_id: Option<String>,
    /// `--offline`: no cloud API calls.
    pub offline: bool,
}

/// The assets `create manifests` resolves.
pub const MANIFEST_TARGETS: &[AssetId] =
    &[openstack::CLOUDS, cluster_config::ID, infrastructure::ID];

/// Every asset, in the order `graph` lists them.
pub fn graph(inputs: Inputs) -> graph::Result<Graph> {
    let Inputs { install_config, cloud, infra_id, offline: _ } = inputs;
    let assets: Vec<Box<dyn Asset>> = vec![
        Box::new(install_config::InstallConfigAsset::new(install_config)),
        Box::new(openstack::CloudsAsset::new(cloud)),
        Box::new(cluster_id::ClusterIdAsset::new(infra_id)),
        Box::new(cluster_config::ClusterConfigAsset),
        Box::new(infrastructure::InfrastructureAsset),
    ];
    Graph::new(assets)
}

#[cfg(test)]
mod tests;
