//! Pure: what each node wants on the router (its pod CIDRs through its InternalIP of the same
//! family), and how the router's routes differ from that. Only routes inside the cluster CIDRs
//! are ever stale; the routes of a live node whose next hop is unknown right now are kept.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use kube::ResourceExt;

use super::reason;
use crate::cloud::routes::ExtraRoute;
use crate::controllers::projection::{CachedNode, NETWORK_UNAVAILABLE};
use crate::controllers::provider_id;

/// A route as compared: the canonical destination network and the next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hop {
    /// The pod CIDR.
    pub destination: IpNet,
    /// The node's InternalIP of the same family.
    pub nexthop: IpAddr,
}

impl Hop {
    /// The route as Neutron is sent it (canonical text).
    pub(crate) fn wire(&self) -> ExtraRoute {
        ExtraRoute { destination: self.destination.to_string(), nexthop: self.nexthop.to_string() }
    }

    /// A router's route, or `None` when either half does not parse (never touched then).
    pub(crate) fn parse(route: &ExtraRoute) -> Option<Hop> {
        let destination: IpNet = route.destination.parse().ok()?;
        Some(Hop { destination: destination.trunc(), nexthop: route.nexthop.parse().ok()? })
    }
}

/// Why a node's routes cannot be made: the `NetworkUnavailable=True` reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

/// One node with pod CIDRs as the route controller sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeRoutes {
    pub(crate) node: Arc<CachedNode>,
    pub(crate) name: String,
    /// The server ID from `spec.providerID`: picks the node's port when an address is on two.
    pub(crate) server: Option<String>,
    /// The routes it wants.
    pub(crate) hops: Vec<Hop>,
    /// Pod CIDRs without a next hop now: routes to them are kept, not removed.
    pub(crate) unrouted: Vec<IpNet>,
    /// Set when a pod CIDR cannot be routed at all.
    pub(crate) problem: Option<Problem>,
    /// Name, server and hops hashed: a node whose routes and pairs were confirmed at this
    /// fingerprint is not read again until the periodic check.
    pub(crate) fingerprint: u64,
}

impl NodeRoutes {
    /// The current `NetworkUnavailable` status and reason.
    pub(crate) fn condition(&self) -> Option<(&str, &str)> {
        let conditions = self.node.status.as_ref().and_then(|s| s.conditions.as_deref());
        let found = conditions.unwrap_or_default().iter().find(|c| c.type_ == NETWORK_UNAVAILABLE);
        found.map(|c| (c.status.as_str(), c.reason.as_str()))
    }
}

/// The nodes with pod CIDRs (the others are left alone, as upstream does), each with its routes.
pub(crate) fn nodes(nodes: &[Arc<CachedNode>], cluster: &[IpNet]) -> Vec<NodeRoutes> {
    nodes.iter().filter_map(|node| node_routes(node, cluster)).collect()
}

fn node_routes(node: &Arc<CachedNode>, cluster: &[IpNet]) -> Option<NodeRoutes> {
    let spec = node.spec.as_ref()?;
    let pod_cidrs = spec.pod_cidrs.as_deref().filter(|c| !c.is_empty())?;
    let name = node.name_any();
    let server = spec
        .provider_id
        .as_deref()
        .filter(|p| !p.is_empty())
        .and_then(|p| provider_id::parse(p, None).ok());
    let internal: Vec<IpAddr> = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|a| a.type_ == "InternalIP")
        .filter_map(|a| a.address.parse().ok())
        .collect();
    let (mut hops, mut unrouted, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    for text in pod_cidrs {
        let destination = match text.parse::<IpNet>() {
            Ok(cidr) => cidr.trunc(),
            Err(_) => {
                problems.push((reason::NO_ROUTE, format!("pod CIDR {text:?} is not a CIDR")));
                continue;
            }
        };
        if !cluster.is_empty() && !cluster.iter().any(|c| c.contains(&destination)) {
            let message = format!(
                "pod CIDR {destination} lies outside --cluster-cidr {}: no route is made \
                 (it could never be removed)",
                join(cluster)
            );
            problems.push((reason::OUTSIDE_CLUSTER, message));
            continue;
        }
        let family = |ip: &&IpAddr| ip.is_ipv4() == matches!(destination, IpNet::V4(_));
        match internal.iter().find(family) {
            Some(&nexthop) => hops.push(Hop { destination, nexthop }),
            None => {
                let v = if matches!(destination, IpNet::V4(_)) { "IPv4" } else { "IPv6" };
                let message = format!(
                    "no {v} InternalIP in status.addresses to route pod CIDR {destination}"
                );
                problems.push((reason::NO_INTERNAL_IP, message));
                unrouted.push(destination);
            }
        }
    }
    hops.sort();
    hops.dedup();
    let problem = (!problems.is_empty()).then(|| Problem {
        reason: problems[0].0,
        message: problems.iter().map(|p| p.1.as_str()).collect::<Vec<_>>().join("; "),
    });
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&name, &server, &hops).hash(&mut hasher);
    let fingerprint = hasher.finish();
    Some(NodeRoutes { node: node.clone(), name, server, hops, unrouted, problem, fingerprint })
}

fn join(cidrs: &[IpNet]) -> String {
    cidrs.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// How the router differs from what the nodes want.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Diff {
    /// Routes to add: the index of the node in the plan, and the route.
    pub(crate) missing: Vec<(usize, Hop)>,
    /// Routes to remove, as the router holds them (its own text).
    pub(crate) stale: Vec<ExtraRoute>,
}

/// Compares the router's routes with the plan. `skip` holds the plan indexes of the nodes
/// backing off after failures: their missing routes wait (their present ones are kept).
pub(crate) fn diff(
    plan: &[NodeRoutes],
    present: &[ExtraRoute],
    cluster: &[IpNet],
    skip: &HashSet<usize>,
) -> Diff {
    let have: HashSet<Hop> = present.iter().filter_map(Hop::parse).collect();
    let wanted: HashSet<Hop> = plan.iter().flat_map(|n| n.hops.iter().copied()).collect();
    let kept: HashSet<IpNet> = plan.iter().flat_map(|n| n.unrouted.iter().copied()).collect();
    let missing = plan
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .flat_map(|(i, n)| n.hops.iter().filter(|h| !have.contains(h)).map(move |h| (i, *h)))
        .collect();
    // Never without cluster CIDRs; never outside them, whoever made the route.
    let stale = present
        .iter()
        .filter(|route| {
            Hop::parse(route).is_some_and(|hop| {
                cluster.iter().any(|c| c.contains(&hop.destination))
                    && !wanted.contains(&hop)
                    && !kept.contains(&hop.destination)
            })
        })
        .cloned()
        .collect();
    Diff { missing, stale }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use testkit::kube::NodeFixture;

    use super::*;

    fn node(name: &str, pod_cidrs: &[&str], addresses: &[&str]) -> Arc<CachedNode> {
        let mut value =
            NodeFixture::initialized(name).provider_id(&format!("openstack:///id-{name}")).build();
        value["spec"]["podCIDRs"] = json!(pod_cidrs);
        let list: Vec<_> =
            addresses.iter().map(|a| json!({"type": "InternalIP", "address": a})).collect();
        value["status"]["addresses"] = json!(list);
        Arc::new(serde_json::from_value(value).unwrap())
    }

    fn net(text: &str) -> IpNet {
        text.parse().unwrap()
    }

    fn route(destination: &str, nexthop: &str) -> ExtraRoute {
        ExtraRoute { destination: destination.into(), nexthop: nexthop.into() }
    }

    #[test]
    fn each_pod_cidr_goes_through_the_internal_ip_of_its_family() {
        let dual = node("a", &["10.244.1.0/24", "fd00:10:244:1::/64"], &["fd00::5", "10.0.0.5"]);
        let plan = nodes(&[dual], &[net("10.244.0.0/16"), net("fd00:10:244::/56")]);
        let hops: Vec<ExtraRoute> = plan[0].hops.iter().map(Hop::wire).collect();
        assert_eq!(
            hops,
            [route("10.244.1.0/24", "10.0.0.5"), route("fd00:10:244:1::/64", "fd00::5")]
        );
        assert_eq!(plan[0].server.as_deref(), Some("id-a"));
        assert!(plan[0].problem.is_none());
    }

    #[test]
    fn a_node_without_pod_cidrs_is_left_alone_and_one_without_an_address_is_a_problem() {
        let plan = nodes(
            &[node("none", &[], &["10.0.0.5"]), node("v6", &["fd00:10:244:1::/64"], &["10.0.0.6"])],
            &[],
        );
        assert_eq!(plan.len(), 1);
        let problem = plan[0].problem.as_ref().unwrap();
        assert_eq!(problem.reason, reason::NO_INTERNAL_IP);
        assert!(problem.message.contains("no IPv6 InternalIP"), "{}", problem.message);
        assert_eq!(plan[0].unrouted, [net("fd00:10:244:1::/64")]);
    }

    #[test]
    fn a_pod_cidr_outside_the_cluster_cidrs_gets_no_route() {
        let plan = nodes(&[node("a", &["192.168.7.0/24"], &["10.0.0.5"])], &[net("10.244.0.0/16")]);
        assert!(plan[0].hops.is_empty());
        assert_eq!(plan[0].problem.as_ref().unwrap().reason, reason::OUTSIDE_CLUSTER);
    }

    #[test]
    fn only_routes_inside_the_cluster_cidrs_that_no_node_wants_are_stale() {
        let cluster = [net("10.244.0.0/16")];
        let plan = nodes(
            &[node("a", &["10.244.1.0/24"], &["10.0.0.5"]), node("b", &["10.244.2.0/24"], &[])],
            &cluster,
        );
        let present = [
            route("10.244.1.0/24", "10.0.0.5"),  // a's: kept
            route("10.244.9.0/24", "10.0.0.9"),  // no node: stale
            route("10.244.1.0/24", "10.0.0.99"), // a's old next hop: stale
            route("10.244.2.0/24", "10.0.0.6"),  // b has no address now: kept
            route("192.168.0.0/24", "10.0.0.7"), // outside: never touched
            route("10.244.0.0/15", "10.0.0.8"),  // wider than the cluster CIDR: not inside
            route("garbage", "10.0.0.8"),        // unparsable: never touched
        ];
        let diff = diff(&plan, &present, &cluster, &HashSet::new());
        assert_eq!(diff.stale, [present[1].clone(), present[2].clone()]);
        assert!(diff.missing.is_empty(), "{diff:?}");
        // Without cluster CIDRs nothing is ever stale.
        assert!(super::diff(&plan, &present, &[], &HashSet::new()).stale.is_empty());
    }

    #[test]
    fn missing_routes_wait_while_their_node_backs_off() {
        let cluster = [net("10.244.0.0/16")];
        let plan = nodes(
            &[
                node("a", &["10.244.1.0/24"], &["10.0.0.5"]),
                node("b", &["10.244.2.0/24"], &["10.0.0.6"]),
            ],
            &cluster,
        );
        let diff = diff(&plan, &[], &cluster, &HashSet::from([0]));
        assert_eq!(diff.missing.len(), 1);
        assert_eq!(diff.missing[0].0, 1);
        assert_eq!(diff.missing[0].1.wire(), route("10.244.2.0/24", "10.0.0.6"));
    }

    #[test]
    fn neutrons_own_spelling_of_a_route_matches_the_canonical_one() {
        let written = Hop::parse(&route("fd00:10:244:0001::/64", "FD00::5")).unwrap();
        let wanted =
            Hop { destination: net("fd00:10:244:1::/64"), nexthop: "fd00::5".parse().unwrap() };
        assert_eq!(written, wanted);
        assert_eq!(wanted.wire(), route("fd00:10:244:1::/64", "fd00::5"));
    }
}
