//! The load balancer a Service should have: its Octavia tree, built from the Service's ports,
//! the eligible nodes and its [`Settings`]; pure, so the diff and the create share one truth.

use super::annotations::Settings;
use super::names::{self, ServiceId};
use crate::cloud::octavia::{ListenerSpec, LoadBalancerSpec, MemberSpec, MonitorSpec, PoolSpec};

/// Nodes carrying this label never become members (Kubernetes' well-known label).
pub(crate) const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// One port of the Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Port {
    /// `TCP`, `UDP` or `SCTP`.
    pub(crate) protocol: String,
    pub(crate) port: u16,
    /// 0 until the API server allocated one.
    pub(crate) node_port: u16,
}

/// A node that may receive traffic: its name, the address members use, and its server (from
/// the providerID) whose ports hold its addresses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Backend {
    pub(crate) name: String,
    pub(crate) address: String,
    pub(crate) server_id: Option<String>,
}

/// What the node list says about one node, as the eligibility rule needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NodeView {
    pub(crate) name: String,
    pub(crate) ready: bool,
    pub(crate) deleting: bool,
    pub(crate) labels: std::collections::BTreeMap<String, String>,
    /// The node's first `InternalIP`.
    pub(crate) internal_ip: Option<String>,
    /// The server its `spec.providerID` names (none before initialization).
    pub(crate) server_id: Option<String>,
}

/// Where the VIP goes, resolved by the caller (a user's port, or a subnet / network).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Vip {
    pub(crate) port_id: Option<String>,
    pub(crate) subnet_id: Option<String>,
    pub(crate) network_id: Option<String>,
    /// A fixed VIP address (an internal LB's `spec.loadBalancerIP`).
    pub(crate) address: Option<String>,
}

/// A node any Service may have as a member: Ready, not being deleted, not excluded, with an
/// InternalIP.
fn eligible(node: &NodeView) -> bool {
    node.ready
        && !node.deleting
        && !node.labels.contains_key(EXCLUDE_LABEL)
        && node.internal_ip.is_some()
}

/// True when no node at all is [`eligible`], whatever a Service's node selector says: the view
/// on whose strength no pool is ever emptied (`hold`).
pub(crate) fn none_eligible(nodes: &[NodeView]) -> bool {
    !nodes.iter().any(eligible)
}

/// The members of every pool: the [`eligible`] nodes matching the node selector; sorted by name
/// for stable requests.
pub(crate) fn backends(nodes: &[NodeView], settings: &Settings) -> Vec<Backend> {
    let mut out: Vec<Backend> = nodes
        .iter()
        .filter(|n| eligible(n))
        .filter(|n| settings.node_selector.iter().all(|(k, v)| n.labels.get(k) == Some(v)))
        .filter_map(|n| {
            let address = n.internal_ip.clone()?;
            Some(Backend { name: n.name.clone(), address, server_id: n.server_id.clone() })
        })
        .collect();
    out.sort();
    out
}

/// The whole tree for a fully-populated create; also what the diff compares against.
pub(crate) fn load_balancer(
    service: &ServiceId<'_>,
    ports: &[Port],
    backends: &[Backend],
    source_ranges: &[String],
    settings: &Settings,
    vip: &Vip,
) -> Result<LoadBalancerSpec, String> {
    let name = service.load_balancer().to_owned();
    let mut listeners = Vec::with_capacity(ports.len());
    for (index, port) in ports.iter().enumerate() {
        listeners.push(listener(index, &name, port, backends, source_ranges, settings)?);
    }
    Ok(LoadBalancerSpec {
        description: service.description().to_owned(),
        tags: vec![name.clone(), names::OWNER_TAG.to_owned()],
        vip_port_id: vip.port_id.clone(),
        vip_subnet_id: vip.port_id.is_none().then(|| vip.subnet_id.clone()).flatten(),
        vip_network_id: vip.port_id.is_none().then(|| vip.network_id.clone()).flatten(),
        vip_address: vip.address.clone(),
        provider: Some(settings.provider.clone()).filter(|p| !p.is_empty()),
        flavor_id: settings.flavor_id.clone(),
        availability_zone: settings.availability_zone.clone(),
        listeners,
        name,
    })
}

/// One Service port's listener with its pool, members and monitor, tagged with the Service's
/// load-balancer name `lb_name` (its own, also on a shared load balancer).
pub(crate) fn listener(
    index: usize,
    lb_name: &str,
    port: &Port,
    backends: &[Backend],
    source_ranges: &[String],
    settings: &Settings,
) -> Result<ListenerSpec, String> {
    let protocol = match port.protocol.as_str() {
        "" | "TCP" => "TCP",
        "UDP" => "UDP",
        "SCTP" => "SCTP",
        other => {
            return Err(format!("port {}: protocol {other:?} is not TCP, UDP or SCTP", port.port));
        }
    };
    if port.node_port == 0 {
        return Err(format!("port {}/{protocol} has no nodePort yet", port.port));
    }
    let members = backends
        .iter()
        .map(|b| MemberSpec {
            address: b.address.clone(),
            protocol_port: port.node_port,
            name: b.name.clone(),
            subnet_id: settings.member_subnet_id.clone(),
        })
        .collect();
    let healthmonitor = settings.monitor.map(|m| MonitorSpec {
        name: names::child("monitor", index, lb_name),
        kind: monitor_type(protocol).to_owned(),
        delay: m.delay.as_secs(),
        timeout: m.timeout.as_secs(),
        max_retries: m.max_retries,
        max_retries_down: m.max_retries_down,
    });
    Ok(ListenerSpec {
        name: names::child("listener", index, lb_name),
        protocol: protocol.to_owned(),
        protocol_port: port.port,
        allowed_cidrs: allowed_cidrs(source_ranges),
        connection_limit: settings.connection_limit,
        timeout_client_data: settings.timeouts.client_data,
        timeout_member_connect: settings.timeouts.member_connect,
        timeout_member_data: settings.timeouts.member_data,
        timeout_tcp_inspect: settings.timeouts.tcp_inspect,
        tags: vec![lb_name.to_owned(), names::OWNER_TAG.to_owned()],
        default_pool: PoolSpec {
            name: names::child("pool", index, lb_name),
            protocol: settings.proxy_protocol.unwrap_or(protocol).to_owned(),
            lb_algorithm: settings.lb_method.clone(),
            members,
            healthmonitor,
        },
    })
}

/// Octavia's monitor type for a listener protocol (a UDP pool takes `UDP-CONNECT`).
fn monitor_type(protocol: &str) -> &'static str {
    match protocol {
        "UDP" => "UDP-CONNECT",
        "SCTP" => "SCTP",
        _ => "TCP",
    }
}

/// `spec.loadBalancerSourceRanges`, sorted and without duplicates; "every source" (empty, or
/// only `0.0.0.0/0` and `::/0`) is the empty list, Octavia's default.
pub(crate) fn allowed_cidrs(source_ranges: &[String]) -> Vec<String> {
    let mut cidrs: Vec<String> = source_ranges.iter().map(|r| r.trim().to_owned()).collect();
    cidrs.retain(|r| !r.is_empty());
    cidrs.sort();
    cidrs.dedup();
    if cidrs.iter().all(|c| c == "0.0.0.0/0" || c == "::/0") {
        cidrs.clear();
    }
    cidrs
}

#[cfg(test)]
mod tests;
