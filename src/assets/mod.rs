//! The registry: every asset, the targets of each command, and the platform table.
//!
//! ```text
//! install-config ─┬─ cluster-id ──────────────────────────────┬─ infrastructure
//!                 ├─ cluster-config                           │
//!                 ├─ trust-bundle                             │
//! cloud-access ───┴─ openstack/cloud-facts ─ cloud-provider-config ─┬─ ccm
//!                 └─ credentials ───────────────────────────────────┘  bootstrap/ccm
//! options ── ccm/leader-migration ── ccm
//! install-config ── ccm-operator
//! ```
//! The platform-neutral assets ask the platform's [`provider::Provider`] (one module per
//! platform, mapped in [`platform::PLATFORMS`]). `ccm-assets graph` prints the exact edges.
//!
//! The modules stand in floors, read bottom-up; each imports only from its own floor and the
//! ones below, so no two modules import each other round a loop (`scripts/module-cycles.py`):
//!
//! ```text
//! registry            this module: every asset, the targets
//! neutral assets      cloud_provider_config, credentials, infrastructure, ccm/, operator,
//!                     bootstrap/, bootkube, cluster_id, cluster_config, trust_bundle
//! platform table      platform: install-config platform → provider
//! platforms           aws/, azure/, gcp/, ibm/ (what ibmcloud and powervs share), ibmcloud/,
//!                     none, nutanix/, openstack/ (with the openstack/cloud-facts asset),
//!                     powervs/, vsphere/
//! provider contract   provider: what a platform contributes, and what it may read
//! shared types        what the contract carries: install_config, cloud_access (every
//!                     platform's access), cloud_facts, options; what platforms share:
//!                     platform_blocks, go_json; and env, images
//! ```

// Shared types, and the input assets that carry them.
pub mod cloud_access;
pub mod cloud_facts;
pub mod env;
pub(crate) mod go_json;
pub mod images;
pub mod install_config;
pub mod options;
pub mod platform_blocks;

// The provider contract.
pub mod provider;

// The platforms.
pub mod aws;
pub mod azure;
pub mod gcp;
pub mod ibm;
pub mod ibmcloud;
pub mod none;
pub mod nutanix;
pub mod openstack;
pub mod powervs;
pub mod vsphere;

// The platform table.
pub mod platform;

// The platform-neutral assets.
pub mod bootkube;
pub mod bootstrap;
pub mod ccm;
pub mod cloud_provider_config;
pub mod cluster_config;
pub mod cluster_id;
pub mod credentials;
pub mod infrastructure;
pub mod operator;
pub mod trust_bundle;

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
    operator::ID,
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
        Box::new(operator::OperatorAsset::new(images.clone())),
        Box::new(bootstrap::tls::TlsAsset::new(tls)),
        Box::new(bootstrap::BootstrapAsset::new(images.clone())),
        Box::new(bootstrap::kubeconfig::KubeconfigAsset),
        Box::new(bootkube::BootkubeAsset::new(images.assets)),
    ];
    Graph::new(assets)
}

#[cfg(test)]
mod tests;
