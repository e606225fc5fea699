//! The install-config.yaml model: upstream camelCase names on the wire, unset fields omitted.
//!
//! Values that validation judges (IPs, CIDRs, enum-like strings) are kept as the user wrote them,
//! so a bad value becomes a field-path error instead of a YAML parse failure. Fields the assets
//! do not interpret are kept opaque (`serde_json::Value`) so they are known (no unknown-field
//! warning) and survive into the normalized config.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::on_premises::*;
pub use super::public_clouds::*;
pub use super::scalar::{
    AzureCloudName, CloudControllerManager, CredentialsMode, IpFamily, LoadBalancerType, Publish,
    Secret,
};
use super::scalar::{Dropped, nullable, present};

/// The installer's `InstallConfig` (`apiVersion: v1`).
///
/// After [`crate::installconfig::parse`] the installer's defaults are applied, so serializing it
/// gives the normalized config. `pullSecret` is accepted and dropped: it is never serialized.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstallConfig {
    /// Must be `v1`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `InstallConfig` when given; the installer does not require it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The cluster name lives in `metadata.name`.
    #[serde(deserialize_with = "nullable")]
    pub metadata: Metadata,
    /// The base DNS domain; the cluster domain is `<name>.<baseDomain>`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub base_domain: String,
    /// PEM CA certificates to trust, written to the `user-ca-bundle` ConfigMap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle: Option<String>,
    /// `Proxyonly` or `Always`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_trust_bundle_policy: Option<String>,
    /// SSH public key(s) for the core user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_key: Option<String>,
    /// FIPS mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fips: Option<bool>,
    /// Cluster, machine and service networks.
    #[serde(deserialize_with = "nullable")]
    pub networking: Networking,
    /// The control-plane pool (`master`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<MachinePool>,
    /// Compute pools (`worker`, and `edge` on AWS).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub compute: Vec<MachinePool>,
    /// The arbiter pool (two-node with arbiter); opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arbiter: Option<Value>,
    /// Exactly one platform must be set.
    #[serde(deserialize_with = "nullable")]
    pub platform: Platform,
    /// Cluster-wide proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<Proxy>,
    /// `External` (default), `Internal` or `Mixed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish: Option<Publish>,
    /// Per-component publishing for `publish: Mixed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator_publishing_strategy: Option<OperatorPublishingStrategy>,
    /// `Mint`, `Passthrough` or `Manual`; unset stays unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials_mode: Option<CredentialsMode>,
    /// `""`, `TechPreviewNoUpgrade`, `DevPreviewNoUpgrade`, `CustomNoUpgrade` or `OKD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature_set: Option<String>,
    /// `<FeatureName>=<bool>` entries, only with `CustomNoUpgrade`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub feature_gates: Vec<String>,
    /// Deprecated mirror configuration; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_content_sources: Option<Value>,
    /// Mirror configuration; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_digest_sources: Option<Value>,
    /// Optional cluster capabilities; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Value>,
    /// `None` or `AllNodes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_partitioning_mode: Option<String>,
    /// Single-node bootstrap-in-place settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_in_place: Option<Value>,
    /// Accepted so it is not reported as unknown, and never kept: it must not reach any output.
    #[serde(skip_serializing)]
    pub pull_secret: Dropped,
}

impl InstallConfig {
    /// The platform's install-config key (`"openstack"`, `"aws"`, …, `"none"`), or `""` when no
    /// platform is set (validation rejects that).
    pub fn platform_name(&self) -> &'static str {
        self.platform.name()
    }

    /// Control-plane replicas after defaults (3 unless set).
    pub fn control_plane_replicas(&self) -> u32 {
        self.control_plane.as_ref().and_then(|pool| pool.replicas).unwrap_or(3)
    }

    /// `<metadata.name>.<baseDomain>`, the domain under which `api.` and `*.apps.` live.
    pub fn cluster_domain(&self) -> String {
        format!("{}.{}", self.metadata.name, self.base_domain.trim_end_matches('.'))
    }
}

/// The subset of Kubernetes `ObjectMeta` an install-config carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Metadata {
    /// The cluster name.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Ignored by the installer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Ignored by the installer.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Ignored by the installer.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// `openshift-install create install-config` writes `creationTimestamp: null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Value>,
}

/// `networking`: the cluster's address plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Networking {
    /// The network plugin; defaults to `OVNKubernetes`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub network_type: String,
    /// The networks the nodes live on; the first one is the primary.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub machine_network: Vec<MachineNetworkEntry>,
    /// Pod networks.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub cluster_network: Vec<ClusterNetworkEntry>,
    /// Service networks (CIDR strings).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub service_network: Vec<String>,
    /// Cluster network MTU (AWS only).
    #[serde(rename = "clusterNetworkMTU", skip_serializing_if = "Option::is_none")]
    pub cluster_network_mtu: Option<u32>,
    /// OVN-Kubernetes settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ovn_kubernetes_config: Option<Value>,
}

/// One `networking.machineNetwork` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MachineNetworkEntry {
    /// The CIDR as written (validated, not parsed, at load time).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub cidr: String,
}

/// One `networking.clusterNetwork` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterNetworkEntry {
    /// The pod CIDR as written.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub cidr: String,
    /// The prefix of each node's slice of the pod CIDR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_prefix: Option<i32>,
}

/// A machine pool (`controlPlane`, `compute[]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MachinePool {
    /// `master` for the control plane, `worker` or `edge` for compute.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Number of machines; defaults to 3. Unsigned, so a negative count is a YAML type error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// Platform-specific machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Value>,
    /// `amd64`, `arm64`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// `Enabled` or `Disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hyperthreading: Option<String>,
    /// Fencing credentials (two-node fencing); opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fencing: Option<Value>,
    /// Extra disk layout; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_setup: Option<Value>,
}

/// `proxy`: cluster-wide egress proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Proxy {
    /// URL of the HTTP proxy (`http://`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// URL of the HTTPS proxy (`http://` or `https://`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Comma-separated domains, IPs and CIDRs, or `*`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

/// `operatorPublishingStrategy` for `publish: Mixed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OperatorPublishingStrategy {
    /// `Internal` or `External`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apiserver: Option<String>,
    /// `Internal` or `External`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<String>,
}

/// `platform`: exactly one of these must be set. A key that is present selects its platform,
/// even with an empty value (`none:`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Platform {
    /// Amazon Web Services.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsPlatform>,
    /// Microsoft Azure.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzurePlatform>,
    /// Bare metal.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub baremetal: Option<BaremetalPlatform>,
    /// An external platform integration.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalPlatform>,
    /// Google Cloud.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub gcp: Option<GcpPlatform>,
    /// IBM Cloud VPC.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub ibmcloud: Option<IbmCloudPlatform>,
    /// No platform integration.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub none: Option<NonePlatform>,
    /// Nutanix.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub nutanix: Option<NutanixPlatform>,
    /// OpenStack.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub openstack: Option<OpenStackPlatform>,
    /// IBM Power Virtual Server.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub powervs: Option<PowerVsPlatform>,
    /// VMware vSphere.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub vsphere: Option<VspherePlatform>,
}

impl Platform {
    /// Every platform key, sorted as the installer lists them in its error message.
    pub const NAMES: &'static [&'static str] = &[
        "aws",
        "azure",
        "baremetal",
        "external",
        "gcp",
        "ibmcloud",
        "none",
        "nutanix",
        "openstack",
        "powervs",
        "vsphere",
    ];

    /// The keys of every platform that is set, in [`Platform::NAMES`] order.
    pub fn set_names(&self) -> Vec<&'static str> {
        let set = [
            self.aws.is_some(),
            self.azure.is_some(),
            self.baremetal.is_some(),
            self.external.is_some(),
            self.gcp.is_some(),
            self.ibmcloud.is_some(),
            self.none.is_some(),
            self.nutanix.is_some(),
            self.openstack.is_some(),
            self.powervs.is_some(),
            self.vsphere.is_some(),
        ];
        Self::NAMES.iter().zip(set).filter_map(|(name, set)| set.then_some(*name)).collect()
    }

    /// The active platform: the first one set (as the installer picks it), or `""`.
    pub fn name(&self) -> &'static str {
        self.set_names().first().copied().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use crate::installconfig::{Defaults, parse};

    #[test]
    fn passwords_and_the_pull_secret_never_reach_debug_output() {
        let text = concat!(
            "apiVersion: v1\nmetadata: {name: ocp}\nbaseDomain: example.com\n",
            "pullSecret: 'pull-s3cret'\nplatform:\n  vsphere:\n    vcenters:\n",
            "    - {server: vc, user: admin, password: vc-s3cret, datacenters: [dc]}\n",
            "    failureDomains:\n    - {name: fd, region: r, zone: z, server: vc, topology: ",
            "{datacenter: dc, computeCluster: /dc/host/c, networks: [n], datastore: /dc/datastore/ds}}\n",
        );
        let loaded = parse(text, "f", &Defaults::default()).unwrap_or_else(|err| panic!("{err}"));
        let debug = format!("{:?} {:#?}", loaded.config, loaded.config);
        assert!(!debug.contains("s3cret"), "{debug}");
        let json = serde_json::to_string(&loaded.config).unwrap();
        assert!(!json.contains("pull-s3cret") && !json.contains("pullSecret"), "{json}");
        // The vCenter password is part of the normalized config: the credentials Secret needs it.
        assert!(json.contains("vc-s3cret"), "{json}");
    }

    #[test]
    fn the_first_platform_set_is_the_active_one() {
        let mut config = super::InstallConfig::default();
        assert_eq!(config.platform_name(), "");
        config.platform.openstack = Some(Default::default());
        config.platform.aws = Some(Default::default());
        assert_eq!(config.platform_name(), "aws");
        assert_eq!(config.platform.set_names(), ["aws", "openstack"]);
        config.metadata.name = "ocp".into();
        config.base_domain = "example.com.".into();
        assert_eq!(config.cluster_domain(), "ocp.example.com");
    }
}
