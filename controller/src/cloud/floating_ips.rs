//! Neutron floating IPs for load-balancer VIPs: find, allocate (tagged), move, release.

use osauth::Session;
use osauth::services::NETWORK;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cloud::limit::Noted as _;

/// A floating IP.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct FloatingIp {
    pub(crate) id: String,
    /// The project it is in (`purge` refuses to work across projects).
    pub(crate) project_id: String,
    pub(crate) floating_ip_address: String,
    pub(crate) floating_network_id: String,
    pub(crate) port_id: Option<String>,
    pub(crate) description: String,
    pub(crate) tags: Vec<String>,
    /// Bumped by every change: the guard of a move.
    pub(crate) revision_number: u64,
}

/// What to allocate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct FloatingIpSpec {
    pub(crate) floating_network_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) subnet_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) floating_ip_address: Option<String>,
    pub(crate) port_id: String,
    pub(crate) description: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FloatingIpsRoot {
    floatingips: Vec<FloatingIp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FloatingIpRoot {
    floatingip: FloatingIp,
}

/// Floating IPs matching `filter` (`port_id`, `floating_ip_address`, `tags`...).
pub(crate) async fn list(
    session: &Session,
    filter: &[(&str, &str)],
) -> Result<Vec<FloatingIp>, osauth::Error> {
    let root: FloatingIpsRoot =
        session.get(NETWORK, &["floatingips"]).query(filter).fetched().await?;
    Ok(root.floatingips)
}

/// A subnet of a floating network (the `floating-subnet` match reads its name).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct NamedSubnet {
    pub(crate) id: String,
    pub(crate) name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SubnetsRoot {
    subnets: Vec<NamedSubnet>,
}

/// The subnets of `network_id`, narrowed by a Neutron tag filter (`tags-any=a,b`, …).
pub(crate) async fn subnets(
    session: &Session,
    network_id: &str,
    tag_filter: Option<(&str, &str)>,
) -> Result<Vec<NamedSubnet>, osauth::Error> {
    let mut query = vec![("network_id", network_id), ("fields", "id"), ("fields", "name")];
    query.extend(tag_filter);
    let root: SubnetsRoot = session.get(NETWORK, &["subnets"]).query(&query).fetched().await?;
    Ok(root.subnets)
}

/// Allocates one on `spec.port_id`, then tags it (Neutron takes tags only after create).
pub(crate) async fn create(
    session: &Session,
    spec: &FloatingIpSpec,
    tags: &[String],
) -> Result<FloatingIp, osauth::Error> {
    let root: FloatingIpRoot = session
        .post(NETWORK, &["floatingips"])
        .json(&json!({ "floatingip": spec }))
        .fetched()
        .await?;
    let mut fip = root.floatingip;
    if !tags.is_empty() {
        session
            .put(NETWORK, &["floatingips", &fip.id, "tags"])
            .json(&json!({ "tags": tags }))
            .sent()
            .await?;
        fip.tags = tags.to_vec();
    }
    Ok(fip)
}

/// Updates the floating IP's `fields` (`port_id`: attach, or detach with `null`;
/// `description`), guarded by `revision` when given.
pub(crate) async fn update(
    session: &Session,
    id: &str,
    fields: &serde_json::Value,
    revision: Option<u64>,
) -> Result<(), osauth::Error> {
    let body = json!({ "floatingip": fields });
    let request = session.put(NETWORK, &["floatingips", id]).json(&body);
    super::revision::guarded::<serde::de::IgnoredAny>(request, revision).await.map(drop)
}

/// Adds one tag (`PUT …/tags/{tag}`): the tags already there, anyone's, stay.
pub(crate) async fn add_tag(session: &Session, id: &str, tag: &str) -> Result<(), osauth::Error> {
    session.put(NETWORK, &["floatingips", id, "tags", tag]).sent().await.map(drop)
}

/// Releases it.
pub(crate) async fn delete(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session.delete(NETWORK, &["floatingips", id]).sent().await?;
    Ok(())
}
