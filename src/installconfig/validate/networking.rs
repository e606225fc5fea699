//! `networking` checks: CIDR syntax and shape, overlaps, host prefixes, IP families, MTU.

use std::net::IpAddr;

use ipnet::IpNet;

use super::field::{FieldError, Path};
use crate::installconfig::types::{IpFamily, Networking, Platform};

/// OVN-Kubernetes' internal subnets, which no cluster network may overlap.
const OVN_V4: [(&str, &str); 3] =
    [("internal", "100.64.0.0/16"), ("transit", "100.88.0.0/16"), ("masquerade", "169.254.0.0/17")];
const OVN_V6: [(&str, &str); 3] =
    [("internal", "fd98::/64"), ("transit", "fd97::/64"), ("masquerade", "fd69::/112")];

/// Parses a CIDR, keeping host bits (as Go's installer does) so they can be reported.
pub(crate) fn parse_cidr(text: &str) -> Result<IpNet, String> {
    text.parse::<IpNet>().map_err(|_| format!("invalid CIDR address: {text}"))
}

/// The installer's `DoCIDRsOverlap`: one contains the other's address.
fn overlap(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.addr()) || b.contains(&a.addr())
}

/// A parsed list of CIDRs, with the text of each one that parsed.
#[derive(Debug, Default)]
pub(crate) struct Nets {
    /// `(index in the list, text, parsed)` for entries that parsed.
    pub(crate) entries: Vec<(usize, String, IpNet)>,
}

impl Nets {
    fn parse<'a>(texts: impl Iterator<Item = &'a str>) -> Self {
        let entries = texts
            .enumerate()
            .filter_map(|(i, text)| parse_cidr(text).ok().map(|net| (i, text.to_owned(), net)))
            .collect();
        Self { entries }
    }

    fn has(&self, v6: bool) -> bool {
        self.entries.iter().any(|(_, _, net)| is_v6(net) == v6)
    }

    fn primary_v6(&self) -> Option<bool> {
        self.entries.first().map(|(_, _, net)| is_v6(net))
    }

    fn joined(&self, sep: &str) -> String {
        let texts: Vec<&str> = self.entries.iter().map(|(_, text, _)| text.as_str()).collect();
        texts.join(sep)
    }

    /// The installer's `ValidateIPinMachineCIDR`.
    pub(crate) fn contains_or_explain(&self, ip: IpAddr) -> Result<(), String> {
        if self.entries.iter().any(|(_, _, net)| net.contains(&ip)) {
            return Ok(());
        }
        Err(format!("IP expected to be in one of the machine networks: {}", self.joined(",")))
    }
}

fn is_v6(net: &IpNet) -> bool {
    matches!(net, IpNet::V6(_))
}

/// The parsed networks, shared with the VIP checks.
#[derive(Debug, Default)]
pub(crate) struct AddressPlan {
    /// Machine networks that parsed.
    pub(crate) machine: Nets,
    service: Nets,
    cluster: Nets,
}

impl AddressPlan {
    /// Parses the networks, skipping entries that do not parse (they are reported separately).
    pub(crate) fn new(n: &Networking) -> Self {
        Self {
            machine: Nets::parse(n.machine_network.iter().map(|e| e.cidr.as_str())),
            service: Nets::parse(n.service_network.iter().map(String::as_str)),
            cluster: Nets::parse(n.cluster_network.iter().map(|e| e.cidr.as_str())),
        }
    }

    /// Dual stack as the installer infers it: from the service networks.
    pub(crate) fn dual_stack(&self) -> bool {
        self.service.has(false) && self.service.has(true)
    }

    /// Whether `ip` lies in a cluster (pod) network.
    pub(crate) fn cluster_contains(&self, ip: IpAddr) -> bool {
        self.cluster.entries.iter().any(|(_, _, net)| net.contains(&ip))
    }

    /// Whether `ip` lies in a service network.
    pub(crate) fn service_contains(&self, ip: IpAddr) -> bool {
        self.service.entries.iter().any(|(_, _, net)| net.contains(&ip))
    }

    /// Whether the first machine network is IPv6.
    pub(crate) fn machine_primary_v6(&self) -> bool {
        self.machine.primary_v6().unwrap_or(false)
    }
}

/// Every `networking` check; `plan` holds the same networks, parsed.
pub(crate) fn check(n: &Networking, plan: &AddressPlan, platform: &Platform) -> Vec<FieldError> {
    let path = Path::new("networking");
    let mut errs = Vec::new();
    if n.network_type.is_empty() {
        errs.push(FieldError::required(
            &path.child("networkType"),
            "network provider type required",
        ));
    } else if n.network_type.eq_ignore_ascii_case("Kuryr") {
        let detail = "networkType Kuryr is not supported on OpenShift later than 4.14";
        errs.push(FieldError::invalid(&path.child("networkType"), &n.network_type, detail));
    } else if n.network_type.eq_ignore_ascii_case("OpenShiftSDN") {
        let detail = "networkType OpenShiftSDN is not supported, please use OVNKubernetes";
        errs.push(FieldError::invalid(&path.child("networkType"), &n.network_type, detail));
    }
    let ovn = Ovn {
        enabled: n.network_type.eq_ignore_ascii_case("OVNKubernetes"),
        join_configured: n
            .ovn_kubernetes_config
            .as_ref()
            .and_then(|c| c.pointer("/ipv4/internalJoinSubnet"))
            .is_some(),
    };
    machine_networks(n, plan, &ovn, &path.child("machineNetwork"), &mut errs);
    service_networks(n, plan, &ovn, &path.child("serviceNetwork"), &mut errs);
    cluster_networks(n, plan, &ovn, &path.child("clusterNetwork"), &mut errs);
    errs.extend(ip_families(n, plan, platform));
    errs.extend(mtu(n, platform));
    errs
}

/// OVN-Kubernetes' reserved subnets, checked only when it is the network plugin.
struct Ovn {
    enabled: bool,
    /// A configured join subnet replaces the default one, which then need not be avoided.
    join_configured: bool,
}

impl Ovn {
    fn overlaps(&self, net: &IpNet, at: &Path, errs: &mut Vec<FieldError>) {
        if !self.enabled {
            return;
        }
        let defaults = if is_v6(net) { OVN_V6 } else { OVN_V4 };
        for (kind, cidr) in defaults {
            if kind == "internal" && self.join_configured {
                continue;
            }
            if let Ok(default) = cidr.parse::<IpNet>()
                && overlap(net, &default)
            {
                let detail =
                    format!("must not overlap with OVNKubernetes default {kind} subnet {cidr}");
                errs.push(FieldError::invalid(at, net.to_string().as_str(), detail));
            }
        }
    }
}

fn machine_networks(
    n: &Networking,
    plan: &AddressPlan,
    ovn: &Ovn,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if n.machine_network.is_empty() {
        errs.push(FieldError::required(path, "at least one machine network is required"));
    }
    for (i, entry) in n.machine_network.iter().enumerate() {
        let at = path.index(i);
        let Some(net) = parsed(&entry.cidr, &at.child("cidr"), errs) else { continue };
        if let Err(detail) = subnet_cidr(&net) {
            errs.push(FieldError::invalid(&at, &entry.cidr, detail));
            continue;
        }
        ovn.overlaps(&net, &at, errs);
        for (j, _, other) in plan.machine.entries.iter().filter(|(j, _, _)| *j < i) {
            if overlap(&net, other) {
                let detail = format!("machine network must not overlap with machine network {j}");
                errs.push(FieldError::invalid(&at, &entry.cidr, detail));
            }
        }
    }
}

fn service_networks(
    n: &Networking,
    plan: &AddressPlan,
    ovn: &Ovn,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if n.service_network.is_empty() {
        errs.push(FieldError::required(path, "a service network is required"));
    }
    for (i, text) in n.service_network.iter().enumerate() {
        let at = path.index(i);
        let Some(net) = parsed(text, &at, errs) else { continue };
        if let Err(detail) = subnet_cidr(&net).and_then(|()| service_size(&net)) {
            errs.push(FieldError::invalid(&at, text, detail));
            continue;
        }
        ovn.overlaps(&net, &at, errs);
        if plan.machine.entries.iter().any(|(_, _, m)| overlap(&net, m)) {
            let detail = "service network must not overlap with any of the machine networks";
            errs.push(FieldError::invalid(&at, text, detail));
        }
        for (j, _, other) in plan.service.entries.iter().filter(|(j, _, _)| *j < i) {
            if overlap(&net, other) {
                let detail = format!("service network must not overlap with service network {j}");
                errs.push(FieldError::invalid(&at, text, detail));
            }
        }
    }
}

fn cluster_networks(
    n: &Networking,
    plan: &AddressPlan,
    ovn: &Ovn,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if n.cluster_network.is_empty() {
        errs.push(FieldError::required(path, "cluster network required"));
    }
    for (i, entry) in n.cluster_network.iter().enumerate() {
        let at = path.index(i).child("cidr");
        let Some(net) = parsed(&entry.cidr, &at, errs) else { continue };
        if let Err(detail) = subnet_cidr(&net) {
            errs.push(FieldError::invalid(&at, &entry.cidr, detail));
            continue;
        }
        ovn.overlaps(&net, &at, errs);
        if plan.machine.entries.iter().any(|(_, _, m)| overlap(&net, m)) {
            let detail = "cluster network must not overlap with any of the machine networks";
            errs.push(FieldError::invalid(&at, &entry.cidr, detail));
        }
        for (j, _, other) in &plan.service.entries {
            if overlap(&net, other) {
                let detail = format!("cluster network must not overlap with service network {j}");
                errs.push(FieldError::invalid(&at, &entry.cidr, detail));
            }
        }
        for (j, _, other) in plan.cluster.entries.iter().filter(|(j, _, _)| *j < i) {
            if overlap(&net, other) {
                let detail = format!("cluster network must not overlap with cluster network {j}");
                errs.push(FieldError::invalid(&at, &entry.cidr, detail));
            }
        }
        // The plugin ignores an unset hostPrefix only when it does not use host prefixes.
        let host_prefix = entry.host_prefix.unwrap_or(0);
        if ovn.enabled || host_prefix != 0 {
            let at = path.index(i).child("hostPrefix");
            let earlier_v4_differs = n.cluster_network[..i].iter().any(|e| {
                parse_cidr(&e.cidr).is_ok_and(|other| !is_v6(&other))
                    && e.host_prefix.unwrap_or(0) != host_prefix
            });
            if let Err(detail) =
                check_host_prefix(&net, &entry.cidr, host_prefix, earlier_v4_differs)
            {
                errs.push(FieldError::invalid(&at, i64::from(host_prefix), detail));
            }
        }
    }
}

/// The installer's hostPrefix rules for one cluster network.
fn check_host_prefix(
    net: &IpNet,
    cidr: &str,
    host_prefix: i32,
    earlier_v4_differs: bool,
) -> Result<(), String> {
    if host_prefix < 0 {
        Err("hostPrefix must be positive".to_owned())
    } else if host_prefix < i32::from(net.prefix_len()) {
        Err(format!(
            "cluster network host subnetwork prefix must not be larger size than CIDR {cidr}"
        ))
    } else if !is_v6(net) && earlier_v4_differs {
        Err("cluster network host subnetwork prefix must be the same value for IPv4 networks"
            .to_owned())
    } else if is_v6(net) && host_prefix != 64 {
        Err("cluster network host subnetwork prefix must be 64 for IPv6 networks".to_owned())
    } else {
        Ok(())
    }
}

fn parsed(text: &str, at: &Path, errs: &mut Vec<FieldError>) -> Option<IpNet> {
    parse_cidr(text).map_err(|detail| errs.push(FieldError::invalid(at, text, detail))).ok()
}

/// The installer's `validate.SubnetCIDR`.
fn subnet_cidr(net: &IpNet) -> Result<(), String> {
    if net.addr().is_unspecified() {
        return Err("address must be specified".to_owned());
    }
    if net.addr() != net.network() {
        return Err(format!("invalid network address. got {net}, expecting {}", net.trunc()));
    }
    Ok(())
}

/// The installer's `validate.ServiceSubnetCIDR` size limits.
fn service_size(net: &IpNet) -> Result<(), String> {
    match net {
        IpNet::V4(v4) if v4.prefix_len() < 12 => {
            Err("subnet size for IPv4 service network must be /12 or greater (/16 is recommended)"
                .to_owned())
        }
        IpNet::V6(v6) if v6.prefix_len() < 108 => Err(
            "subnet size for IPv6 service network should be /108 or greater (/112 is recommended)"
                .to_owned(),
        ),
        _ => Ok(()),
    }
}

/// The installer's `validateNetworkingIPVersion`: single-stack IPv6 and dual stack per platform.
fn ip_families(n: &Networking, plan: &AddressPlan, platform: &Platform) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("networking");
    let has_v4 = plan.service.has(false);
    let has_v6 = plan.service.has(true);
    let aws_family = platform.aws.as_ref().and_then(|aws| aws.ip_family.clone());
    let name = platform.name();
    if has_v4 && has_v6 {
        if n.service_network.len() != 2 {
            let detail = "when installing dual-stack IPv4/IPv6 you must provide two service networks, one for each IP address type";
            errs.push(FieldError::invalid(
                &path.child("serviceNetwork"),
                plan.service.joined(", ").as_str(),
                detail,
            ));
        }
        let allow_v6_primary = match name {
            "baremetal" | "vsphere" | "openstack" => true,
            "aws" => aws_family == Some(IpFamily::DualStackIpv6Primary),
            _ => false,
        };
        let supported = match name {
            "aws" => matches!(
                aws_family,
                Some(IpFamily::DualStackIpv4Primary | IpFamily::DualStackIpv6Primary)
            ),
            _ => matches!(
                name,
                "baremetal" | "vsphere" | "openstack" | "nutanix" | "none" | "external"
            ),
        };
        if !supported {
            let detail = "dual-stack IPv4/IPv6 is not supported for this platform, specify only one type of address";
            errs.push(FieldError::invalid(&path, "DualStack", detail));
        }
        for (key, nets) in [
            ("clusterNetwork", &plan.cluster),
            ("machineNetwork", &plan.machine),
            ("serviceNetwork", &plan.service),
        ] {
            let (v4, v6) = (nets.has(false), nets.has(true));
            let at = path.child(key);
            let value = nets.joined(", ");
            if v4 && !v6 {
                let detail = "dual-stack IPv4/IPv6 requires an IPv6 network in this list";
                errs.push(FieldError::invalid(&at, value.as_str(), detail));
            } else if v6 && !v4 {
                let detail = "dual-stack IPv4/IPv6 requires an IPv4 network in this list";
                errs.push(FieldError::invalid(&at, value.as_str(), detail));
            }
            if !allow_v6_primary && v4 && v6 && nets.primary_v6() == Some(true) {
                let detail = "IPv4 addresses must be listed before IPv6 addresses";
                errs.push(FieldError::invalid(&at, value.as_str(), detail));
            }
        }
    } else if has_v6 {
        let stack = platform.azure.as_ref().is_some_and(|azure| {
            azure.cloud_name == Some(crate::installconfig::AzureCloudName::Stack)
        });
        if stack {
            errs.push(FieldError::invalid(&path, "IPv6", "Azure Stack does not support IPv6"));
        } else if !matches!(
            name,
            "baremetal" | "vsphere" | "openstack" | "nutanix" | "none" | "external"
        ) {
            let detail = "single-stack IPv6 is not supported for this platform";
            errs.push(FieldError::invalid(&path, "IPv6", detail));
        }
    } else if has_v4 && n.service_network.len() > 1 {
        let detail = "only one service network can be specified";
        errs.push(FieldError::invalid(
            &path.child("serviceNetwork"),
            plan.service.joined(", ").as_str(),
            detail,
        ));
    }
    errs
}

/// The installer's `validateNetworkingClusterNetworkMTU` (AWS only).
fn mtu(n: &Networking, platform: &Platform) -> Vec<FieldError> {
    let Some(mtu) = n.cluster_network_mtu.filter(|mtu| *mtu != 0) else {
        return Vec::new();
    };
    let at = Path::new("networking").child("clusterNetworkMTU");
    let value = i64::from(mtu);
    let detail = if platform.name() != "aws" {
        "cluster network MTU is allowed only in AWS deployments".to_owned()
    } else if mtu > 9001 {
        "cluster network MTU exceeds the maximum value of 9001".to_owned()
    } else if mtu < 1000 {
        "cluster network MTU is lower than the minimum value of 1000".to_owned()
    } else if n.network_type != "OVNKubernetes" {
        format!("cluster network MTU is not valid with network plugin {}", n.network_type)
    } else if mtu > 8901 {
        "cluster network MTU exceeds the maximum value with the network plugin OVNKubernetes of 8901".to_owned()
    } else {
        return Vec::new();
    };
    vec![FieldError::invalid(&at, value, detail)]
}
