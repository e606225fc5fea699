//! Nova requests and our own serde structs (`#[serde(default)]`: a field hidden by policy is not fatal).

use std::collections::BTreeMap;

use osauth::services::COMPUTE;
use osauth::{ApiVersion, Session};
use serde::Deserialize;

use crate::cloud::limit::Noted as _;

/// The microversion that embeds the flavor (with `original_name`) in the server body.
pub(crate) const MICROVERSION: ApiVersion = ApiVersion(2, 47);

/// Page size of the server list: Nova's default `[api] max_limit` caps any larger page.
pub(crate) const PAGE: usize = 1000;

/// A Nova server, as much as a CCM reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Server {
    /// UUID.
    pub id: String,
    /// Name.
    pub name: String,
    /// `ACTIVE`, `SHUTOFF`, …
    pub status: String,
    /// Availability zone.
    #[serde(rename = "OS-EXT-AZ:availability_zone")]
    pub availability_zone: String,
    /// The flavor (embedded at ≥ 2.47).
    pub flavor: Flavor,
    /// Addresses by network name.
    pub addresses: BTreeMap<String, Vec<ServerAddress>>,
    /// `accessIPv4`.
    #[serde(rename = "accessIPv4")]
    pub access_ipv4: String,
    /// `accessIPv6`.
    #[serde(rename = "accessIPv6")]
    pub access_ipv6: String,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
    /// Last change, Nova's clock (`2026-11-25T12:17:08Z`): the cursor of `changes-since`.
    pub updated: String,
}

/// A server as a listing shows it to the lifecycle check: what it decides on, nothing more.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ServerState {
    /// UUID.
    pub id: String,
    /// Name.
    pub name: String,
    /// `ACTIVE`, `SHUTOFF`, …
    pub status: String,
}

/// A listed server: its ID is the next page's marker.
pub(crate) trait Listed {
    /// The server's UUID.
    fn id(&self) -> &str;
}

impl Listed for Server {
    fn id(&self) -> &str {
        &self.id
    }
}

impl Listed for ServerState {
    fn id(&self) -> &str {
        &self.id
    }
}

/// The server's flavor: `original_name` at ≥ 2.47, `id` before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Flavor {
    /// Flavor ID (old microversions only).
    pub id: Option<String>,
    /// Flavor name (≥ 2.47).
    pub original_name: Option<String>,
}

/// One entry of `addresses`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ServerAddress {
    /// The IP.
    pub addr: String,
    /// 4 or 6.
    pub version: u8,
    /// `fixed` or `floating`.
    #[serde(rename = "OS-EXT-IPS:type")]
    pub kind: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ServerRoot {
    server: Server,
}

#[derive(Debug, Deserialize)]
struct ServersRoot<T> {
    #[serde(default = "Vec::new")]
    servers: Vec<T>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FlavorRoot {
    flavor: FlavorBody,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FlavorBody {
    name: String,
}

/// `GET /servers/{id}`.
pub(crate) async fn get_server(session: &Session, id: &str) -> Result<Server, osauth::Error> {
    let root: ServerRoot =
        session.get(COMPUTE, &["servers", id]).api_version(MICROVERSION).fetched().await?;
    Ok(root.server)
}

/// `GET /servers/detail?name=^<name>$`, then an exact-name filter (Nova's filter is a regex).
pub(crate) async fn find_servers_by_name(
    session: &Session,
    name: &str,
) -> Result<Vec<Server>, osauth::Error> {
    let pattern = format!("^{}$", regex_escape(name));
    let root: ServersRoot<Server> = session
        .get(COMPUTE, &["servers", "detail"])
        .api_version(MICROVERSION)
        .query(&[("name", pattern.as_str())])
        .fetched()
        .await?;
    Ok(root.servers.into_iter().filter(|s| s.name == name).collect())
}

/// One page of `GET /servers/detail` (at most [`PAGE`] servers) after `marker`, with `filters`
/// such as `changes-since`; the caller asks for the next page while a page is full.
pub(crate) async fn servers_page<T: serde::de::DeserializeOwned + Send>(
    session: &Session,
    filters: &[(&str, String)],
    marker: Option<&str>,
) -> Result<Vec<T>, osauth::Error> {
    let limit = PAGE.to_string();
    let mut query: Vec<(&str, &str)> = vec![("limit", &limit)];
    query.extend(filters.iter().map(|(k, v)| (*k, v.as_str())));
    if let Some(marker) = marker {
        query.push(("marker", marker));
    }
    let root: ServersRoot<T> = session
        .get(COMPUTE, &["servers", "detail"])
        .api_version(MICROVERSION)
        .query(&query)
        .fetched()
        .await?;
    Ok(root.servers)
}

/// `GET /flavors/{id}` → name (only for Nova older than 2.47).
pub(crate) async fn flavor_name(session: &Session, id: &str) -> Result<String, osauth::Error> {
    let root: FlavorRoot = session.get(COMPUTE, &["flavors", id]).fetched().await?;
    Ok(root.flavor.name)
}

/// Escapes regex metacharacters (Nova matches `name` as a regular expression).
pub(crate) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_body_with_embedded_flavor_decodes() {
        let json = r#"{"server":{"id":"abc","name":"vm1","status":"ACTIVE","OS-EXT-AZ:availability_zone":"nova",
          "flavor":{"original_name":"m1.small","vcpus":1},"accessIPv4":"","accessIPv6":"",
          "addresses":{"private":[{"addr":"10.0.0.4","version":4,"OS-EXT-IPS:type":"fixed"}]},"tags":[]}}"#;
        let root: ServerRoot = serde_json::from_str(json).unwrap();
        assert_eq!(root.server.flavor.original_name.as_deref(), Some("m1.small"));
        assert_eq!(root.server.addresses["private"][0].kind, "fixed");
    }

    #[test]
    fn missing_fields_do_not_fail_the_decode() {
        let root: ServerRoot = serde_json::from_str(r#"{"server":{"id":"x"}}"#).unwrap();
        assert_eq!(root.server.id, "x");
    }

    #[test]
    fn names_are_regex_escaped() {
        assert_eq!(regex_escape("a.b-c"), "a\\.b\\-c");
    }
}
