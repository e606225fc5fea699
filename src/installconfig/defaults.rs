//! The installer's defaults (`pkg/types/defaults`), applied after parsing and before validation.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::Defaults;
use super::types::{
    AzureCloudName, ClusterNetworkEntry, InstallConfig, LoadBalancer, LoadBalancerType,
    MachineNetworkEntry, MachinePool, OpenStackPlatform, Publish, VspherePlatform,
};
use super::validate::parse_cidr;

const MACHINE_NETWORK: &str = "10.0.0.0/16";
const CLUSTER_NETWORK: &str = "10.128.0.0/14";
const HOST_PREFIX: i32 = 23;
const SERVICE_NETWORK: &str = "172.30.0.0/16";
const NETWORK_TYPE: &str = "OVNKubernetes";
const REPLICAS: u32 = 3;
/// The cloud name when neither the install-config nor `$OS_CLOUD` names one.
const OPENSTACK_CLOUD: &str = "openstack";
/// Hosts of the first machine network that OpenStack's API and Ingress VIPs default to.
const API_VIP_HOST: u128 = 5;
const INGRESS_VIP_HOST: u128 = 7;

/// Fills every unset field the installer defaults; set fields are never changed, except the
/// control-plane pool name, which the installer always sets to `master`.
pub(crate) fn apply(config: &mut InstallConfig, defaults: &Defaults) {
    let n = &mut config.networking;
    if n.machine_network.is_empty() {
        n.machine_network = vec![MachineNetworkEntry { cidr: MACHINE_NETWORK.to_owned() }];
    }
    if n.network_type.is_empty() {
        NETWORK_TYPE.clone_into(&mut n.network_type);
    }
    if n.service_network.is_empty() {
        n.service_network = vec![SERVICE_NETWORK.to_owned()];
    }
    if n.cluster_network.is_empty() {
        n.cluster_network = vec![ClusterNetworkEntry {
            cidr: CLUSTER_NETWORK.to_owned(),
            host_prefix: Some(HOST_PREFIX),
        }];
    }
    if is_blank(config.publish.as_ref().map(Publish::as_str)) {
        config.publish = Some(Publish::External);
    }

    let control_plane = config.control_plane.get_or_insert_with(MachinePool::default);
    "master".clone_into(&mut control_plane.name);
    control_plane.replicas.get_or_insert(REPLICAS);
    if config.compute.is_empty() {
        config.compute = vec![MachinePool { name: "worker".to_owned(), ..MachinePool::default() }];
    }
    for pool in &mut config.compute {
        pool.replicas.get_or_insert(REPLICAS);
    }

    let first_machine_network =
        config.networking.machine_network.first().and_then(|entry| parse_cidr(&entry.cidr).ok());
    if let Some(openstack) = &mut config.platform.openstack {
        openstack_defaults(openstack, defaults, first_machine_network.as_ref());
    }
    if let Some(azure) = &mut config.platform.azure
        && is_blank(azure.cloud_name.as_ref().map(AzureCloudName::as_str))
    {
        azure.cloud_name = Some(AzureCloudName::Public);
    }
    if let Some(vsphere) = &mut config.platform.vsphere {
        vsphere_defaults(vsphere);
    }
    // The installer's PowerVS validation fills an empty region from a known zone.
    if let Some(powervs) = &mut config.platform.powervs
        && powervs.region.is_empty()
        && let Some(region) = super::validate::powervs_region_of(&powervs.zone)
    {
        region.clone_into(&mut powervs.region);
    }
}

/// The installer's `vsphere/defaults.SetPlatformDefaults`: a failure domain with a compute
/// cluster and no resource pool gets the cluster's root pool, `<computeCluster>/Resources`
/// (Go's `path.Join`, so the path is also cleaned). No vCenter port is defaulted: the
/// installer leaves it unset, and so do the cloud config and the Infrastructure.
/// See: issue 19.
fn vsphere_defaults(p: &mut VspherePlatform) {
    for fd in &mut p.failure_domains {
        let topology = &mut fd.topology;
        let cluster = topology.compute_cluster.as_deref().unwrap_or_default();
        if is_blank(topology.resource_pool.as_deref()) && !cluster.is_empty() {
            topology.resource_pool = Some(clean_path(&format!("{cluster}/Resources")));
        }
    }
}

/// Go's `path.Clean` for the absolute and relative slash paths vSphere inventory paths are:
/// repeated slashes folded, `.` dropped, `..` applied lexically.
pub(crate) fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// `None` and `""` both mean "not set" for the installer's string fields.
fn is_blank(value: Option<&str>) -> bool {
    value.is_none_or(str::is_empty)
}

/// The installer's `openstack/defaults.SetPlatformDefaults`.
fn openstack_defaults(p: &mut OpenStackPlatform, defaults: &Defaults, machine: Option<&IpNet>) {
    if p.cloud.is_empty() {
        p.cloud = defaults
            .os_cloud
            .clone()
            .filter(|cloud| !cloud.is_empty())
            .unwrap_or_else(|| OPENSTACK_CLOUD.to_owned());
    }
    let lb = p.load_balancer.get_or_insert_with(LoadBalancer::default);
    if is_blank(lb.kind.as_ref().map(LoadBalancerType::as_str)) {
        lb.kind = Some(LoadBalancerType::OpenShiftManagedDefault);
    }
    // A user-managed load balancer has no VIPs on the machine network to guess.
    if lb.kind == Some(LoadBalancerType::UserManaged) {
        return;
    }
    let Some(machine) = machine else { return };
    if p.api_vips.is_empty()
        && let Some(vip) = nth_host(machine, API_VIP_HOST)
    {
        p.api_vips = vec![vip.to_string()];
    }
    if p.ingress_vips.is_empty()
        && let Some(vip) = nth_host(machine, INGRESS_VIP_HOST)
    {
        p.ingress_vips = vec![vip.to_string()];
    }
}

/// The `n`th address of `net` (network address + n), as go-cidr's `cidr.Host` computes it;
/// `None` when the network is too small.
pub(crate) fn nth_host(net: &IpNet, n: u128) -> Option<IpAddr> {
    let host_bits = u32::from(net.max_prefix_len() - net.prefix_len());
    if host_bits < 128 && n >> host_bits != 0 {
        return None;
    }
    match net.network() {
        IpAddr::V4(base) => {
            let offset = u32::try_from(n).ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(u32::from(base).checked_add(offset)?)))
        }
        IpAddr::V6(base) => Some(IpAddr::V6(Ipv6Addr::from(u128::from(base).checked_add(n)?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::installconfig::parse;

    fn defaulted(platform: &str) -> InstallConfig {
        let text = format!(
            "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\nplatform:\n  {platform}\n"
        );
        parse(&text, "f", &Defaults::default()).unwrap_or_else(|err| panic!("{err}")).config
    }

    #[test]
    fn pools_network_and_publish_get_the_installer_defaults() {
        let config = defaulted("none: {}");
        assert_eq!(config.networking.network_type, "OVNKubernetes");
        assert_eq!(config.networking.service_network, ["172.30.0.0/16"]);
        assert_eq!(config.publish, Some(Publish::External));
        let control_plane = config.control_plane.as_ref().unwrap();
        assert_eq!((control_plane.name.as_str(), control_plane.replicas), ("master", Some(3)));
        assert_eq!(config.compute.len(), 1);
        assert_eq!(
            (config.compute[0].name.as_str(), config.compute[0].replicas),
            ("worker", Some(3))
        );
        assert_eq!(config.credentials_mode, None);
    }

    #[test]
    fn platform_sections_get_their_defaults() {
        let azure = defaulted("azure: {region: eastus}").platform.azure.unwrap();
        assert_eq!(azure.cloud_name, Some(AzureCloudName::Public));
        let vsphere = defaulted(
            "vsphere: {vcenters: [{server: vc, user: u, password: p, datacenters: [dc]}, {server: vc2, port: 8443, user: u, password: p, datacenters: [dc]}], \
             failureDomains: [{name: fd, region: r, zone: z, server: vc2, topology: {datacenter: dc, computeCluster: /dc/host/c, networks: [n], datastore: /dc/datastore/ds}}]}",
        );
        let ports: Vec<_> =
            vsphere.platform.vsphere.unwrap().vcenters.iter().map(|vc| vc.port).collect();
        assert_eq!(ports, [None, Some(8443)], "the installer defaults no port");
    }

    #[test]
    fn vsphere_resource_pool_defaults_to_the_cluster_root_pool() {
        let mut p: VspherePlatform = serde_json::from_value(serde_json::json!({"failureDomains": [
            {"topology": {"computeCluster": "/dc/host/c1/"}},
            {"topology": {"computeCluster": "/dc/host/c2", "resourcePool": "/dc/host/c2/Resources/rp"}},
            {"topology": {"computeCluster": "/dc/host/c3", "resourcePool": ""}},
            {"topology": {}},
        ]}))
        .unwrap();
        vsphere_defaults(&mut p);
        let pools: Vec<_> =
            p.failure_domains.iter().map(|fd| fd.topology.resource_pool.as_deref()).collect();
        let expected = [
            Some("/dc/host/c1/Resources"),
            Some("/dc/host/c2/Resources/rp"),
            Some("/dc/host/c3/Resources"),
            None,
        ];
        assert_eq!(pools, expected);
    }

    #[test]
    fn clean_path_is_go_path_clean() {
        for (path, clean) in [
            ("/dc/host/c1/Resources", "/dc/host/c1/Resources"),
            ("/dc//host/./c1/", "/dc/host/c1"),
            ("/dc/host/../vm", "/dc/vm"),
            ("/../a", "/a"),
            ("a/../..", ".."),
            ("", "."),
            ("/", "/"),
        ] {
            assert_eq!(clean_path(path), clean, "{path}");
        }
    }

    fn host(cidr: &str, n: u128) -> Option<String> {
        nth_host(&cidr.parse().unwrap(), n).map(|ip| ip.to_string())
    }

    #[test]
    fn nth_host_adds_to_the_network_address() {
        assert_eq!(host("10.0.0.0/16", 5).as_deref(), Some("10.0.0.5"));
        assert_eq!(host("192.168.10.0/24", 7).as_deref(), Some("192.168.10.7"));
        assert_eq!(host("fd2e:6f44:5dd8:c956::/64", 5).as_deref(), Some("fd2e:6f44:5dd8:c956::5"));
        assert_eq!(host("10.0.0.0/30", 3).as_deref(), Some("10.0.0.3"));
        assert_eq!(host("10.0.0.0/30", 5), None);
        assert_eq!(host("10.0.0.0/32", 1), None);
        assert_eq!(host("::/0", 7).as_deref(), Some("::7"));
    }
}
