//! Platform sections for the public clouds: AWS, Azure, GCP, IBM Cloud and PowerVS.
//!
//! Typed fields are the ones the cloud-provider configs and credentials read (see issue 5);
//! the rest of each installer platform type is kept opaque so it is known and preserved.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::scalar::{AzureCloudName, IpFamily, nullable};

/// A service endpoint override (`{name, url}`) on AWS, GCP, IBM Cloud and PowerVS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceEndpoint {
    /// The service (`ec2`, `compute`, `iam`, …).
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The endpoint URL.
    #[serde(deserialize_with = "nullable")]
    pub url: String,
}

/// A service an IBM Cloud or PowerVS endpoint override may name: openshift/api's
/// `PowerVSServiceEndpoint.name` list (IBM Cloud's `IBMCloudServiceName` is the same without
/// `Power`), spelled exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IbmService {
    /// Cloud Internet Services.
    Cis,
    /// Cloud Object Storage.
    Cos,
    /// Cloud Object Storage configuration.
    CosConfig,
    /// DNS Services.
    DnsServices,
    /// Global Catalog.
    GlobalCatalog,
    /// Global Search.
    GlobalSearch,
    /// Global Tagging.
    GlobalTagging,
    /// Hyper Protect Crypto Services.
    HyperProtect,
    /// Identity and Access Management.
    Iam,
    /// Key Protect.
    KeyProtect,
    /// Power Virtual Server (PowerVS only).
    Power,
    /// Resource Controller (service instances).
    ResourceController,
    /// Resource Manager (resource groups).
    ResourceManager,
    /// Virtual Private Cloud.
    Vpc,
}

impl IbmService {
    /// Every service, in openshift/api's order.
    pub const ALL: &[IbmService] = &[
        IbmService::Cis,
        IbmService::Cos,
        IbmService::CosConfig,
        IbmService::DnsServices,
        IbmService::GlobalCatalog,
        IbmService::GlobalSearch,
        IbmService::GlobalTagging,
        IbmService::HyperProtect,
        IbmService::Iam,
        IbmService::KeyProtect,
        IbmService::Power,
        IbmService::ResourceController,
        IbmService::ResourceManager,
        IbmService::Vpc,
    ];

    /// The name as the install-config and the Infrastructure spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            IbmService::Cis => "CIS",
            IbmService::Cos => "COS",
            IbmService::CosConfig => "COSConfig",
            IbmService::DnsServices => "DNSServices",
            IbmService::GlobalCatalog => "GlobalCatalog",
            IbmService::GlobalSearch => "GlobalSearch",
            IbmService::GlobalTagging => "GlobalTagging",
            IbmService::HyperProtect => "HyperProtect",
            IbmService::Iam => "IAM",
            IbmService::KeyProtect => "KeyProtect",
            IbmService::Power => "Power",
            IbmService::ResourceController => "ResourceController",
            IbmService::ResourceManager => "ResourceManager",
            IbmService::Vpc => "VPC",
        }
    }
}

/// A GCP service whose endpoint override reaches the cloud config (matched ignoring case: the
/// issue spells them `compute`/`container`, openshift/api `Compute`/`Container`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcpService {
    /// Compute Engine (`api-endpoint`).
    Compute,
    /// Kubernetes Engine (`container-api-endpoint`).
    Container,
}

impl GcpService {
    /// The name, lowercase.
    pub fn as_str(self) -> &'static str {
        match self {
            GcpService::Compute => "compute",
            GcpService::Container => "container",
        }
    }
}

impl ServiceEndpoint {
    /// Whether this override is for `service` (names match ignoring case).
    pub fn is_for(&self, service: &str) -> bool {
        self.name.eq_ignore_ascii_case(service)
    }
}

/// `platform.aws`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AwsPlatform {
    /// The AWS region; required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// `IPv4`, `DualStackIPv4Primary` or `DualStackIPv6Primary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<IpFamily>,
    /// Endpoint overrides.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub service_endpoints: Vec<ServiceEndpoint>,
    /// Existing subnet IDs (deprecated in favour of `vpc.subnets`).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<String>,
    /// Existing VPC settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vpc: Option<Value>,
    /// RHCOS AMI override.
    #[serde(rename = "amiID", skip_serializing_if = "Option::is_none")]
    pub ami_id: Option<String>,
    /// Existing Route 53 private hosted zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosted_zone: Option<String>,
    /// Role to assume for the hosted zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosted_zone_role: Option<String>,
    /// Extra tags for created resources.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "BTreeMap::is_empty")]
    pub user_tags: BTreeMap<String, String>,
    /// Whether operators propagate `userTags`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_user_tags: Option<bool>,
    /// `Classic` or `NLB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lb_type: Option<String>,
    /// Public IPv4 pool (BYO IP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_ipv4_pool: Option<String>,
    /// Keep the bootstrap ignition bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preserve_bootstrap_ignition: Option<bool>,
    /// Ignore failures deleting the bootstrap ignition bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_effort_delete_ignition: Option<bool>,
    /// `Enabled` or `Disabled`.
    #[serde(rename = "userProvisionedDNS", skip_serializing_if = "Option::is_none")]
    pub user_provisioned_dns: Option<String>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

/// `platform.azure`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AzurePlatform {
    /// The Azure region (`location`); required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// Defaults to `AzurePublicCloud`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_name: Option<AzureCloudName>,
    /// Existing resource group for the cluster (else `<infraID>-rg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_group_name: Option<String>,
    /// Resource group of the base domain's DNS zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_domain_resource_group_name: Option<String>,
    /// Resource group of an existing virtual network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_resource_group_name: Option<String>,
    /// Existing virtual network (else `<infraID>-vnet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_network: Option<String>,
    /// Existing compute subnet (else `<infraID>-worker-subnet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_subnet: Option<String>,
    /// Existing control-plane subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_subnet: Option<String>,
    /// Azure Stack Hub Resource Manager endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm_endpoint: Option<String>,
    /// `Loadbalancer`, `UserDefinedRouting` or `NATGatewaySingleZone`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_type: Option<String>,
    /// RHCOS image URL (Azure Stack).
    #[serde(rename = "clusterOSImage", skip_serializing_if = "Option::is_none")]
    pub cluster_os_image: Option<String>,
    /// `Enabled` or `Disabled`.
    #[serde(rename = "userProvisionedDNS", skip_serializing_if = "Option::is_none")]
    pub user_provisioned_dns: Option<String>,
    /// Extra tags for created resources.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "BTreeMap::is_empty")]
    pub user_tags: BTreeMap<String, String>,
    /// Existing subnets with roles; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Value>,
    /// Disk encryption key settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customer_managed_key: Option<Value>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

/// `platform.gcp`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GcpPlatform {
    /// The project to install into; required.
    #[serde(rename = "projectID", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    /// The GCP region; required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// Existing VPC network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// Host project of a shared VPC.
    #[serde(rename = "networkProjectID", skip_serializing_if = "Option::is_none")]
    pub network_project_id: Option<String>,
    /// Existing compute subnet (else `<infraID>-worker-subnet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_subnet: Option<String>,
    /// Existing control-plane subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_subnet: Option<String>,
    /// Endpoint overrides (`compute`, `container`, …).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub service_endpoints: Vec<ServiceEndpoint>,
    /// Private Service Connect endpoint; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Value>,
    /// Licenses for compute images; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub licenses: Option<Value>,
    /// Labels for created resources; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_labels: Option<Value>,
    /// Tags for created resources; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_tags: Option<Value>,
    /// DNS zone settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns: Option<Value>,
    /// Firewall rule ownership (`Managed` or `Unmanaged`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub firewall_rules_management: Option<String>,
    /// `Enabled` or `Disabled`.
    #[serde(rename = "userProvisionedDNS", skip_serializing_if = "Option::is_none")]
    pub user_provisioned_dns: Option<String>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

/// `platform.ibmcloud`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct IbmCloudPlatform {
    /// The IBM Cloud region; required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// Resource group for the cluster's resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_group_name: Option<String>,
    /// Resource group of an existing VPC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_resource_group_name: Option<String>,
    /// Existing VPC (else `<infraID>-vpc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vpc_name: Option<String>,
    /// Existing control-plane subnets, in input order.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub control_plane_subnets: Vec<String>,
    /// Existing compute subnets, in input order.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub compute_subnets: Vec<String>,
    /// Endpoint overrides (`iam`, `vpc`, `resourcemanager`, …).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub service_endpoints: Vec<ServiceEndpoint>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

/// `platform.powervs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PowerVsPlatform {
    /// The PowerVS region; required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// The PowerVS zone; required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub zone: String,
    /// The IBM Cloud user ID; required.
    #[serde(rename = "userID", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    /// Resource group for the cluster's resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub powervs_resource_group: Option<String>,
    /// Existing workspace GUID.
    #[serde(rename = "serviceInstanceGUID", skip_serializing_if = "Option::is_none")]
    pub service_instance_guid: Option<String>,
    /// The VPC region (the CCM's `region`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vpc_region: Option<String>,
    /// Existing VPC (else `vpc-<infraID>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vpc_name: Option<String>,
    /// Existing VPC subnets.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub vpc_subnets: Vec<String>,
    /// Endpoint overrides.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub service_endpoints: Vec<ServiceEndpoint>,
    /// Existing transit gateway, by name or ID (the installer's key is `tgName`).
    #[serde(rename = "tgName", skip_serializing_if = "Option::is_none")]
    pub transit_gateway: Option<String>,
    /// RHCOS image override.
    #[serde(rename = "clusterOSImage", skip_serializing_if = "Option::is_none")]
    pub cluster_os_image: Option<String>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_are_openshift_apis_and_overrides_match_them_ignoring_case() {
        let names: Vec<&str> = IbmService::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names.len(), 14);
        assert!(names.contains(&"IAM") && names.contains(&"COSConfig") && names.contains(&"Power"));
        let endpoint = ServiceEndpoint { name: "Compute".into(), url: "https://x".into() };
        assert!(endpoint.is_for(GcpService::Compute.as_str()));
        assert!(!endpoint.is_for(GcpService::Container.as_str()));
    }

    #[test]
    fn the_transit_gateway_is_read_from_the_installers_tg_name_key() {
        let platform: PowerVsPlatform =
            serde_json::from_str(r#"{"zone": "dal10", "tgName": "my-tg"}"#).unwrap();
        assert_eq!(platform.transit_gateway.as_deref(), Some("my-tg"));
    }
}
