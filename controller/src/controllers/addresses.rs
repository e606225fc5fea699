//! Pure address selection: ports, access IPs, Nova `addresses`, network filters, CIDR order, kubelet's node IP.

use std::cmp::Ordering;
use std::net::IpAddr;

use serde::Serialize;

use crate::cloud::Instance;
use crate::config::Networking;

use AddressType::{ExternalIP, Hostname, InternalIP};

/// The `NodeAddress.type` values this controller writes (kubelet may also report `InternalDNS`
/// and `ExternalDNS`, which it never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub(crate) enum AddressType {
    /// `InternalIP`.
    #[serde(rename = "InternalIP")]
    InternalIP,
    /// `ExternalIP`.
    #[serde(rename = "ExternalIP")]
    ExternalIP,
    /// `Hostname`.
    #[serde(rename = "Hostname")]
    Hostname,
}

impl AddressType {
    /// Every type this controller writes.
    pub(crate) const ALL: [AddressType; 3] = [InternalIP, ExternalIP, Hostname];

    /// The wire name, as in `NodeAddress.type`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            InternalIP => "InternalIP",
            ExternalIP => "ExternalIP",
            Hostname => "Hostname",
        }
    }

    /// The type with this wire name; `None` for the types this controller never writes.
    pub(crate) fn from_wire(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

/// One node address, serialized as a `NodeAddress` (`{"type": …, "address": …}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct NodeAddress {
    /// The type.
    #[serde(rename = "type")]
    pub(crate) kind: AddressType,
    /// The address.
    pub(crate) address: String,
}

fn addr(kind: AddressType, address: &str) -> NodeAddress {
    NodeAddress { kind, address: address.to_owned() }
}

fn add(list: &mut Vec<NodeAddress>, new: NodeAddress) {
    if !list.contains(&new) {
        list.push(new);
    }
}

fn is_v6(address: &str) -> bool {
    address.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6())
}

/// The upstream OCCM order: active ports' fixed IPs (InternalIP), `accessIPv4/v6` (ExternalIP),
/// metadata `hostname`, then Nova `addresses` by sorted network name — floating → ExternalIP,
/// `public-network-name` → ExternalIP (dropping the same address of another type),
/// `internal-network-name` (when set) keeps only listed networks — and finally the
/// `address-sort-order` CIDR ordering.
pub(crate) fn select(instance: &Instance, net: &Networking) -> Vec<NodeAddress> {
    let server = &instance.server;
    let keep = |address: &str| !(net.ipv6_support_disabled && is_v6(address));
    let mut out = Vec::new();
    for port in instance.ports.iter().filter(|p| p.status == "ACTIVE") {
        for ip in port.fixed_ips.iter().filter(|ip| keep(&ip.ip_address)) {
            add(&mut out, addr(InternalIP, &ip.ip_address));
        }
    }
    if !server.access_ipv4.is_empty() {
        add(&mut out, addr(ExternalIP, &server.access_ipv4));
    }
    if !server.access_ipv6.is_empty() && !net.ipv6_support_disabled {
        add(&mut out, addr(ExternalIP, &server.access_ipv6));
    }
    if let Some(hostname) = server.metadata.get("hostname").filter(|h| !h.is_empty()) {
        add(&mut out, addr(Hostname, hostname));
    }
    // BTreeMap: networks in sorted name order, as upstream sorts them.
    for (network, entries) in &server.addresses {
        for entry in entries {
            let kind = if entry.kind == "floating" {
                ExternalIP
            } else if net.public_network_names.contains(network) {
                out.retain(|a| a.address != entry.addr);
                ExternalIP
            } else if net.internal_network_names.is_empty()
                || net.internal_network_names.contains(network)
            {
                InternalIP
            } else {
                out.retain(|a| a.address != entry.addr);
                continue;
            };
            if keep(&entry.addr) {
                add(&mut out, addr(kind, &entry.addr));
            }
        }
    }
    sort(&mut out, &net.address_sort_order);
    out
}

/// Stable sort: addresses in an earlier CIDR first, ascending within one CIDR; others keep their order.
pub(crate) fn sort(addresses: &mut [NodeAddress], order: &[ipnet::IpNet]) {
    if order.is_empty() {
        return;
    }
    addresses.sort_by(|a, b| {
        let (Ok(ia), Ok(ib)) = (a.address.parse::<IpAddr>(), b.address.parse::<IpAddr>()) else {
            return Ordering::Equal;
        };
        for cidr in order {
            match (cidr.contains(&ia), cidr.contains(&ib)) {
                (true, true) => return bytes16(ia).cmp(&bytes16(ib)),
                (true, false) => return Ordering::Less,
                (false, true) => return Ordering::Greater,
                (false, false) => {}
            }
        }
        Ordering::Equal
    });
}

fn bytes16(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// Applies kubelet's `--node-ip` (annotation `alpha.kubernetes.io/provided-node-ip`, one IP or
/// a dual-stack pair): each must be among the cloud's addresses; matches go first and become
/// the only address of their type; other types follow.
pub(crate) fn with_node_ip(
    cloud: &[NodeAddress],
    provided: &str,
) -> Result<Vec<NodeAddress>, String> {
    let ips: Vec<&str> = provided.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if ips.is_empty() || ips.len() > 2 {
        return Err(format!("provided node ip {provided:?} is not one IP or a dual-stack pair"));
    }
    let mut out = Vec::new();
    let mut types = Vec::new();
    for ip in ips {
        let wanted: IpAddr =
            ip.parse().map_err(|_| format!("provided node ip {ip:?} is not an IP address"))?;
        let matches: Vec<&NodeAddress> = cloud
            .iter()
            .filter(|a| a.address.parse::<IpAddr>().is_ok_and(|have| have == wanted))
            .collect();
        if matches.is_empty() {
            return Err(format!("provided node ip {ip:?} is not among the server's addresses"));
        }
        for m in matches {
            out.push(m.clone());
            types.push(m.kind);
        }
    }
    out.extend(cloud.iter().filter(|a| !types.contains(&a.kind)).cloned());
    Ok(out)
}

#[cfg(test)]
mod tests;
