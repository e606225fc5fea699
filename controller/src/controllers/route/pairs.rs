//! The allowed address pairs that let a node's pods send from its port: its pod CIDR on the
//! Neutron port that holds the route's next hop (the node's InternalIP). Each port is written
//! whole, guarded by its revision (`If-Match`), re-read and redone when another writer came
//! first. A port with port security off needs no pair (Neutron does not filter it).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

use futures::stream::{self, StreamExt as _};
use ipnet::IpNet;

use super::Failure;
use super::plan::{Hop, NodeRoutes};
use super::reason;
use super::write::{ATTEMPTS, Class, WriteError};
use crate::cloud::routes::{AddressPair, ExtraRoute, PairPort, Routes, Support, Written};
use crate::cloud::session::chain;

/// Port writes in flight at once (each port is written whole, under its own revision).
const PORT_WRITES: usize = 8;

/// What the check of one node's pairs found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Checked {
    /// Every pod CIDR is on its port (or needs none).
    Done,
    /// It cannot be done: the condition says why.
    Failed(Failure),
    /// Neutron did not answer: nothing is known, nothing changes, it is tried again.
    Unknown(String),
}

/// A pair's network: a CIDR, or a single address as a host network.
fn pair_net(pair: &AddressPair) -> Option<IpNet> {
    let text = pair.ip_address.as_str();
    match text.parse::<IpNet>() {
        Ok(net) => Some(net.trunc()),
        Err(_) => text.parse::<IpAddr>().ok().map(IpNet::from),
    }
}

/// The ports by each fixed IP they hold.
fn by_address(ports: &[PairPort]) -> HashMap<IpAddr, Vec<usize>> {
    let mut index: HashMap<IpAddr, Vec<usize>> = HashMap::new();
    for (i, port) in ports.iter().enumerate() {
        for ip in port.fixed_ips.iter().filter_map(|f| f.ip_address.parse().ok()) {
            index.entry(ip).or_default().push(i);
        }
    }
    index
}

fn wants_pairs(port: &PairPort) -> bool {
    port.port_security_enabled != Some(false)
}

/// Makes sure each node of `verify` (indexes into `plan`, all their routes present) has its pod
/// CIDRs on its ports: one port listing per 100 next hops, a port write only where one is
/// missing.
pub(crate) async fn ensure<R: Routes>(
    cloud: &R,
    support: Support,
    plan: &[NodeRoutes],
    verify: &[usize],
) -> BTreeMap<usize, Checked> {
    let mut out: BTreeMap<usize, Checked> = BTreeMap::new();
    if verify.is_empty() {
        return out;
    }
    if !support.address_pairs {
        // No pairs in this Neutron: nothing to check, nothing filters the pods' traffic.
        return verify.iter().map(|i| (*i, Checked::Done)).collect();
    }
    let mut addresses: Vec<String> =
        verify.iter().flat_map(|i| plan[*i].hops.iter().map(|h| h.nexthop.to_string())).collect();
    addresses.sort();
    addresses.dedup();
    let ports = match cloud.ports_with_addresses(&addresses).await {
        Ok(ports) => ports,
        Err(error) => {
            let message = format!("cannot list the nodes' ports: {}", chain(&error));
            return verify.iter().map(|i| (*i, Checked::Unknown(message.clone()))).collect();
        }
    };
    let index = by_address(&ports);
    // Port → the nodes and pod CIDRs it must carry.
    let mut needs: BTreeMap<usize, Vec<(usize, IpNet)>> = BTreeMap::new();
    for &i in verify {
        let node = &plan[i];
        out.insert(i, Checked::Done);
        for hop in &node.hops {
            match pick(&ports, index.get(&hop.nexthop), node.server.as_deref()) {
                Ok(p) if wants_pairs(&ports[p]) => {
                    needs.entry(p).or_default().push((i, hop.destination))
                }
                Ok(_) => {}
                Err(message) => {
                    out.insert(i, Checked::Failed(Failure { reason: reason::NO_PORT, message }));
                }
            }
        }
    }
    // Each port is its own write (a pair list is per port): a few at a time, so that the first
    // resync of a large cluster is not one port after another.
    let writes = needs.into_iter().filter_map(|(p, wanted)| {
        let have: HashSet<IpNet> =
            ports[p].allowed_address_pairs.iter().filter_map(pair_net).collect();
        let missing: Vec<IpNet> =
            wanted.iter().map(|(_, net)| *net).filter(|n| !have.contains(n)).collect();
        (!missing.is_empty()).then(|| (ports[p].clone(), wanted, missing))
    });
    let writes: Vec<_> = writes.collect();
    let results: Vec<_> = stream::iter(writes)
        .map(|(mut port, wanted, missing)| async move {
            let result = write(cloud, support, &mut port, |pairs| {
                let present: HashSet<IpNet> = pairs.iter().filter_map(pair_net).collect();
                let add = missing.iter().filter(|n| !present.contains(n));
                let add: Vec<AddressPair> = add
                    .map(|n| AddressPair { ip_address: n.to_string(), mac_address: None })
                    .collect();
                pairs.extend(add);
            })
            .await;
            (port.id, wanted, result)
        })
        .buffered(PORT_WRITES)
        .collect()
        .await;
    for (id, wanted, result) in results {
        if let Err(error) = result {
            let message = format!("allowed address pair on port {id}: {}", error.message());
            let checked = match error.class() {
                Class::Transient => Checked::Unknown(message),
                Class::Router | Class::Content => {
                    Checked::Failed(Failure { reason: reason::PAIR_REFUSED, message })
                }
            };
            for (i, _) in &wanted {
                if !matches!(out.get(i), Some(Checked::Failed(_))) {
                    out.insert(*i, checked.clone());
                }
            }
        }
    }
    out
}

/// The node's port among those holding the address: the only one, or the one on its server.
fn pick(
    ports: &[PairPort],
    holding: Option<&Vec<usize>>,
    server: Option<&str>,
) -> Result<usize, String> {
    let holding = holding.map(Vec::as_slice).unwrap_or_default();
    match holding {
        [only] => Ok(*only),
        [] => Err("no Neutron port holds the node's InternalIP".to_owned()),
        many => {
            let own = many.iter().find(|p| server.is_some_and(|s| ports[**p].device_id == s));
            own.copied().ok_or_else(|| {
                format!("{} ports hold the node's InternalIP and none is its server's", many.len())
            })
        }
    }
}

/// Removes the pairs of the stale routes from the ports of their next hops; returns the stale
/// routes whose pairs are gone (or were never there): only those leave the router now, so a
/// pair that could not be removed is found again through its route next time.
pub(crate) async fn clean<R: Routes>(
    cloud: &R,
    support: Support,
    plan: &[NodeRoutes],
    stale: &[ExtraRoute],
) -> Vec<ExtraRoute> {
    let hops: Vec<(&ExtraRoute, Hop)> =
        stale.iter().filter_map(|r| Some((r, Hop::parse(r)?))).collect();
    if !support.address_pairs || hops.is_empty() {
        return stale.to_vec();
    }
    let mut addresses: Vec<String> = hops.iter().map(|(_, h)| h.nexthop.to_string()).collect();
    addresses.sort();
    addresses.dedup();
    let ports = match cloud.ports_with_addresses(&addresses).await {
        Ok(ports) => ports,
        Err(error) => {
            tracing::warn!(error = %chain(&error), "cannot list the ports of stale routes; they stay until the next resync");
            return Vec::new();
        }
    };
    let wanted: HashSet<Hop> = plan.iter().flat_map(|n| n.hops.iter().copied()).collect();
    let writes = ports.iter().filter(|p| wants_pairs(p)).filter_map(|port| {
        let fixed: HashSet<IpAddr> =
            port.fixed_ips.iter().filter_map(|f| f.ip_address.parse().ok()).collect();
        // A destination leaves this port only when no live route through it still needs it.
        let still = |net: &IpNet| {
            wanted.iter().any(|w| w.destination == *net && fixed.contains(&w.nexthop))
        };
        let mine: Vec<ExtraRoute> = hops
            .iter()
            .filter(|(_, h)| fixed.contains(&h.nexthop) && !still(&h.destination))
            .map(|(r, _)| (*r).clone())
            .collect();
        let gone: HashSet<IpNet> =
            hops.iter().filter(|(r, _)| mine.contains(*r)).map(|(_, h)| h.destination).collect();
        let present =
            port.allowed_address_pairs.iter().filter_map(pair_net).any(|n| gone.contains(&n));
        present.then(|| (port.clone(), mine, gone))
    });
    let writes: Vec<_> = writes.collect();
    let results: Vec<_> = stream::iter(writes)
        .map(|(mut port, mine, gone)| async move {
            let result = write(cloud, support, &mut port, |pairs| {
                pairs.retain(|pair| pair_net(pair).is_none_or(|n| !gone.contains(&n)));
            })
            .await;
            (port.id, mine, result)
        })
        .buffered(PORT_WRITES)
        .collect()
        .await;
    let mut kept: HashSet<ExtraRoute> = HashSet::new();
    for (id, mine, result) in results {
        if let Err(error) = result {
            tracing::warn!(port = %id, error = %error.message(), "cannot remove allowed address pairs; the stale routes stay until the next resync");
            kept.extend(mine);
        }
    }
    stale.iter().filter(|r| !kept.contains(r)).cloned().collect()
}

/// Writes the port's pairs as `change` makes them, guarded by its revision; after a 412 the
/// port is read again and `change` applied to what it holds then.
async fn write<R: Routes>(
    cloud: &R,
    support: Support,
    port: &mut PairPort,
    change: impl Fn(&mut Vec<AddressPair>),
) -> Result<(), WriteError> {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            *port = cloud.pair_port(&port.id).await?;
        }
        let mut pairs = port.allowed_address_pairs.clone();
        change(&mut pairs);
        if pairs == port.allowed_address_pairs {
            return Ok(());
        }
        let revision = support.if_match.then_some(port.revision_number);
        match cloud.set_address_pairs(&port.id, &pairs, revision).await? {
            Written::Done(updated) => {
                *port = updated;
                return Ok(());
            }
            Written::Stale => {
                tracing::debug!(port = %port.id, attempt, "port changed meanwhile; read again");
            }
        }
    }
    Err(WriteError::Busy(format!("port {}", port.id)))
}
