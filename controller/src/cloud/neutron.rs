//! Neutron port requests (paths without the `v2.0` prefix: osauth adds the discovered version).

use osauth::Session;
use osauth::services::NETWORK;
use serde::Deserialize;

/// A Neutron port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Port {
    /// Port ID.
    pub id: String,
    /// The server it is bound to.
    pub device_id: String,
    /// Network ID.
    pub network_id: String,
    /// `ACTIVE`, `DOWN`, …
    pub status: String,
    /// Fixed IPs.
    pub fixed_ips: Vec<FixedIp>,
}

/// One fixed IP of a port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct FixedIp {
    /// The address.
    pub ip_address: String,
    /// Its subnet.
    pub subnet_id: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PortsRoot {
    ports: Vec<Port>,
}

/// Ports of one server (`device_id`) or, with `None`, every port of the project bound to a
/// compute instance (one call per resync, grouped by the caller).
pub(crate) async fn list_ports(
    session: &Session,
    device_id: Option<&str>,
) -> Result<Vec<Port>, osauth::Error> {
    let query: Vec<(&str, &str)> = match device_id {
        Some(id) => vec![("device_id", id)],
        None => vec![],
    };
    let root: PortsRoot = session.get(NETWORK, &["ports"]).query(&query).fetch().await?;
    Ok(root.ports)
}

/// The ports holding fixed IP `address` (Neutron's `fixed_ips=ip_address=…` filter).
pub(crate) async fn ports_with_ip(
    session: &Session,
    address: &str,
) -> Result<Vec<Port>, osauth::Error> {
    let filter = format!("ip_address={address}");
    let root: PortsRoot =
        session.get(NETWORK, &["ports"]).query(&[("fixed_ips", filter.as_str())]).fetch().await?;
    Ok(root.ports)
}
