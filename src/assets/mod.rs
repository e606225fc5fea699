//! The registry: every asset, the targets of each command, and the platform table.
//!
//! ```text
//! install-config ─┬─ cluster-id ──────────────────────────────┬─ infrastructure
//!                 ├─ cluster-config                           │
//!                 ├─ trust-bundle                             │
//! cloud-access ───┴─ openstack/cloud-facts ─ cloud-provider-config ─┬─ ccm
//!                 └─ credentials ───────────────────────────────────┘  bootstrap/ccm
//! options ── ccm/leader-migration ── ccm
//! ```
//! The platform-neutral assets ask the platform's [`provider::Provider`] (one module per
//! platform, mapped in [`platform::PLATFORMS`]). `ccm-assets graph` prints the exact edges.

pub mod aws;
pub mod azure;
pub mod bootkube;
pub mod bootstrap;
pub mod ccm;
pub mod cloud_access;
pub mod cloud_facts;
pub mod cloud_provider_config;
pub mod cluster_config;
pub mod cluster_id;
pub mod credentials;
pub mod env;
pub mod gcp;
pub(crate) mod go_json;
pub mod ibm;
pub mod ibmcloud;
pub mod images;
pub mod infrastructure;
pub mod install_config;
pub mod none;
pub mod nutanix;
pub mod openstack;
pub mod options;
pub mod platform;
pub mod platform_blocks;
pub mod powervs;
pub mod provider;
pub mod trust_bundle;
pub mod vsphere;

use crate::graph::{self, Asset, AssetId, Graph};
use crate::installconfig::InstallConfig;
use openstack::lookup::Lookup;

/// What the command line resolved: the loaded inputs and the options assets depend on.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The validated install-config with defaults applied (`None` for `graph`, which only
    /// describes the structure).
    pub install_config: Option<InstallConfig>,
    /// What the command loaded to reach the cloud (credentials, the OpenStack cloud).
    pub access: cloud_access::CloudAccess,
    /// `--infra-id`, when pinned.
    pub infra_id: Option<String>,
    /// How to ask the cloud (`openstack::lookup::Offline` with `--offline`).
    pub lookup: Option<Box<dyn Lookup>>,
    /// Command-line choices that change the output.
    pub options: options::Options,
    /// The container images.
    pub images: images::Images,
    /// What the installer left in `DIR/tls/`.
    pub tls: bootstrap::tls::Tls,
}

/// The assets `create manifests` resolves.
pub const MANIFEST_TARGETS: &[AssetId] = &[
    cluster_config::ID,
    trust_bundle::ID,
    infrastructure::ID,
    credentials::ID,
    ccm::ID,
    bootstrap::ID,
    bootstrap::kubeconfig::ID,
    bootkube::ID,
];

/// Every asset, in the order `graph` lists them.
pub fn graph(inputs: Inputs) -> graph::Result<Graph> {
    let Inputs { install_config, access, infra_id, lookup, options, images, tls } = inputs;
    let assets: Vec<Box<dyn Asset>> = vec![
        Box::new(install_config::InstallConfigAsset::new(install_config)),
        Box::new(cloud_access::CloudAccessAsset::new(access)),
        Box::new(options::OptionsAsset::new(options)),
        Box::new(cluster_id::ClusterIdAsset::new(infra_id)),
        Box::new(cluster_config::ClusterConfigAsset),
        Box::new(trust_bundle::TrustBundleAsset),
        Box::new(openstack::lookup::CloudFactsAsset::new(lookup)),
        Box::new(cloud_provider_config::CloudProviderConfigAsset),
        Box::new(credentials::CredentialsAsset),
        Box::new(infrastructure::InfrastructureAsset),
        Box::new(ccm::leader_migration::LeaderMigrationAsset),
        Box::new(ccm::CcmAsset::new(images.clone())),
        Box::new(bootstrap::tls::TlsAsset::new(tls)),
        Box::new(bootstrap::BootstrapAsset::new(images.clone())),
        Box::new(bootstrap::kubeconfig::KubeconfigAsset),
        Box::new(bootkube::BootkubeAsset::new(images.assets)),
    ];
    Graph::new(assets)
}

#[cfg(test)]
mod tests;
