//! `manifests/ccm/`: the in-cluster CCM that takes over after bootstrap, on every platform.
//!
//! The namespace, service account and RBAC (`rbac.rs`) have one shape named after the
//! platform's CCM; the `cloud-conf` ConfigMap is the provider's derivation of the cloud-provider
//! config, the credentials Secret the provider's derivation of the `kube-system` one, and the
//! Deployment ([`deployment`]) runs the provider's
//! [`CcmSpec`](crate::assets::provider::CcmSpec). The Deployment carries a hash of what its
//! CCM reads only at start (`config_hash.rs`): for an upstream CCM its config, credentials and
//! CA, so an edit rolls the pods; for ours, which takes those live, the leader-migration
//! config alone, so an edit never restarts it. With `--leader-migration`
//! ([`leader_migration`]) it also takes part in the hand-over from the in-tree provider.

mod config_hash;
pub mod deployment;
pub mod leader_migration;
mod rbac;

use serde_json::{Map, Value, json};

use super::cloud_provider_config::{self as cloud_conf};
use super::credentials::{self, Credentials};
use super::provider::CloudProviderConfig;
use super::{cluster_id, install_config, platform};
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

pub use deployment::tolerations;

/// Asset id.
pub const ID: AssetId = "ccm";

/// The CCM's namespace.
pub const NAMESPACE: &str = "openshift-cloud-controller-manager";

const CLOUD_CONF_PATH: &str = "manifests/ccm/10-cloud-conf.yaml";
const CREDENTIALS_PATH: &str = "manifests/ccm/11-cloud-credentials.yaml";
const DEPLOYMENT_PATH: &str = "manifests/ccm/20-deployment.yaml";
const NODE_MANAGER_PATH: &str = "manifests/ccm/21-node-manager.yaml";

/// Writes the in-cluster CCM manifests where the platform has a cloud config and a CCM.
#[derive(Debug)]
pub struct CcmAsset {
    images: crate::assets::images::Images,
}

impl CcmAsset {
    /// `images` are the CCM images (`--ccm-image` overrides the platform's).
    pub fn new(images: crate::assets::images::Images) -> CcmAsset {
        CcmAsset { images }
    }
}

impl Asset for CcmAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Controller Manager"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_conf::ID, credentials::ID, leader_migration::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let id: cluster_id::ClusterId = parents.get(&cluster_id::KEY)?;
        let provider_config: Option<CloudProviderConfig> = parents.get(&cloud_conf::KEY)?;
        // `null` where the platform has no credentials Secret.
        let creds: Option<Credentials> = parents.get(&credentials::KEY)?;
        let creds = creds.and_then(|c| c.data);
        let migration = parents.get(&leader_migration::KEY)?;
        let row = platform::of(&config)?;
        let (Some(provider_config), Some(spec)) = (provider_config, row.provider.ccm()) else {
            return Ok(Output::default());
        };
        let cloud_conf = row
            .provider
            .in_cluster_config(&provider_config.config)
            .map_err(|e| format!("{}: data.config: {e}", cloud_conf::PATH))?;
        let mut output = Output::default();
        let names = rbac::Names {
            app: spec.app,
            secret: row.provider.secret_name(),
            platform: row.name,
            in_cluster_secret: spec.secret.map(|s| s.name),
            reads_credentials_secret: spec.reads_credentials_secret,
            own_ccm: spec.binary == super::provider::Binary::OwnImage,
        };
        for (name, object) in rbac::objects(&names) {
            output =
                output.with_file(File::new(format!("manifests/ccm/{name}"), to_yaml(&object)?));
        }
        let mut data = json!({"cloud.conf": cloud_conf});
        if let Some(ca) = &provider_config.ca_bundle {
            data["ca-bundle.pem"] = Value::from(ca.as_str());
        }
        let map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cloud-conf", "namespace": NAMESPACE},
            "data": data,
        });
        output = output.with_file(File::new(CLOUD_CONF_PATH, to_yaml(&map)?));
        let secret_data = match (spec.secret, &creds) {
            (Some(mount), Some(data)) => {
                let data = row.provider.in_cluster_secret(data);
                let secret = json!({
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": mount.name, "namespace": NAMESPACE},
                    "type": "Opaque",
                    "stringData": data.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect::<Map<_, _>>(),
                });
                output = output.with_file(File::secret(CREDENTIALS_PATH, to_yaml(&secret)?));
                data.into_values().collect::<Vec<_>>().join("\0")
            }
            _ => String::new(),
        };
        let hash = config_hash::hash(
            &spec,
            &config_hash::Inputs {
                cloud_conf: &cloud_conf,
                credentials: &secret_data,
                ca_bundle: provider_config.ca_bundle.as_deref().unwrap_or(""),
                leader_migration: migration.as_ref().map(|m| m.config.as_str()),
            },
        );
        let replicas = if config.control_plane_replicas() == 1 { 1 } else { 2 };
        let image = self.images.ccm_for(row.name);
        let extra_args = row.provider.ccm_args(&config);
        let run = deployment::Run {
            spec: &spec,
            image,
            assets_image: &self.images.assets,
            infra_id: &id.infra_id,
            hash: &hash,
            leader_migration: migration.is_some(),
            extra_args: &extra_args,
        };
        output = output.with_file(File::new(DEPLOYMENT_PATH, to_yaml(&run.deployment(replicas))?));
        if let Some(daemon_set) = run.node_manager(self.images.node_manager_for(row.name)) {
            output = output.with_file(File::new(NODE_MANAGER_PATH, to_yaml(&daemon_set)?));
        }
        Ok(output)
    }
}
