//! Neutron port requests (paths without the `v2.0` prefix: osauth adds the discovered version).

use osauth::Session;
use osauth::services::NETWORK;
use serde::Deserialize;

use crate::cloud::limit::Noted as _;

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

/// The port fields [`Port`] reads: Neutron leaves the rest out of the answer.
const FIELDS: [&str; 5] = ["id", "device_id", "network_id", "status", "fixed_ips"];

/// The ports of these servers (one `device_id` filter each, which Neutron ORs) or, with none,
/// every port of the project (grouped by the caller); only the fields [`Port`] reads.
pub(crate) async fn list_ports(
    session: &Session,
    device_ids: &[&str],
) -> Result<Vec<Port>, osauth::Error> {
    let mut query: Vec<(&str, &str)> = device_ids.iter().map(|id| ("device_id", *id)).collect();
    query.extend(FIELDS.iter().map(|f| ("fields", *f)));
    let root: PortsRoot = session.get(NETWORK, &["ports"]).query(&query).fetched().await?;
    Ok(root.ports)
}

/// The ports holding fixed IP `address` (Neutron's `fixed_ips=ip_address=…` filter).
pub(crate) async fn ports_with_ip(
    session: &Session,
    address: &str,
) -> Result<Vec<Port>, osauth::Error> {
    let filter = format!("ip_address={address}");
    let root: PortsRoot =
        session.get(NETWORK, &["ports"]).query(&[("fixed_ips", filter.as_str())]).fetched().await?;
    Ok(root.ports)
}

/// The ports with a fixed IP on `subnet_id` (Neutron's `fixed_ips=subnet_id=…` filter): one
/// request whatever the number of nodes; only the fields [`Port`] reads.
pub(crate) async fn ports_on_subnet(
    session: &Session,
    subnet_id: &str,
) -> Result<Vec<Port>, osauth::Error> {
    let filter = format!("subnet_id={subnet_id}");
    let mut query = vec![("fixed_ips", filter.as_str())];
    query.extend(FIELDS.iter().map(|f| ("fields", *f)));
    let root: PortsRoot = session.get(NETWORK, &["ports"]).query(&query).fetched().await?;
    Ok(root.ports)
}

/// A port as the VIP-port cleanup reads it: who made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct OwnedPort {
    pub(crate) id: String,
    pub(crate) name: String,
    /// `Octavia` on the VIP ports Octavia makes.
    pub(crate) device_owner: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OwnedPortsRoot {
    ports: Vec<OwnedPort>,
}

/// The ports named exactly `name`.
pub(crate) async fn ports_named(
    session: &Session,
    name: &str,
) -> Result<Vec<OwnedPort>, osauth::Error> {
    let query = [("name", name), ("fields", "id"), ("fields", "name"), ("fields", "device_owner")];
    let root: OwnedPortsRoot = session.get(NETWORK, &["ports"]).query(&query).fetched().await?;
    Ok(root.ports)
}

/// The ports Octavia owns (`device_owner=Octavia`: the VIP ports it makes), for `purge`.
pub(crate) async fn octavia_ports(session: &Session) -> Result<Vec<OwnedPort>, osauth::Error> {
    let query = [
        ("device_owner", "Octavia"),
        ("fields", "id"),
        ("fields", "name"),
        ("fields", "device_owner"),
    ];
    let root: OwnedPortsRoot = session.get(NETWORK, &["ports"]).query(&query).fetched().await?;
    Ok(root.ports)
}

/// Deletes a port.
pub(crate) async fn delete_port(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session.delete(NETWORK, &["ports", id]).sent().await.map(drop)
}
