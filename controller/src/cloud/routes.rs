//! Neutron for the route controller: a router's extra routes (Neutron's atomic
//! `add_extraroutes` / `remove_extraroutes`, or the whole list written back under the router's
//! revision) and the allowed address pairs of the nodes' ports (written under the port's
//! revision), with the extensions that decide which calls exist.

use std::future::Future;

use osauth::Session;
use osauth::services::NETWORK;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cloud::limit::Noted as _;

use super::neutron::FixedIp;
pub use super::revision::Written;
use super::revision::{guarded, stale_to_written};
use super::{OpenStack, Result};

/// Neutron's `fixed_ips` filters per port listing (as the security groups' listing): keeps the
/// URL far below any proxy's limit.
pub const ADDRESSES_PER_LISTING: usize = 100;

/// What this Neutron offers the route controller (`GET /extensions`, read once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// `extraroute`: routers have extra routes at all.
    pub extraroute: bool,
    /// `extraroute-atomic`: `add_extraroutes` / `remove_extraroutes`.
    pub atomic: bool,
    /// `allowed-address-pairs`.
    pub address_pairs: bool,
    /// `revision-if-match`: writes guarded by `If-Match: revision_number=N`.
    pub if_match: bool,
}

impl Support {
    /// Everything the test stack has.
    #[cfg(test)]
    pub const ALL: Support =
        Support { extraroute: true, atomic: true, address_pairs: true, if_match: true };

    fn from_aliases<'a>(aliases: impl IntoIterator<Item = &'a str>) -> Support {
        let mut support =
            Support { extraroute: false, atomic: false, address_pairs: false, if_match: false };
        for alias in aliases {
            match alias {
                "extraroute" => support.extraroute = true,
                "extraroute-atomic" => support.atomic = true,
                "allowed-address-pairs" => support.address_pairs = true,
                "revision-if-match" => support.if_match = true,
                _ => {}
            }
        }
        support
    }
}

/// One extra route of a router, as Neutron writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ExtraRoute {
    /// The destination CIDR.
    pub destination: String,
    /// The next hop's address.
    pub nexthop: String,
}

/// A router's extra routes and its revision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Router {
    /// Router ID.
    pub id: String,
    /// Its extra routes.
    pub routes: Vec<ExtraRoute>,
    /// Bumped by every change (`If-Match: revision_number=N`).
    pub revision_number: u64,
}

/// One allowed address pair of a port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressPair {
    /// An address or a CIDR.
    pub ip_address: String,
    /// The MAC; Neutron fills in the port's own when a pair is written without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

/// A port as the route controller reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PairPort {
    /// Port ID.
    pub id: String,
    /// The server it is bound to.
    pub device_id: String,
    /// Its fixed IPs.
    pub fixed_ips: Vec<FixedIp>,
    /// Its allowed address pairs.
    pub allowed_address_pairs: Vec<AddressPair>,
    /// `false`: Neutron refuses pairs on it, and needs none (no anti-spoofing).
    pub port_security_enabled: Option<bool>,
    /// Bumped by every change.
    pub revision_number: u64,
}

/// What the route controller needs from Neutron.
pub trait Routes: Send + Sync + 'static {
    /// The extensions the route controller depends on.
    fn route_support(&self) -> impl Future<Output = Result<Support>> + Send;
    /// The router's extra routes and revision.
    fn router(&self, id: &str) -> impl Future<Output = Result<Router>> + Send;
    /// Adds routes in one atomic call (`extraroute-atomic`); present ones are kept.
    fn add_routes(
        &self,
        router: &str,
        routes: &[ExtraRoute],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Removes routes in one atomic call; absent ones are ignored.
    fn remove_routes(
        &self,
        router: &str,
        routes: &[ExtraRoute],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Writes the router's whole route list, guarded by `revision` when given (the fallback
    /// without `extraroute-atomic`).
    fn replace_routes(
        &self,
        router: &str,
        routes: &[ExtraRoute],
        revision: Option<u64>,
    ) -> impl Future<Output = Result<Written<Router>>> + Send;
    /// The ports holding any of `addresses` as a fixed IP, a request per
    /// [`ADDRESSES_PER_LISTING`] of them (none for an empty list).
    fn ports_with_addresses(
        &self,
        addresses: &[String],
    ) -> impl Future<Output = Result<Vec<PairPort>>> + Send;
    /// One port (after a write found it changed).
    fn pair_port(&self, id: &str) -> impl Future<Output = Result<PairPort>> + Send;
    /// Writes a port's whole pair list, guarded by `revision` when given.
    fn set_address_pairs(
        &self,
        port: &str,
        pairs: &[AddressPair],
        revision: Option<u64>,
    ) -> impl Future<Output = Result<Written<PairPort>>> + Send;
}

#[derive(Deserialize)]
struct ExtensionsRoot {
    extensions: Vec<Extension>,
}

#[derive(Deserialize)]
struct Extension {
    alias: String,
}

#[derive(Deserialize)]
struct RouterRoot {
    router: Router,
}

#[derive(Deserialize)]
struct PortsRoot {
    ports: Vec<PairPort>,
}

#[derive(Deserialize)]
struct PortRoot {
    port: PairPort,
}

/// The router fields the controller reads.
const ROUTER_FIELDS: [(&str, &str); 3] =
    [("fields", "id"), ("fields", "routes"), ("fields", "revision_number")];

/// The port fields the controller reads.
const PORT_FIELDS: [(&str, &str); 6] = [
    ("fields", "id"),
    ("fields", "device_id"),
    ("fields", "fixed_ips"),
    ("fields", "allowed_address_pairs"),
    ("fields", "port_security_enabled"),
    ("fields", "revision_number"),
];

/// `PUT /routers/{id}/{action}` with these routes.
async fn extraroutes(
    session: &Session,
    router: &str,
    action: &str,
    routes: &[ExtraRoute],
) -> Result<(), osauth::Error> {
    let body = json!({"router": {"routes": routes}});
    session.put(NETWORK, &["routers", router, action]).json(&body).sent().await.map(drop)
}

impl Routes for OpenStack {
    async fn route_support(&self) -> Result<Support> {
        let root: ExtensionsRoot = self
            .call("network", "extension_list", "Neutron extensions", |s| async move {
                s.get(NETWORK, &["extensions"]).fetched().await
            })
            .await?;
        Ok(Support::from_aliases(root.extensions.iter().map(|e| e.alias.as_str())))
    }

    async fn router(&self, id: &str) -> Result<Router> {
        let what = format!("router {id}");
        let root: RouterRoot = self
            .call("network", "router_get", &what, |s| async move {
                s.get(NETWORK, &["routers", id]).query(&ROUTER_FIELDS).fetched().await
            })
            .await?;
        Ok(root.router)
    }

    async fn add_routes(&self, router: &str, routes: &[ExtraRoute]) -> Result<()> {
        let what = format!("router {router}");
        self.call("network", "router_add_extraroutes", &what, |s| async move {
            extraroutes(&s, router, "add_extraroutes", routes).await
        })
        .await
    }

    async fn remove_routes(&self, router: &str, routes: &[ExtraRoute]) -> Result<()> {
        let what = format!("router {router}");
        self.call("network", "router_remove_extraroutes", &what, |s| async move {
            extraroutes(&s, router, "remove_extraroutes", routes).await
        })
        .await
    }

    async fn replace_routes(
        &self,
        router: &str,
        routes: &[ExtraRoute],
        revision: Option<u64>,
    ) -> Result<Written<Router>> {
        let what = format!("router {router}");
        let result = self
            .call("network", "router_update", &what, |s| async move {
                let body = json!({"router": {"routes": routes}});
                let request = s.put(NETWORK, &["routers", router]).json(&body);
                guarded::<RouterRoot>(request, revision).await.map(|root| root.router)
            })
            .await;
        stale_to_written(result)
    }

    async fn ports_with_addresses(&self, addresses: &[String]) -> Result<Vec<PairPort>> {
        let mut found = Vec::new();
        for chunk in addresses.chunks(ADDRESSES_PER_LISTING) {
            let what = format!("the ports of {} addresses", chunk.len());
            let filter: Vec<String> = chunk.iter().map(|a| format!("ip_address={a}")).collect();
            let part: PortsRoot = self
                .call("network", "port_list", &what, |s| {
                    let filter = &filter;
                    async move {
                        let mut query: Vec<(&str, &str)> =
                            filter.iter().map(|f| ("fixed_ips", f.as_str())).collect();
                        query.extend(PORT_FIELDS);
                        s.get(NETWORK, &["ports"]).query(&query).fetched().await
                    }
                })
                .await?;
            found.extend(part.ports);
        }
        Ok(found)
    }

    async fn pair_port(&self, id: &str) -> Result<PairPort> {
        super::revision::port(self, id, &PORT_FIELDS).await
    }

    async fn set_address_pairs(
        &self,
        port: &str,
        pairs: &[AddressPair],
        revision: Option<u64>,
    ) -> Result<Written<PairPort>> {
        let what = format!("port {port}");
        let result = self
            .call("network", "port_update", &what, |s| async move {
                let body = json!({"port": {"allowed_address_pairs": pairs}});
                let request = s.put(NETWORK, &["ports", port]).json(&body);
                guarded::<PortRoot>(request, revision).await.map(|root| root.port)
            })
            .await;
        stale_to_written(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_reads_the_four_aliases_and_nothing_else() {
        let got = Support::from_aliases(["router", "extraroute", "revision-if-match", "x"]);
        let want =
            Support { extraroute: true, atomic: false, address_pairs: false, if_match: true };
        assert_eq!(got, want);
        let all = ["extraroute", "extraroute-atomic", "allowed-address-pairs", "revision-if-match"];
        assert_eq!(Support::from_aliases(all), Support::ALL);
    }

    #[test]
    fn a_pair_without_mac_is_written_without_one_and_neutrons_answer_decodes() {
        let pair = AddressPair { ip_address: "10.244.1.0/24".into(), mac_address: None };
        assert_eq!(serde_json::to_value(&pair).unwrap(), json!({"ip_address": "10.244.1.0/24"}));
        let port: PairPort = serde_json::from_value(json!({
            "id": "p", "device_id": "s", "revision_number": 7, "port_security_enabled": true,
            "fixed_ips": [{"subnet_id": "x", "ip_address": "10.0.0.5"}],
            "allowed_address_pairs": [{"ip_address": "10.244.1.0/24", "mac_address": "fa:16:3e:00:00:01"}],
        }))
        .unwrap();
        assert_eq!(port.revision_number, 7);
        assert_eq!(port.allowed_address_pairs[0].mac_address.as_deref(), Some("fa:16:3e:00:00:01"));
    }
}
