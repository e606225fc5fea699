//! The members' addresses on `member-subnet-id`: each node's fixed IP on that subnet, read from
//! the node's own Neutron port (the port whose device is the server its providerID names), not
//! from the Node's addresses. On nodes with ports on two networks the InternalIP may be on the
//! other one, and two networks may use the same addresses: upstream's CCM then puts members on
//! the wrong network, or its load balancer in ERROR. A node without a port on the subnet (or
//! without a providerID yet) is not a member; the caller tells the Service which.
//!
//! One port list per subnet answers every Service's reconcile for [`FRESH`] (so a resync of all
//! Services costs one list, not one per node or per Service); a node whose server the list was
//! not asked about yet (one that joined since) has it read again once it is older than
//! [`RECHECK`], so that a new node is not left out until the list expires, while a node known to
//! have no port there costs nothing more.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use super::desired::Backend;
use super::{Error, Result};
use crate::cloud::load_balancing::LoadBalancing;
use crate::cloud::neutron::Port;

/// How long one list answers for its subnet.
const FRESH: Duration = Duration::from_secs(10);
/// How old a list must be to be read again for a server it does not name.
const RECHECK: Duration = Duration::from_secs(1);

/// The fixed IPs on a subnet, per server, as last listed.
#[derive(Debug, Default)]
pub(crate) struct MemberPorts(tokio::sync::Mutex<HashMap<String, Listed>>);

#[derive(Debug)]
struct Listed {
    at: Instant,
    by_server: BTreeMap<String, Vec<String>>,
    /// Servers asked about that the list does not name (no port on the subnet).
    without: BTreeSet<String>,
}

/// The members after the lookup, and the nodes left out (sorted names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub(crate) backends: Vec<Backend>,
    pub(crate) left_out: Vec<String>,
}

impl MemberPorts {
    /// `backends` with each address replaced by its node's fixed IP on `subnet`; the nodes with
    /// none left out. One list at a time per controller: concurrent reconciles share it.
    pub(crate) async fn resolve<L: LoadBalancing>(
        &self,
        cloud: &L,
        subnet: &str,
        backends: Vec<Backend>,
    ) -> Result<Resolved> {
        let mut lists = self.0.lock().await;
        let servers = backends.iter().filter_map(|b| b.server_id.as_deref());
        let usable = lists.get(subnet).is_some_and(|listed| {
            let age = listed.at.elapsed();
            let known = |s: &str| listed.by_server.contains_key(s) || listed.without.contains(s);
            age < FRESH && (age < RECHECK || servers.clone().all(known))
        });
        if !usable {
            let doing = format!("listing the ports on member subnet {subnet}");
            let ports = cloud.ports_on_subnet(subnet).await.map_err(Error::cloud(doing))?;
            let listed = Listed {
                at: Instant::now(),
                by_server: by_server(&ports, subnet),
                without: BTreeSet::new(),
            };
            lists.insert(subnet.to_owned(), listed);
        }
        let listed = lists.get_mut(subnet).expect("listed above");
        let missing = servers.filter(|s| !listed.by_server.contains_key(*s)).map(str::to_owned);
        listed.without.extend(missing);
        Ok(resolve(&listed.by_server, backends))
    }
}

/// Each server's fixed IPs on `subnet`, sorted.
fn by_server(ports: &[Port], subnet: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for port in ports.iter().filter(|p| !p.device_id.is_empty()) {
        let on = port.fixed_ips.iter().filter(|f| f.subnet_id == subnet);
        out.entry(port.device_id.clone()).or_default().extend(on.map(|f| f.ip_address.clone()));
    }
    for addresses in out.values_mut() {
        addresses.sort();
    }
    out.retain(|_, addresses| !addresses.is_empty());
    out
}

/// Pure: the InternalIP when it is on the subnet, else the server's first fixed IP there.
fn resolve(by_server: &BTreeMap<String, Vec<String>>, backends: Vec<Backend>) -> Resolved {
    let mut out = Resolved::default();
    for backend in backends {
        let on_subnet = backend.server_id.as_deref().and_then(|s| by_server.get(s));
        match on_subnet
            .and_then(|ips| ips.iter().find(|ip| **ip == backend.address).or(ips.first()))
        {
            Some(address) => out.backends.push(Backend { address: address.clone(), ..backend }),
            None => out.left_out.push(backend.name),
        }
    }
    out.backends.sort();
    out.left_out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::neutron::FixedIp;

    fn port(server: &str, fixed: &[(&str, &str)]) -> Port {
        let fixed_ips = fixed
            .iter()
            .map(|(subnet, ip)| FixedIp { subnet_id: (*subnet).into(), ip_address: (*ip).into() })
            .collect();
        Port { device_id: server.into(), fixed_ips, ..Port::default() }
    }

    fn backend(name: &str, server: Option<&str>, address: &str) -> Backend {
        Backend { name: name.into(), server_id: server.map(Into::into), address: address.into() }
    }

    #[test]
    fn members_take_the_nodes_own_address_on_the_member_subnet() {
        // Two networks with the same range: node b's address on the member subnet is node
        // a's InternalIP on the other one.
        let ports = [
            port("srv-a", &[("front", "10.0.0.201")]),
            port("srv-a", &[("back", "10.0.0.50")]),
            port("srv-b", &[("front", "10.0.0.202")]),
            port("srv-b", &[("back", "10.0.0.201")]),
            port("srv-c", &[("front", "10.0.0.203")]),
            port("", &[("back", "10.0.0.99")]),
        ];
        let listed = by_server(&ports, "back");
        let backends = vec![
            backend("a", Some("srv-a"), "10.0.0.201"),
            backend("b", Some("srv-b"), "10.0.0.202"),
            backend("c", Some("srv-c"), "10.0.0.203"),
            backend("d", None, "10.0.0.204"),
        ];
        let got = resolve(&listed, backends);
        assert_eq!(
            got.backends,
            [backend("a", Some("srv-a"), "10.0.0.50"), backend("b", Some("srv-b"), "10.0.0.201")]
        );
        assert_eq!(got.left_out, ["c", "d"], "no port on the subnet, no providerID");
    }

    #[test]
    fn an_internal_ip_on_the_member_subnet_is_kept_among_several() {
        let listed =
            by_server(&[port("srv-a", &[("back", "10.1.0.9"), ("back", "10.1.0.5")])], "back");
        let got = resolve(&listed, vec![backend("a", Some("srv-a"), "10.1.0.9")]);
        assert_eq!(got.backends[0].address, "10.1.0.9");
        let got = resolve(&listed, vec![backend("a", Some("srv-a"), "192.0.2.1")]);
        assert_eq!(got.backends[0].address, "10.1.0.5", "else the first, sorted");
    }
}
