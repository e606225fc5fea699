//! Octavia's objects as we read them, and the request shapes of what we ask for.

use serde::{Deserialize, Serialize};

/// A load balancer with the IDs of its children.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct LoadBalancer {
    pub(crate) id: String,
    /// The project it is in: the waits list that project's load balancers.
    pub(crate) project_id: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) vip_address: String,
    pub(crate) vip_port_id: String,
    pub(crate) vip_subnet_id: String,
    pub(crate) vip_network_id: String,
    pub(crate) provider: String,
    pub(crate) provisioning_status: String,
    pub(crate) operating_status: String,
    pub(crate) tags: Vec<String>,
    /// Moves whenever Octavia changes the load balancer or anything under it.
    pub(crate) updated_at: Option<String>,
    pub(crate) listeners: Vec<IdRef>,
    pub(crate) pools: Vec<IdRef>,
}

#[cfg(test)]
impl LoadBalancer {
    /// Load balancer `lb-1` with this name, description and tags: the marks the ownership
    /// rules read (tests).
    pub(crate) fn marked(name: &str, description: &str, tags: &[&str]) -> Self {
        LoadBalancer {
            id: "lb-1".into(),
            name: name.into(),
            description: description.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            ..LoadBalancer::default()
        }
    }
}

/// `{"id": …}` as Octavia lists children.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct IdRef {
    pub(crate) id: String,
}

/// A listener: one Service port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Listener {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) protocol: String,
    pub(crate) protocol_port: u16,
    pub(crate) default_pool_id: Option<String>,
    pub(crate) allowed_cidrs: Option<Vec<String>>,
    pub(crate) connection_limit: i64,
    pub(crate) timeout_client_data: Option<u64>,
    pub(crate) timeout_member_connect: Option<u64>,
    pub(crate) timeout_member_data: Option<u64>,
    pub(crate) timeout_tcp_inspect: Option<u64>,
    pub(crate) tags: Vec<String>,
    pub(crate) provisioning_status: String,
    /// The load balancer it is on (`[{"id": …}]`, as Octavia lists it).
    pub(crate) loadbalancers: Vec<IdRef>,
}

/// A pool: the members behind one listener.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Pool {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) protocol: String,
    pub(crate) lb_algorithm: String,
    pub(crate) healthmonitor_id: Option<String>,
    pub(crate) members: Vec<IdRef>,
    pub(crate) provisioning_status: String,
}

/// A member: one node's NodePort.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct Member {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) address: String,
    pub(crate) protocol_port: u16,
    pub(crate) subnet_id: Option<String>,
}

/// A health monitor of a pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct HealthMonitor {
    pub(crate) id: String,
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) delay: u64,
    pub(crate) timeout: u64,
    pub(crate) max_retries: u32,
    pub(crate) max_retries_down: u32,
}

/// What the controller asks for: a load balancer and its whole tree, in request shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct LoadBalancerSpec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vip_subnet_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vip_network_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vip_port_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) flavor_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) availability_zone: Option<String>,
    pub(crate) listeners: Vec<ListenerSpec>,
}

/// A listener with its default pool, in request shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ListenerSpec {
    pub(crate) name: String,
    pub(crate) protocol: String,
    pub(crate) protocol_port: u16,
    /// Empty: every source (Octavia's default); the diff compares it that way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) allowed_cidrs: Vec<String>,
    /// -1: unlimited (Octavia's default).
    pub(crate) connection_limit: i64,
    /// Milliseconds; `None`: Octavia's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_client_data: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_member_connect: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_member_data: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_tcp_inspect: Option<u64>,
    pub(crate) tags: Vec<String>,
    pub(crate) default_pool: PoolSpec,
}

/// A pool with its members and monitor, in request shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct PoolSpec {
    pub(crate) name: String,
    pub(crate) protocol: String,
    pub(crate) lb_algorithm: String,
    pub(crate) members: Vec<MemberSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) healthmonitor: Option<MonitorSpec>,
}

/// A member, in request shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct MemberSpec {
    pub(crate) address: String,
    pub(crate) protocol_port: u16,
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) subnet_id: Option<String>,
}

/// A health monitor, in request shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct MonitorSpec {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) delay: u64,
    pub(crate) timeout: u64,
    pub(crate) max_retries: u32,
    pub(crate) max_retries_down: u32,
}
