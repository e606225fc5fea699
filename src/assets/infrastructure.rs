//! `manifests/cluster-infrastructure-02-config.yml`: the `config.openshift.io/v1` Infrastructure.
//!
//! The platform-independent part: infrastructure name, API URLs, topologies and the platform
//! type. Each platform's provider adds its `platformSpec`/`platformStatus` block (OpenStack VIPs,
//! AWS region, ...), built from the parts several platforms share (`platform_blocks`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::cloud_provider_config as cloud_conf;
use super::provider::CloudProviderConfig;
use super::{cluster_id, install_config, platform};
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "infrastructure";

/// The file written (the installer's name, `.yml` included).
pub const PATH: &str = "manifests/cluster-infrastructure-02-config.yml";

/// The Infrastructure object; also the asset's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Infrastructure {
    /// `config.openshift.io/v1`.
    pub api_version: String,
    /// `Infrastructure`.
    pub kind: String,
    /// Always named `cluster`.
    pub metadata: Metadata,
    /// What the installer asks for.
    pub spec: Spec,
    /// What the installer knows.
    pub status: Status,
}

/// Object metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// `cluster`.
    pub name: String,
}

/// `spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// The ConfigMap in `openshift-config` holding the cloud config (`name` empty when none).
    pub cloud_config: CloudConfigRef,
    /// `type` plus the platform's own block.
    pub platform_spec: Map<String, Value>,
}

/// `spec.cloudConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CloudConfigRef {
    /// ConfigMap name.
    pub name: String,
    /// Key in it, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `https://api-int.<cluster domain>:6443`.
    #[serde(rename = "apiServerInternalURI")]
    pub api_server_internal_uri: String,
    /// `https://api.<cluster domain>:6443`.
    #[serde(rename = "apiServerURL")]
    pub api_server_url: String,
    /// `HighlyAvailable` or `SingleReplica`.
    pub control_plane_topology: String,
    /// `None` (the installer's default).
    pub cpu_partitioning: String,
    /// Deprecated, always empty.
    pub etcd_discovery_domain: String,
    /// The infrastructure ID.
    pub infrastructure_name: String,
    /// `HighlyAvailable` or `SingleReplica`.
    pub infrastructure_topology: String,
    /// Deprecated copy of `platformStatus.type`.
    pub platform: String,
    /// `type` plus the platform's own block.
    pub platform_status: Map<String, Value>,
}

/// Writes the Infrastructure config.
#[derive(Debug)]
pub struct InfrastructureAsset;

impl Asset for InfrastructureAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Infrastructure Config"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_conf::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let id: cluster_id::ClusterId = parents.get(&cluster_id::KEY)?;
        let cloud_config: Option<CloudProviderConfig> = parents.get(&cloud_conf::KEY)?;
        let mut infra = infrastructure(&config, &id.infra_id)?;
        if cloud_config.is_some() {
            infra.spec.cloud_config =
                CloudConfigRef { name: "cloud-provider-config".into(), key: Some("config".into()) };
        }
        let row = platform::of(&config)?;
        if let Some((spec, status)) = row.provider.infrastructure(&config, &id.infra_id) {
            if !spec.is_null() {
                infra.spec.platform_spec.insert(row.name.into(), spec);
            }
            if !status.is_null() {
                infra.status.platform_status.insert(row.name.into(), status);
            }
        }
        let file = File::new(PATH, to_yaml(&infra)?);
        Ok(Output::new(&infra)?.with_file(file))
    }
}

/// The platform-independent Infrastructure for `config`.
pub fn infrastructure(
    config: &InstallConfig,
    infra_id: &str,
) -> Result<Infrastructure, AssetError> {
    let kind = platform::of(config)?;
    let platform_type =
        || Map::from_iter([("type".to_owned(), Value::from(kind.infrastructure_type))]);
    let domain = format!("{}.{}", config.metadata.name, config.base_domain);
    let (control_plane, infra) = topologies(config);
    Ok(Infrastructure {
        api_version: "config.openshift.io/v1".into(),
        kind: "Infrastructure".into(),
        metadata: Metadata { name: "cluster".into() },
        spec: Spec { cloud_config: CloudConfigRef::default(), platform_spec: platform_type() },
        status: Status {
            api_server_internal_uri: format!("https://api-int.{domain}:6443"),
            api_server_url: format!("https://api.{domain}:6443"),
            control_plane_topology: control_plane.into(),
            cpu_partitioning: "None".into(),
            etcd_discovery_domain: String::new(),
            infrastructure_name: infra_id.into(),
            infrastructure_topology: infra.into(),
            platform: kind.infrastructure_type.into(),
            platform_status: platform_type(),
        },
    })
}

/// The installer's `determineTopologies`: one control-plane replica is SingleReplica; the
/// infrastructure follows the control plane with no workers, else SingleReplica for one worker.
fn topologies(config: &InstallConfig) -> (&'static str, &'static str) {
    const HA: &str = "HighlyAvailable";
    const SINGLE: &str = "SingleReplica";
    let control_plane = if config.control_plane_replicas() == 1 { SINGLE } else { HA };
    let workers: u64 =
        config.compute.iter().map(|pool| u64::from(pool.replicas.unwrap_or(0))).sum();
    let infra = match workers {
        0 => control_plane,
        1 => SINGLE,
        _ => HA,
    };
    (control_plane, infra)
}
