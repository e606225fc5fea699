//! Octavia (load-balancer v2) requests and our own serde structs: what the service controller
//! reads and writes, nothing more (`#[serde(default)]`: a field hidden by policy is not fatal).
//!
//! Octavia answers a fully-populated create (`POST /lbaas/loadbalancers` with listeners, their
//! default pools, members and health monitors in one body) with the whole tree in
//! `PENDING_CREATE`; every later change to an object of the tree needs the load balancer back in
//! `ACTIVE` first (else 409), which is why the controller plans all changes before making any.

use osauth::Session;
use osauth::services::{GenericService, VersionSelector};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cloud::limit::Noted as _;

mod change;
pub(crate) mod model;

pub(crate) use change::{Change, apply};
pub(crate) use model::{
    HealthMonitor, Listener, ListenerSpec, LoadBalancer, LoadBalancerSpec, Member, MemberSpec,
    MonitorSpec, Pool, PoolSpec,
};

/// `provisioning_status` of an object that can be changed now.
pub(crate) const ACTIVE: &str = "ACTIVE";
/// `provisioning_status` of an object Octavia gave up on.
pub(crate) const ERROR: &str = "ERROR";

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoadBalancersRoot {
    loadbalancers: Vec<LoadBalancer>,
    /// `rel: next` while more pages follow (Octavia's `pagination_max_limit`, 1000 by default).
    loadbalancers_links: Vec<Link>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Link {
    rel: String,
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
    /// `rel: next` while more pages follow (only a project-wide list has more than one).
    listeners_links: Vec<Link>,
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

/// `GET /lbaas/loadbalancers/{id}`.
pub(crate) async fn load_balancer(
    session: &Session,
    id: &str,
) -> Result<LoadBalancer, osauth::Error> {
    let root: LoadBalancerRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "loadbalancers", id]).fetched().await?;
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

/// `GET /lbaas/listeners?loadbalancer_id=…`.
pub(crate) async fn listeners(
    session: &Session,
    load_balancer_id: &str,
) -> Result<Vec<Listener>, osauth::Error> {
    let query = [("loadbalancer_id", load_balancer_id)];
    let root: ListenersRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "listeners"]).query(&query).fetched().await?;
    Ok(root.listeners)
}

/// `GET /lbaas/pools?loadbalancer_id=…`.
pub(crate) async fn pools(
    session: &Session,
    load_balancer_id: &str,
) -> Result<Vec<Pool>, osauth::Error> {
    let query = [("loadbalancer_id", load_balancer_id)];
    let root: PoolsRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "pools"]).query(&query).fetched().await?;
    Ok(root.pools)
}

/// `GET /lbaas/pools/{id}/members` (Octavia lists members only per pool).
pub(crate) async fn members(
    session: &Session,
    pool_id: &str,
) -> Result<Vec<Member>, osauth::Error> {
    let root: MembersRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "pools", pool_id, "members"]).fetched().await?;
    Ok(root.members)
}

/// `GET /lbaas/healthmonitors/{id}`.
pub(crate) async fn monitor(session: &Session, id: &str) -> Result<HealthMonitor, osauth::Error> {
    let root: HealthMonitorRoot =
        session.get(LOAD_BALANCER, &[LBAAS, "healthmonitors", id]).fetched().await?;
    Ok(root.healthmonitor)
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
        .fetched()
        .await?;
    Ok(root.loadbalancer)
}

/// `DELETE /lbaas/loadbalancers/{id}?cascade=true`.
pub(crate) async fn delete_cascade(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session
        .delete(LOAD_BALANCER, &[LBAAS, "loadbalancers", id])
        .query(&[("cascade", "true")])
        .sent()
        .await?;
    Ok(())
}

/// The load balancers named `name` (Octavia's `name=` filter is exact).
pub(crate) async fn load_balancers_named(
    session: &Session,
    name: &str,
) -> Result<Vec<LoadBalancer>, osauth::Error> {
    let root: LoadBalancersRoot = session
        .get(LOAD_BALANCER, &[LBAAS, "loadbalancers"])
        .query(&[("name", name)])
        .fetched()
        .await?;
    Ok(root.loadbalancers)
}

/// Every load balancer of project `project_id`, page after page (the filter keeps an admin's
/// credentials from listing every project's); `None`: every one the credentials may list.
pub(crate) async fn load_balancers_of(
    session: &Session,
    project_id: Option<&str>,
) -> Result<Vec<LoadBalancer>, osauth::Error> {
    let page = |root: LoadBalancersRoot| (root.loadbalancers, root.loadbalancers_links);
    paged(session, "loadbalancers", project_id, page, |lb| lb.id.clone()).await
}

/// Every listener of project `project_id` (`None`: every one the credentials may list), page
/// after page: one request for a project's few hundred.
pub(crate) async fn listeners_of(
    session: &Session,
    project_id: Option<&str>,
) -> Result<Vec<Listener>, osauth::Error> {
    let page = |root: ListenersRoot| (root.listeners, root.listeners_links);
    paged(session, "listeners", project_id, page, |l| l.id.clone()).await
}

/// Every object of `lbaas/{kind}` in `project_id`: a page, then the next from the last ID
/// (`marker`) while Octavia links one (`rel: next`, past its `pagination_max_limit`).
async fn paged<R, T>(
    session: &Session,
    kind: &str,
    project_id: Option<&str>,
    page: impl Fn(R) -> (Vec<T>, Vec<Link>),
    id: impl Fn(&T) -> String,
) -> Result<Vec<T>, osauth::Error>
where
    R: serde::de::DeserializeOwned + Send,
{
    let mut all = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let mut query: Vec<(&str, &str)> =
            project_id.map(|p| ("project_id", p)).into_iter().collect();
        if let Some(marker) = marker.as_deref() {
            query.push(("marker", marker));
        }
        let root: R = session.get(LOAD_BALANCER, &[LBAAS, kind]).query(&query).fetched().await?;
        let (items, links) = page(root);
        let more = links.iter().any(|l| l.rel == "next");
        all.extend(items);
        match all.last() {
            Some(last) if more => marker = Some(id(last)),
            _ => return Ok(all),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Created {
    listener: Option<IdOnly>,
    pool: Option<IdOnly>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IdOnly {
    id: String,
}

/// `POST /lbaas/listeners`, the listener alone: its ID. (Zed answers 500 to a listener posted
/// with its `default_pool`, so the pool, members and monitor follow one call at a time.)
pub(crate) async fn create_listener(
    session: &Session,
    load_balancer_id: &str,
    spec: &ListenerSpec,
) -> Result<String, osauth::Error> {
    let mut body = serde_json::to_value(spec).map_err(invalid)?;
    body["loadbalancer_id"] = json!(load_balancer_id);
    body.as_object_mut().map(|b| b.remove("default_pool"));
    let created: Created = session
        .post(LOAD_BALANCER, &[LBAAS, "listeners"])
        .json(&json!({ "listener": body }))
        .fetched()
        .await?;
    Ok(created.listener.unwrap_or_default().id)
}

/// `PUT /lbaas/listeners/{id}`: what Octavia updates in place.
pub(crate) async fn update_listener(
    session: &Session,
    id: &str,
    spec: &ListenerSpec,
) -> Result<(), osauth::Error> {
    let mut body = json!({
        "name": spec.name,
        "tags": spec.tags,
        // An empty list would mean "no source": send null for "every source".
        "allowed_cidrs": if spec.allowed_cidrs.is_empty() { Value::Null } else { json!(spec.allowed_cidrs) },
        "connection_limit": spec.connection_limit,
    });
    for (key, value) in [
        ("timeout_client_data", spec.timeout_client_data),
        ("timeout_member_connect", spec.timeout_member_connect),
        ("timeout_member_data", spec.timeout_member_data),
        ("timeout_tcp_inspect", spec.timeout_tcp_inspect),
    ] {
        if let Some(value) = value {
            body[key] = json!(value);
        }
    }
    session
        .put(LOAD_BALANCER, &[LBAAS, "listeners", id])
        .json(&json!({ "listener": body }))
        .sent()
        .await?;
    Ok(())
}

/// `DELETE /lbaas/listeners/{id}`.
pub(crate) async fn delete_listener(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session.delete(LOAD_BALANCER, &[LBAAS, "listeners", id]).sent().await?;
    Ok(())
}

/// `POST /lbaas/pools` as the default pool of `listener_id`, the pool alone (members and
/// monitor follow): its ID.
pub(crate) async fn create_pool(
    session: &Session,
    listener_id: &str,
    spec: &PoolSpec,
) -> Result<String, osauth::Error> {
    let mut body = serde_json::to_value(spec).map_err(invalid)?;
    body["listener_id"] = json!(listener_id);
    if let Some(pool) = body.as_object_mut() {
        pool.remove("members");
        pool.remove("healthmonitor");
    }
    let created: Created = session
        .post(LOAD_BALANCER, &[LBAAS, "pools"])
        .json(&json!({ "pool": body }))
        .fetched()
        .await?;
    Ok(created.pool.unwrap_or_default().id)
}

/// `PUT /lbaas/pools/{id}` with its `lb_algorithm` and name.
pub(crate) async fn update_pool(
    session: &Session,
    id: &str,
    lb_algorithm: &str,
    name: &str,
) -> Result<(), osauth::Error> {
    let body = json!({"pool": {"lb_algorithm": lb_algorithm, "name": name}});
    session.put(LOAD_BALANCER, &[LBAAS, "pools", id]).json(&body).sent().await?;
    Ok(())
}

/// `DELETE /lbaas/pools/{id}` (its members and monitor go with it).
pub(crate) async fn delete_pool(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session.delete(LOAD_BALANCER, &[LBAAS, "pools", id]).sent().await?;
    Ok(())
}

/// `PUT /lbaas/pools/{id}/members`: the whole member set in one call.
pub(crate) async fn replace_members(
    session: &Session,
    pool_id: &str,
    members: &[MemberSpec],
) -> Result<(), osauth::Error> {
    let body = json!({ "members": members });
    session.put(LOAD_BALANCER, &[LBAAS, "pools", pool_id, "members"]).json(&body).sent().await?;
    Ok(())
}

/// `POST /lbaas/healthmonitors` on `pool_id`.
pub(crate) async fn create_monitor(
    session: &Session,
    pool_id: &str,
    spec: &MonitorSpec,
) -> Result<(), osauth::Error> {
    let mut body = serde_json::to_value(spec).map_err(invalid)?;
    body["pool_id"] = json!(pool_id);
    let body = json!({ "healthmonitor": body });
    session.post(LOAD_BALANCER, &[LBAAS, "healthmonitors"]).json(&body).sent().await?;
    Ok(())
}

/// `PUT /lbaas/loadbalancers/{id}` with `body` (name, description, tags).
pub(crate) async fn update_load_balancer(
    session: &Session,
    id: &str,
    body: &Value,
) -> Result<(), osauth::Error> {
    session.put(LOAD_BALANCER, &[LBAAS, "loadbalancers", id]).json(body).sent().await?;
    Ok(())
}

/// `PUT /lbaas/healthmonitors/{id}`: the name and timings (the type cannot change).
pub(crate) async fn update_monitor(
    session: &Session,
    id: &str,
    spec: &MonitorSpec,
) -> Result<(), osauth::Error> {
    let body = json!({"healthmonitor": {"name": spec.name, "delay": spec.delay, "timeout": spec.timeout,
        "max_retries": spec.max_retries, "max_retries_down": spec.max_retries_down}});
    session.put(LOAD_BALANCER, &[LBAAS, "healthmonitors", id]).json(&body).sent().await?;
    Ok(())
}

/// `DELETE /lbaas/healthmonitors/{id}`.
pub(crate) async fn delete_monitor(session: &Session, id: &str) -> Result<(), osauth::Error> {
    session.delete(LOAD_BALANCER, &[LBAAS, "healthmonitors", id]).sent().await?;
    Ok(())
}

fn invalid(e: serde_json::Error) -> osauth::Error {
    osauth::Error::new(osauth::ErrorKind::InvalidInput, e.to_string())
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
