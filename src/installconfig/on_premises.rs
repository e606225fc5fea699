//! Platform sections for on-premises platforms: OpenStack, vSphere, Nutanix, bare metal,
//! external and none.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::scalar::{CloudControllerManager, LoadBalancerType, Secret, nullable};

/// `loadBalancer` on OpenStack, vSphere, Nutanix and bare metal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadBalancer {
    /// Defaults to `OpenShiftManagedDefault` on OpenStack.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<LoadBalancerType>,
}

/// A Neutron resource named by ID or by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceFilter {
    /// The UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One fixed IP of `controlPlanePort`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FixedIp {
    /// The subnet to take the address from.
    pub subnet: ResourceFilter,
}

/// `platform.openstack.controlPlanePort`: an existing network/subnets for the nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PortTarget {
    /// The network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<ResourceFilter>,
    /// The subnets (one per IP family).
    #[serde(rename = "fixedIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed_ips: Vec<FixedIp>,
}

/// `platform.openstack`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OpenStackPlatform {
    /// The cloud in clouds.yaml; defaults to `$OS_CLOUD`, then `openstack`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
    pub cloud: String,
    /// Name or ID of the external (floating IP) network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_network: Option<String>,
    /// API VIPs; default host .5 of the first machine network unless `UserManaged`.
    #[serde(rename = "apiVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_vips: Vec<String>,
    /// Ingress VIPs; default host .7 of the first machine network unless `UserManaged`.
    #[serde(rename = "ingressVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ingress_vips: Vec<String>,
    /// Existing floating IP for the API.
    #[serde(rename = "apiFloatingIP", skip_serializing_if = "Option::is_none")]
    pub api_floating_ip: Option<String>,
    /// Existing floating IP for ingress.
    #[serde(rename = "ingressFloatingIP", skip_serializing_if = "Option::is_none")]
    pub ingress_floating_ip: Option<String>,
    /// Load balancer ownership.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// Existing subnet for the nodes (deprecated in favour of `controlPlanePort`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machines_subnet: Option<String>,
    /// Existing network and subnets for the nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_port: Option<PortTarget>,
    /// DNS servers for the machines' subnet.
    #[serde(rename = "externalDNS", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub external_dns: Vec<String>,
    /// RHCOS image URL or Glance image name.
    #[serde(rename = "clusterOSImage", skip_serializing_if = "Option::is_none")]
    pub cluster_os_image: Option<String>,
    /// Glance properties for an uploaded image; opaque.
    #[serde(rename = "clusterOSImageProperties", skip_serializing_if = "Option::is_none")]
    pub cluster_os_image_properties: Option<Value>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
    /// Flavor of the bootstrap machine (else the control plane's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_flavor: Option<String>,
    /// `Internal` (default) or `External` (only with a user-managed load balancer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_records_type: Option<String>,
    /// Not the installer's: the ID of the Neutron router on which the CCM's route controller
    /// routes each node's pod CIDR (cloud.conf `[Route] router-id`, and `--cluster-cidr` from
    /// `networking.clusterNetwork`), for a pod network that is not an overlay. See: issue 27.
    #[serde(rename = "routerID", skip_serializing_if = "Option::is_none")]
    pub router_id: Option<String>,
}

impl OpenStackPlatform {
    /// The load balancer type after defaults (`OpenShiftManagedDefault` when unset).
    pub fn load_balancer_type(&self) -> LoadBalancerType {
        self.load_balancer
            .as_ref()
            .and_then(|lb| lb.kind.clone())
            .unwrap_or(LoadBalancerType::OpenShiftManagedDefault)
    }
}

/// One `platform.vsphere.vcenters` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VCenter {
    /// Host name or IP of the vCenter.
    #[serde(deserialize_with = "nullable")]
    pub server: String,
    /// Defaults to 443.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// User name.
    #[serde(deserialize_with = "nullable")]
    pub user: String,
    /// Password; redacted in `Debug`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Secret::is_empty")]
    pub password: Secret,
    /// Datacenters used by the cluster.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub datacenters: Vec<String>,
}

/// `topology` of a vSphere failure domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Topology {
    /// Datacenter name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datacenter: Option<String>,
    /// Compute cluster path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_cluster: Option<String>,
    /// Port group names.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<String>,
    /// Datastore path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datastore: Option<String>,
    /// Resource pool path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_pool: Option<String>,
    /// VM folder path (else `/<datacenter>/vm/<infraID>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// RHCOS template path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Host group (host-zonal failure domains).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_group: Option<String>,
    /// Tags attached to created VMs.
    #[serde(rename = "tagIDs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tag_ids: Vec<String>,
}

/// One `platform.vsphere.failureDomains` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct FailureDomain {
    /// Failure domain name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Region tag value.
    #[serde(deserialize_with = "nullable")]
    pub region: String,
    /// Zone tag value.
    #[serde(deserialize_with = "nullable")]
    pub zone: String,
    /// The vCenter (one of `vcenters[].server`).
    #[serde(deserialize_with = "nullable")]
    pub server: String,
    /// Where machines of this domain go.
    pub topology: Topology,
    /// `Datacenter` or `ComputeCluster`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region_type: Option<String>,
    /// `ComputeCluster` or `HostGroup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_type: Option<String>,
}

/// `platform.vsphere`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VspherePlatform {
    /// The vCenters; required.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub vcenters: Vec<VCenter>,
    /// Failure domains (regions/zones).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub failure_domains: Vec<FailureDomain>,
    /// API VIPs.
    #[serde(rename = "apiVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_vips: Vec<String>,
    /// Ingress VIPs.
    #[serde(rename = "ingressVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ingress_vips: Vec<String>,
    /// Load balancer ownership.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// `thin`, `thick` or `eagerZeroedThick`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_type: Option<String>,
    /// RHCOS OVA URL.
    #[serde(rename = "clusterOSImage", skip_serializing_if = "Option::is_none")]
    pub cluster_os_image: Option<String>,
    /// Static IP hosts; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Value>,
    /// Node networking (excluded subnets); opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_networking: Option<Value>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

/// A Prism endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PrismEndpoint {
    /// Host name or IP.
    #[serde(deserialize_with = "nullable")]
    pub address: String,
    /// Port (usually 9440).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// `platform.nutanix.prismCentral`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PrismCentral {
    /// Where Prism Central listens.
    pub endpoint: PrismEndpoint,
    /// User name.
    #[serde(deserialize_with = "nullable")]
    pub username: String,
    /// Password; redacted in `Debug`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Secret::is_empty")]
    pub password: Secret,
}

/// One `platform.nutanix.prismElements` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PrismElement {
    /// Where the Prism Element listens.
    pub endpoint: PrismEndpoint,
    /// The cluster UUID.
    #[serde(deserialize_with = "nullable")]
    pub uuid: String,
    /// The cluster name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `platform.nutanix`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NutanixPlatform {
    /// Prism Central; required.
    pub prism_central: PrismCentral,
    /// Prism Elements; at least one.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub prism_elements: Vec<PrismElement>,
    /// Subnets for the nodes; at least one.
    #[serde(rename = "subnetUUIDs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subnet_uuids: Vec<String>,
    /// API VIPs.
    #[serde(rename = "apiVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_vips: Vec<String>,
    /// Ingress VIPs.
    #[serde(rename = "ingressVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ingress_vips: Vec<String>,
    /// Load balancer ownership.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// RHCOS image URL.
    #[serde(rename = "clusterOSImage", skip_serializing_if = "Option::is_none")]
    pub cluster_os_image: Option<String>,
    /// An image already in Prism.
    #[serde(rename = "preloadedOSImageName", skip_serializing_if = "Option::is_none")]
    pub preloaded_os_image_name: Option<String>,
    /// Prism API timeout in minutes; opaque.
    #[serde(rename = "prismAPICallTimeout", skip_serializing_if = "Option::is_none")]
    pub prism_api_call_timeout: Option<Value>,
    /// Failure domains; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_domains: Option<Value>,
    /// Default machine settings; opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_machine_platform: Option<Value>,
}

/// `platform.baremetal`: only the VIPs are typed, every other key is kept as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BaremetalPlatform {
    /// API VIPs; required.
    #[serde(rename = "apiVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_vips: Vec<String>,
    /// Ingress VIPs; required.
    #[serde(rename = "ingressVIPs", deserialize_with = "nullable")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ingress_vips: Vec<String>,
    /// Load balancer ownership.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancer>,
    /// Hosts, provisioning network and the rest; kept verbatim (bare metal has no cloud config).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// `platform.external`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExternalPlatform {
    /// Name of the platform integration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_name: Option<String>,
    /// `""` or `External`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_controller_manager: Option<CloudControllerManager>,
}

/// `platform.none`: no settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NonePlatform {}
