//! What OpenStack contributes: the selected cloud, cloud facts, cloud.conf, credentials.
//!
//! ```text
//! openstack/clouds ──┬── openstack/cloud-facts ──┐
//! install-config ────┴───────────────────────────┴── openstack/cloud-provider-config
//! openstack/clouds ── openstack/credentials          (Secret + reader Role)
//! ```

pub mod cloud_conf;
pub mod credentials;
pub mod lookup;

use serde::{Deserialize, Serialize};

use crate::formats::clouds_yaml::CloudEntry;
use crate::graph::{Asset, AssetError, AssetId, Output, Parents};

/// Asset id of the selected cloud.
pub const CLOUDS: AssetId = "openstack/clouds";

/// Where the cloud's CA bundle lives on every node (written there from the cloud-provider
/// ConfigMap's `ca-bundle.pem` key); cloud.conf and the in-cluster clouds.yaml point at it.
pub const CA_PATH: &str =
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";

/// The credentials Secret the installer writes and the bootstrap CCM reads through the API.
pub const CREDENTIALS_SECRET: &str = "openstack-credentials";

/// Its namespace.
pub const CREDENTIALS_NAMESPACE: &str = "kube-system";

/// The selected clouds.yaml entry, as the command loaded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cloud {
    /// The cloud's name in clouds.yaml.
    pub name: String,
    /// The entry, every key kept.
    pub entry: CloudEntry,
    /// The bytes of the `cacert` file, when the entry has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// The clouds.yaml entry named by `platform.openstack.cloud`; `null` content on other platforms.
///
/// Its content holds credentials, which is why the state file is written with mode 0600.
#[derive(Debug)]
pub struct CloudsAsset {
    cloud: Option<Cloud>,
}

impl CloudsAsset {
    /// Wraps the cloud the command selected.
    pub fn new(cloud: Option<Cloud>) -> CloudsAsset {
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
            Some(cloud) => Output::new(cloud),
            None => Ok(Output::default()),
        }
    }
}

/// `spec.platformSpec.openstack` and `status.platformStatus.openstack` of the Infrastructure.
pub fn infrastructure(
    os: &crate::installconfig::OpenStackPlatform,
    config: &crate::installconfig::InstallConfig,
) -> (serde_json::Value, serde_json::Value) {
    let networks: Vec<&str> =
        config.networking.machine_network.iter().map(|n| n.cidr.as_str()).collect();
    let spec = serde_json::json!({
        "apiServerInternalIPs": os.api_vips,
        "ingressIPs": os.ingress_vips,
        "machineNetworks": networks,
    });
    let mut status = serde_json::json!({
        "apiServerInternalIPs": os.api_vips,
        "ingressIPs": os.ingress_vips,
        "loadBalancer": {"type": os.load_balancer_type().as_str()},
        "machineNetworks": networks,
    });
    // The deprecated single-IP fields, as the installer still sets them.
    if let Some(first) = os.api_vips.first() {
        status["apiServerInternalIP"] = serde_json::Value::from(first.as_str());
    }
    if let Some(first) = os.ingress_vips.first() {
        status["ingressIP"] = serde_json::Value::from(first.as_str());
    }
    (spec, status)
}
