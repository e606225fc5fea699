//! Octavia (load-balancer v2) requests and our own serde structs: what the service controller
//! reads and writes, nothing more (`#[serde(default)]`: a field hidden by policy is not fatal).
//!
//! Octavia answers a fully-populated create (`POST /lbaas/loadbalancers` with listeners, their
//! default pools, members and health monitors in one body) with the whole tree in
//! `PENDING_CREATE`; every later change to an object of the tree needs the load balancer back in
//! `ACTIVE` first (else 409), which is why the controller plans all changes before making any.

use osauth::Session;
use osauth::services::{GenericService, VersionSelector};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `provisioning_status` of an object that can be changed now.
pub(crate) const ACTIVE: &str = "ACTIVE";
/// `provisioning_status` of an object Octavia gave up on.
pub(crate) const ERROR: &str = "ERROR";

/// A load balancer with the IDs of its children.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct LoadBalancer {
    pub(crate) id: String,
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
    pub(crate) listeners: Vec<IdRef>,
    pub(crate) pools: Vec<IdRef>,
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

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoadBalancersRoot {
    loadbalancers: Vec<LoadBalancer>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoadBalancerRoot {
    loadbalancer: LoadBalancer,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ListenersRoot {
    listeners: Vec<Listener>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PoolsRoot {
    pools: Vec<Pool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MembersRoot {
    members: Vec<Member>,
}

/// Octavia's catalog type (osauth predefines no load-balancer service).
pub(crate) const LOAD_BALANCER: GenericService =
    GenericService::new("load-balancer", VersionSelector::Major(2));

const LBAAS: &str = "lbaas";

/// The load balancers carrying every tag of `tags` (Octavia's `tags=` filter is an AND).
pub(crate) async fn load_balancers_tagged(
    session: &Session,
    tags: &[String],
) -> Result<Vec<LoadBalancer>, osauth::Error> {
    let joined = tags.join(",");
    let root: LoadBalancersRoot = session
        .get(LOAD_BALANCER, &[LBAAS, "loadbalancers"])
        .query(&[("tags", joined.as_str())])
        .fetch()
        .await?;
    Ok(root.loadbalancers)
}

/// `GET /lbaas/loadbalancers/{id}`.
pub(crate) async fn load_balancer(
    session: &Session,
    id: &str,
) -> Result<LoadBalancer, osauth::Error> {
    let root: LoadBalancerRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "loadbalancers", id]).fetch().await?;
    Ok(root.loadbalancer)
}

/// A load balancer's tree as Octavia has it now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tree {
    pub(crate) load_balancer: LoadBalancer,
    pub(crate) listeners: Vec<Listener>,
    pub(crate) pools: Vec<Pool>,
    /// Members by pool ID.
    pub(crate) members: Vec<(String, Vec<Member>)>,
    pub(crate) monitors: Vec<HealthMonitor>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HealthMonitorRoot {
    healthmonitor: HealthMonitor,
}

/// The tree of `load_balancer`: two list calls (listeners, pools), then per pool one for its
/// members and one for its monitor (Octavia lists members only per pool).
pub(crate) async fn tree(
    session: &Session,
    load_balancer: LoadBalancer,
) -> Result<Tree, osauth::Error> {
    let query = [("loadbalancer_id", load_balancer.id.as_str())];
    let listeners: ListenersRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "listeners"]).query(&query).fetch().await?;
    let pools: PoolsRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "pools"]).query(&query).fetch().await?;
    let mut members = Vec::with_capacity(pools.pools.len());
    let mut monitors = Vec::new();
    for pool in &pools.pools {
        let root: MembersRoot =
            session.get(LOAD_BALANCER, &[LBAAS, "pools", &pool.id, "members"]).fetch().await?;
        members.push((pool.id.clone(), root.members));
        if let Some(id) = &pool.healthmonitor_id {
            let root: HealthMonitorRoot =
                session.get(LOAD_BALANCER, &[LBAAS, "healthmonitors", id]).fetch().await?;
            monitors.push(root.healthmonitor);
        }
    }
    Ok(Tree {
        load_balancer,
        listeners: listeners.listeners,
        pools: pools.pools,
        members,
        monitors,
    })
}

/// The body of a fully-populated create.
pub(crate) fn create_body(spec: &LoadBalancerSpec) -> Value {
    json!({ "loadbalancer": spec })
}

/// `POST /lbaas/loadbalancers`, fully populated.
pub(crate) async fn create(
    session: &Session,
    spec: &LoadBalancerSpec,
) -> Result<LoadBalancer, osauth::Error> {
    let root: LoadBalancerRoot = session
        .post(LOAD_BALANCER, &[LBAAS, "loadbalancers"])
        .json(&create_body(spec))
        .fetch()
        .await?;
    Ok(root.loadbalancer)
}

/// `DELETE /lbaas/loadbalancers/{id}?cascade=true`.
pub(crate) async fn delete_cascade(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session
        .delete(LOAD_BALANCER, &[LBAAS, "loadbalancers", id])
        .query(&[("cascade", "true")])
        .send()
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fully_populated_create_nests_pool_members_and_monitor_under_each_listener() {
        let spec = LoadBalancerSpec {
            name: "kube_service_kubernetes_default_web".into(),
            tags: vec!["kube_service_kubernetes_default_web".into()],
            vip_subnet_id: Some("sub".into()),
            listeners: vec![ListenerSpec {
                name: "listener_0".into(),
                protocol: "TCP".into(),
                protocol_port: 80,
                connection_limit: -1,
                default_pool: PoolSpec {
                    name: "pool_0".into(),
                    protocol: "TCP".into(),
                    lb_algorithm: "ROUND_ROBIN".into(),
                    members: vec![MemberSpec {
                        address: "10.0.0.5".into(),
                        protocol_port: 30080,
                        name: "worker-0".into(),
                        subnet_id: None,
                    }],
                    healthmonitor: Some(MonitorSpec {
                        name: "monitor_0".into(),
                        kind: "TCP".into(),
                        delay: 5,
                        timeout: 3,
                        max_retries: 1,
                        max_retries_down: 3,
                    }),
                },
                ..ListenerSpec::default()
            }],
            ..LoadBalancerSpec::default()
        };
        let body = create_body(&spec);
        let listener = &body["loadbalancer"]["listeners"][0];
        assert_eq!(listener["default_pool"]["members"][0]["protocol_port"], 30080);
        assert_eq!(listener["default_pool"]["healthmonitor"]["type"], "TCP");
        assert!(listener.get("allowed_cidrs").is_none(), "empty means every source: {body}");
        assert!(body["loadbalancer"].get("vip_port_id").is_none());
    }

    #[test]
    fn a_load_balancer_decodes_with_hidden_fields_missing() {
        let lb: LoadBalancerRoot = serde_json::from_str(
            r#"{"loadbalancer":{"id":"x","provisioning_status":"PENDING_CREATE","listeners":[{"id":"l"}]}}"#,
        )
        .unwrap();
        assert_eq!(lb.loadbalancer.listeners[0].id, "l");
        assert!(lb.loadbalancer.tags.is_empty());
    }
}
