//! The route controller against an in-memory Neutron (routes, quota, revisions, ports with
//! pairs) and the wire-level fake API server (conditions, Events).

use std::collections::BTreeSet;
use std::sync::Mutex;

use fake_kube_apiserver::FakeApiServer;
use kube::api::Api;
use kube::runtime::reflector;
use serde_json::{Value, json};
use testkit::kube::NodeFixture;

use super::*;
use crate::cloud::neutron::FixedIp;
use crate::cloud::routes::{AddressPair, ExtraRoute, PairPort, Router, Written};

const ROUTER: &str = "router-1";

fn call_error(kind: osauth::ErrorKind, message: &str) -> cloud::Error {
    cloud::Error::Call { operation: "test", source: osauth::Error::new(kind, message) }
}

fn server_error() -> cloud::Error {
    call_error(osauth::ErrorKind::InternalServerError, "503 Service Unavailable")
}

/// Neutron in memory: one router with a route quota and the check that a next hop is on
/// its subnet, ports with revisions, injected failures, and a log of every call.
#[derive(Debug, Default)]
struct State {
    router: Router,
    ports: Vec<PairPort>,
    /// At most this many routes (Neutron's `max_routes`); 0: no limit.
    max_routes: usize,
    /// Failures for the next calls of an operation (`router_get`, `add`, `port_update`…).
    failures: Vec<(&'static str, cloud::Error)>,
    /// Another writer changes the router (or the port) right before our next guarded write.
    interleave: Vec<(&'static str, ExtraRoute)>,
    log: Vec<String>,
}

#[derive(Debug, Default)]
struct FakeNeutron {
    state: Mutex<State>,
}

impl FakeNeutron {
    fn new(routes: &[(&str, &str)]) -> Arc<Self> {
        let router = Router {
            id: ROUTER.into(),
            routes: routes.iter().map(|(d, n)| route(d, n)).collect(),
            revision_number: 1,
        };
        Arc::new(FakeNeutron { state: Mutex::new(State { router, ..State::default() }) })
    }

    fn with_port(
        self: Arc<Self>,
        id: &str,
        server: &str,
        ips: &[&str],
        security: bool,
    ) -> Arc<Self> {
        let port = PairPort {
            id: id.into(),
            device_id: server.into(),
            fixed_ips: ips
                .iter()
                .map(|ip| FixedIp { ip_address: (*ip).into(), subnet_id: "s".into() })
                .collect(),
            port_security_enabled: Some(security),
            revision_number: 1,
            ..PairPort::default()
        };
        self.state.lock().unwrap().ports.push(port);
        self
    }

    fn fail(&self, op: &'static str, error: cloud::Error) {
        self.state.lock().unwrap().failures.push((op, error));
    }

    /// Logs `op` and takes its injected failure, if any.
    fn enter(&self, op: &'static str, detail: String) -> Result<(), cloud::Error> {
        let mut state = self.state.lock().unwrap();
        state.log.push(if detail.is_empty() { op.to_owned() } else { format!("{op} {detail}") });
        match state.failures.iter().position(|(o, _)| *o == op) {
            Some(i) => Err(state.failures.remove(i).1),
            None => Ok(()),
        }
    }

    fn log(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().log)
    }

    fn routes(&self) -> BTreeSet<(String, String)> {
        let state = self.state.lock().unwrap();
        state.router.routes.iter().map(|r| (r.destination.clone(), r.nexthop.clone())).collect()
    }

    fn pairs(&self, port: &str) -> Vec<String> {
        let state = self.state.lock().unwrap();
        let port = state.ports.iter().find(|p| p.id == port).unwrap();
        port.allowed_address_pairs.iter().map(|p| p.ip_address.clone()).collect()
    }

    fn check(state: &State, routes: &[ExtraRoute]) -> Result<(), cloud::Error> {
        if state.max_routes > 0 && routes.len() > state.max_routes {
            let message = format!("Maximum number of routes exceeded: {}", state.max_routes);
            return Err(call_error(osauth::ErrorKind::InvalidInput, &message));
        }
        let subnet: IpNet = "10.0.0.0/24".parse().unwrap();
        let v6: IpNet = "fd00::/64".parse().unwrap();
        for r in routes {
            let hop: std::net::IpAddr = r.nexthop.parse().unwrap();
            if !subnet.contains(&hop) && !v6.contains(&hop) {
                let message = format!("the nexthop {} is not connected with router", r.nexthop);
                return Err(call_error(osauth::ErrorKind::InvalidInput, &message));
            }
        }
        Ok(())
    }

    /// Another writer's change, queued for just before our next guarded write.
    fn interleave(&self, what: &'static str, route: ExtraRoute) {
        self.state.lock().unwrap().interleave.push((what, route));
    }

    fn apply_interleaved(state: &mut State, what: &str) {
        let queued: Vec<_> = state.interleave.iter().filter(|(w, _)| *w == what).cloned().collect();
        state.interleave.retain(|(w, _)| *w != what);
        for (_, route) in queued {
            match what {
                "router" => {
                    state.router.routes.push(route);
                    state.router.revision_number += 1;
                }
                _ => {
                    let port = &mut state.ports[0];
                    let pair = AddressPair { ip_address: route.destination, mac_address: None };
                    port.allowed_address_pairs.push(pair);
                    port.revision_number += 1;
                }
            }
        }
    }
}

impl Routes for FakeNeutron {
    async fn route_support(&self) -> cloud::Result<Support> {
        Ok(Support::ALL)
    }

    async fn router(&self, id: &str) -> cloud::Result<Router> {
        self.enter("router_get", String::new())?;
        let state = self.state.lock().unwrap();
        if id != state.router.id {
            return Err(cloud::Error::NotFound { what: format!("router {id}") });
        }
        Ok(state.router.clone())
    }

    async fn add_routes(&self, _: &str, routes: &[ExtraRoute]) -> cloud::Result<()> {
        self.enter("add", routes.len().to_string())?;
        let mut state = self.state.lock().unwrap();
        let mut all = state.router.routes.clone();
        all.extend(routes.iter().filter(|r| !state.router.routes.contains(r)).cloned());
        Self::check(&state, &all)?;
        state.router.routes = all;
        state.router.revision_number += 1;
        Ok(())
    }

    async fn remove_routes(&self, _: &str, routes: &[ExtraRoute]) -> cloud::Result<()> {
        self.enter("remove", routes.len().to_string())?;
        let mut state = self.state.lock().unwrap();
        state.router.routes.retain(|r| !routes.contains(r));
        state.router.revision_number += 1;
        Ok(())
    }

    async fn replace_routes(
        &self,
        _: &str,
        routes: &[ExtraRoute],
        revision: Option<u64>,
    ) -> cloud::Result<Written<Router>> {
        self.enter("replace", routes.len().to_string())?;
        let mut state = self.state.lock().unwrap();
        Self::apply_interleaved(&mut state, "router");
        if revision.is_some_and(|r| r != state.router.revision_number) {
            return Ok(Written::Stale);
        }
        Self::check(&state, routes)?;
        state.router.routes = routes.to_vec();
        state.router.revision_number += 1;
        Ok(Written::Done(state.router.clone()))
    }

    async fn ports_with_addresses(&self, addresses: &[String]) -> cloud::Result<Vec<PairPort>> {
        if addresses.is_empty() {
            return Ok(Vec::new());
        }
        self.enter("port_list", addresses.len().to_string())?;
        let state = self.state.lock().unwrap();
        let holds = |p: &&PairPort| p.fixed_ips.iter().any(|f| addresses.contains(&f.ip_address));
        Ok(state.ports.iter().filter(holds).cloned().collect())
    }

    async fn pair_port(&self, id: &str) -> cloud::Result<PairPort> {
        self.enter("port_get", id.to_owned())?;
        let state = self.state.lock().unwrap();
        let port = state.ports.iter().find(|p| p.id == id).cloned();
        port.ok_or_else(|| cloud::Error::NotFound { what: format!("port {id}") })
    }

    async fn set_address_pairs(
        &self,
        port: &str,
        pairs: &[AddressPair],
        revision: Option<u64>,
    ) -> cloud::Result<Written<PairPort>> {
        self.enter("port_update", port.to_owned())?;
        let mut state = self.state.lock().unwrap();
        Self::apply_interleaved(&mut state, "port");
        let found = state.ports.iter_mut().find(|p| p.id == port);
        let found = found.ok_or_else(|| cloud::Error::NotFound { what: format!("port {port}") })?;
        if revision.is_some_and(|r| r != found.revision_number) {
            return Ok(Written::Stale);
        }
        if found.port_security_enabled == Some(false) {
            let message = "Port Security must be enabled in order to have allowed address pairs";
            return Err(call_error(osauth::ErrorKind::Conflict, message));
        }
        found.allowed_address_pairs = pairs.to_vec();
        found.revision_number += 1;
        Ok(Written::Done(found.clone()))
    }
}

fn route(destination: &str, nexthop: &str) -> ExtraRoute {
    ExtraRoute { destination: destination.into(), nexthop: nexthop.into() }
}

fn routes(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter().map(|(d, n)| ((*d).to_owned(), (*n).to_owned())).collect()
}

/// A node of server `id-<name>` with these pod CIDRs and InternalIPs.
fn node(name: &str, pod_cidrs: &[&str], internal: &[&str]) -> Value {
    let mut value =
        NodeFixture::initialized(name).provider_id(&format!("openstack:///id-{name}")).build();
    value["spec"]["podCIDRs"] = json!(pod_cidrs);
    let list: Vec<_> =
        internal.iter().map(|a| json!({"type": "InternalIP", "address": a})).collect();
    value["status"]["addresses"] = json!(list);
    value
}

struct Scene {
    fake: FakeApiServer,
    ctx: RouteContext<FakeNeutron>,
    memory: Memory,
    support: Support,
}

impl Scene {
    async fn new(neutron: Arc<FakeNeutron>, nodes: Vec<Value>, cluster: &[&str]) -> Scene {
        let fake = FakeApiServer::start().await.unwrap();
        for node in nodes {
            fake.create("v1", "nodes", "", node);
        }
        let (reader, _writer) = reflector::store::<CachedNode>();
        let settings = Settings {
            router_id: ROUTER.into(),
            cluster: cluster.iter().map(|c| c.parse().unwrap()).collect(),
            period: Duration::from_secs(10),
        };
        let ctx =
            RouteContext::new(fake.client(), neutron.clone(), Metrics::shared(), reader, settings);
        Scene { fake, ctx, memory: Memory::default(), support: Support::ALL }
    }

    async fn nodes(&self) -> Vec<Arc<CachedNode>> {
        let api = Api::<CachedNode>::all(self.fake.client());
        let mut list: Vec<CachedNode> = api.list(&Default::default()).await.unwrap().items;
        for node in &mut list {
            crate::controllers::projection::project(node);
        }
        list.into_iter().map(Arc::new).collect()
    }

    async fn resync(&mut self) -> Result<Report, Error> {
        let nodes = self.nodes().await;
        resync(&self.ctx, self.support, &nodes, &mut self.memory).await
    }

    /// `NetworkUnavailable` of a node: (status, reason).
    fn condition(&self, name: &str) -> Option<(String, String)> {
        let node = self.fake.get("v1", "nodes", "", name)?;
        let conditions = node["status"]["conditions"].as_array()?.clone();
        let found = conditions.into_iter().find(|c| c["type"] == NETWORK_UNAVAILABLE)?;
        Some((found["status"].as_str()?.to_owned(), found["reason"].as_str()?.to_owned()))
    }

    fn events(&self, reason: &str) -> Vec<Value> {
        let all = self.fake.list("events.k8s.io/v1", "events");
        all.into_iter().filter(|e| e["reason"] == reason).collect()
    }
}

use crate::controllers::projection::NETWORK_UNAVAILABLE;

fn created() -> Option<(String, String)> {
    Some(("False".into(), reason::CREATED.into()))
}

#[tokio::test]
async fn new_nodes_get_their_routes_in_one_call_and_a_steady_resync_only_reads_the_router() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], true).with_port(
        "p-b",
        "id-b",
        &["10.0.0.6"],
        true,
    );
    let nodes = vec![
        node("a", &["10.244.1.0/24"], &["10.0.0.5"]),
        node("b", &["10.244.2.0/24"], &["10.0.0.6"]),
        node("no-cidr", &[], &["10.0.0.7"]),
    ];
    let mut scene = Scene::new(neutron.clone(), nodes, &["10.244.0.0/16"]).await;
    let report = scene.resync().await.unwrap();
    assert_eq!((report.nodes, report.added, report.conditions), (2, 2, 2), "{report:?}");
    assert_eq!(
        neutron.log(),
        ["router_get", "add 2", "port_list 2", "port_update p-a", "port_update p-b"]
    );
    let want = routes(&[("10.244.1.0/24", "10.0.0.5"), ("10.244.2.0/24", "10.0.0.6")]);
    assert_eq!(neutron.routes(), want);
    assert_eq!(neutron.pairs("p-a"), ["10.244.1.0/24"]);
    assert_eq!(scene.condition("a"), created());
    assert_eq!(scene.condition("no-cidr"), None, "a node without pod CIDRs is left alone");

    let writes = scene.fake.writes().len();
    for _ in 0..3 {
        let report = scene.resync().await.unwrap();
        assert_eq!((report.added, report.verified, report.conditions), (0, 0, 0));
        assert_eq!(neutron.log(), ["router_get"], "nothing to change: one read");
    }
    assert_eq!(scene.fake.writes().len(), writes, "no condition written again");
}

#[tokio::test]
async fn every_tenth_resync_checks_the_pairs_and_puts_back_one_removed_by_hand() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], true);
    let mut scene =
        Scene::new(neutron.clone(), vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])], &[]).await;
    scene.resync().await.unwrap();
    neutron.state.lock().unwrap().ports[0].allowed_address_pairs.clear();
    neutron.log();
    for _ in 1..VERIFY_EVERY {
        scene.resync().await.unwrap();
        assert_eq!(neutron.log(), ["router_get"]);
    }
    let report = scene.resync().await.unwrap();
    assert_eq!(report.verified, 1);
    assert_eq!(neutron.log(), ["router_get", "port_list 1", "port_update p-a"]);
    assert_eq!(neutron.pairs("p-a"), ["10.244.1.0/24"]);
}

#[tokio::test]
async fn a_deleted_node_loses_its_route_and_pair_and_routes_outside_the_cluster_cidrs_stay() {
    let neutron = FakeNeutron::new(&[
        ("192.168.10.0/24", "10.0.0.9"), // a user's, outside the cluster CIDR
        ("10.244.9.0/24", "10.0.0.9"),   // inside, and no node has it
    ])
    .with_port("p-a", "id-a", &["10.0.0.5"], true)
    .with_port("p-b", "id-b", &["10.0.0.6"], true);
    let nodes = vec![
        node("a", &["10.244.1.0/24"], &["10.0.0.5"]),
        node("b", &["10.244.2.0/24"], &["10.0.0.6"]),
    ];
    let mut scene = Scene::new(neutron.clone(), nodes, &["10.244.0.0/16"]).await;
    let report = scene.resync().await.unwrap();
    assert_eq!((report.added, report.removed), (2, 1));
    scene.fake.delete("v1", "nodes", "", "b");
    neutron.log();

    let report = scene.resync().await.unwrap();
    assert_eq!(report.removed, 1);
    assert_eq!(neutron.log(), ["router_get", "port_list 1", "port_update p-b", "remove 1"]);
    let want = routes(&[("192.168.10.0/24", "10.0.0.9"), ("10.244.1.0/24", "10.0.0.5")]);
    assert_eq!(neutron.routes(), want);
    assert!(neutron.pairs("p-b").is_empty() && neutron.pairs("p-a") == ["10.244.1.0/24"]);
}

#[tokio::test]
async fn without_cluster_cidrs_nothing_is_ever_removed() {
    let neutron = FakeNeutron::new(&[("10.244.9.0/24", "10.0.0.9")]).with_port(
        "p-a",
        "id-a",
        &["10.0.0.5"],
        true,
    );
    let mut scene =
        Scene::new(neutron.clone(), vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])], &[]).await;
    scene.resync().await.unwrap();
    scene.fake.delete("v1", "nodes", "", "a");
    scene.resync().await.unwrap();
    let want = routes(&[("10.244.9.0/24", "10.0.0.9"), ("10.244.1.0/24", "10.0.0.5")]);
    assert_eq!(neutron.routes(), want);
    assert!(!neutron.log().iter().any(|c| c.starts_with("remove")));
}

#[tokio::test]
async fn a_new_internal_ip_moves_the_route_and_the_pair() {
    let neutron = FakeNeutron::new(&[]).with_port("p-old", "id-a", &["10.0.0.5"], true).with_port(
        "p-new",
        "id-a",
        &["10.0.0.8"],
        true,
    );
    let mut scene = Scene::new(
        neutron.clone(),
        vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])],
        &["10.244.0.0/16"],
    )
    .await;
    scene.resync().await.unwrap();
    let mut moved = scene.fake.get("v1", "nodes", "", "a").unwrap();
    moved["status"]["addresses"] = json!([{"type": "InternalIP", "address": "10.0.0.8"}]);
    scene.fake.delete("v1", "nodes", "", "a");
    scene.fake.create("v1", "nodes", "", moved);
    scene.resync().await.unwrap();
    assert_eq!(neutron.routes(), routes(&[("10.244.1.0/24", "10.0.0.8")]));
    assert!(neutron.pairs("p-old").is_empty());
    assert_eq!(neutron.pairs("p-new"), ["10.244.1.0/24"]);
}

#[tokio::test]
async fn dual_stack_nodes_get_a_route_and_a_pair_per_family() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5", "fd00::5"], true);
    let nodes = vec![node("a", &["10.244.1.0/24", "fd00:10:244:1::/64"], &["10.0.0.5", "fd00::5"])];
    let mut scene =
        Scene::new(neutron.clone(), nodes, &["10.244.0.0/16", "fd00:10:244::/56"]).await;
    scene.resync().await.unwrap();
    let want = routes(&[("10.244.1.0/24", "10.0.0.5"), ("fd00:10:244:1::/64", "fd00::5")]);
    assert_eq!(neutron.routes(), want);
    assert_eq!(neutron.pairs("p-a"), ["10.244.1.0/24", "fd00:10:244:1::/64"]);
    assert_eq!(scene.condition("a"), created());
}

#[tokio::test]
async fn a_quota_refusal_is_the_over_quota_nodes_own_and_the_others_get_their_routes() {
    let neutron = FakeNeutron::new(&[])
        .with_port("p-a", "id-a", &["10.0.0.5"], true)
        .with_port("p-b", "id-b", &["10.0.0.6"], true)
        .with_port("p-c", "id-c", &["10.0.0.7"], true);
    neutron.state.lock().unwrap().max_routes = 2;
    let nodes = vec![
        node("a", &["10.244.1.0/24"], &["10.0.0.5"]),
        node("b", &["10.244.2.0/24"], &["10.0.0.6"]),
        node("c", &["10.244.3.0/24"], &["10.0.0.7"]),
    ];
    let mut scene = Scene::new(neutron.clone(), nodes, &["10.244.0.0/16"]).await;
    let report = scene.resync().await.unwrap();
    assert_eq!((report.added, report.failed), (2, 1), "{report:?}");
    assert_eq!(&neutron.log()[..5], ["router_get", "add 3", "add 1", "add 1", "add 1"]);
    assert_eq!(scene.condition("a"), created());
    assert_eq!(scene.condition("c"), Some(("True".into(), reason::REFUSED.into())));
    let events = scene.events(condition::FAILED_EVENT);
    assert_eq!(events.len(), 1, "{events:?}");
    let note = events[0]["note"].as_str().unwrap();
    assert!(
        note.contains("10.244.3.0/24 via 10.0.0.7") && note.contains("Maximum number of routes"),
        "{note}"
    );
    assert_eq!(events[0]["regarding"]["name"], "c");

    // c backs off: the next resync (within its delay) neither retries it nor writes again.
    let report = scene.resync().await.unwrap();
    assert_eq!(neutron.log(), ["router_get"]);
    assert_eq!(report.conditions, 0);
}

#[tokio::test]
async fn a_next_hop_off_the_routers_subnets_and_a_node_without_a_port_are_told_on_the_node() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], true);
    let nodes = vec![
        node("a", &["10.244.1.0/24"], &["10.0.0.5"]),
        node("far", &["10.244.2.0/24"], &["192.168.1.5"]),
        node("portless", &["10.244.3.0/24"], &["10.0.0.77"]),
        node("v4only", &["fd00:10:244:4::/64"], &["10.0.0.8"]),
    ];
    let mut scene =
        Scene::new(neutron.clone(), nodes, &["10.244.0.0/16", "fd00:10:244::/56"]).await;
    scene.resync().await.unwrap();
    assert_eq!(scene.condition("a"), created());
    assert_eq!(scene.condition("far"), Some(("True".into(), reason::REFUSED.into())));
    assert_eq!(scene.condition("portless"), Some(("True".into(), reason::NO_PORT.into())));
    assert_eq!(scene.condition("v4only"), Some(("True".into(), reason::NO_INTERNAL_IP.into())));
    assert_eq!(scene.events(condition::FAILED_EVENT).len(), 3);
    let want = routes(&[("10.244.1.0/24", "10.0.0.5"), ("10.244.3.0/24", "10.0.0.77")]);
    assert_eq!(neutron.routes(), want);
}

#[tokio::test]
async fn a_port_with_port_security_off_needs_no_pair() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], false);
    let mut scene =
        Scene::new(neutron.clone(), vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])], &[]).await;
    scene.resync().await.unwrap();
    assert_eq!(neutron.log(), ["router_get", "add 1", "port_list 1"]);
    assert_eq!(scene.condition("a"), created());
}

#[tokio::test]
async fn a_router_that_cannot_be_read_is_an_error_and_nothing_is_written() {
    let neutron = FakeNeutron::new(&[]);
    let mut scene =
        Scene::new(neutron.clone(), vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])], &[]).await;
    scene.ctx.settings.router_id = "no-such-router".into();
    let error = scene.resync().await.unwrap_err();
    assert_eq!(chain(&error), "the router of [Route] router-id: router no-such-router not found");
    assert_eq!(error.kind(), "not_found");
    assert!(scene.fake.writes().is_empty());
    condition::tell_waiting(&scene.ctx, &scene.nodes().await, &chain(&error)).await;
    let events = scene.events(condition::FAILED_EVENT);
    assert!(events[0]["note"].as_str().unwrap().contains("router no-such-router not found"));

    scene.ctx.settings.router_id = ROUTER.into();
    neutron.fail("add", call_error(osauth::ErrorKind::AccessDenied, "not authorized"));
    let error = scene.resync().await.unwrap_err();
    assert_eq!(error.kind(), "error");
    assert!(chain(&error).contains("not authorized"), "{}", chain(&error));
}

#[tokio::test]
async fn neutron_failing_mid_batch_converges_on_the_next_resync() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], true).with_port(
        "p-b",
        "id-b",
        &["10.0.0.6"],
        true,
    );
    let nodes = vec![
        node("a", &["10.244.1.0/24"], &["10.0.0.5"]),
        node("b", &["10.244.2.0/24"], &["10.0.0.6"]),
    ];
    let mut scene = Scene::new(neutron.clone(), nodes, &["10.244.0.0/16"]).await;
    neutron.fail("add", server_error());
    let report = scene.resync().await.unwrap();
    assert_eq!((report.added, report.failed), (0, 2));
    assert_eq!(neutron.log(), ["router_get", "add 2"], "a 5xx is not split node by node");
    assert_eq!(scene.condition("a"), Some(("True".into(), reason::NO_ROUTE.into())));

    // The port of b fails once; a is done, b waits for its own retry.
    scene.memory.backoff.clear();
    neutron.fail("port_update", server_error());
    scene.resync().await.unwrap();
    assert_eq!(neutron.routes().len(), 2);
    assert_eq!(
        scene.condition("a"),
        Some(("True".into(), reason::NO_ROUTE.into())),
        "p-a failed first"
    );
    scene.memory.backoff.clear();
    scene.resync().await.unwrap();
    assert_eq!(scene.condition("a"), created());
    assert_eq!(scene.condition("b"), created());
    assert_eq!(neutron.pairs("p-a"), ["10.244.1.0/24"]);
    assert_eq!(neutron.pairs("p-b"), ["10.244.2.0/24"]);
}

#[tokio::test]
async fn without_atomic_routes_another_writers_route_survives_the_guarded_rewrite() {
    let neutron = FakeNeutron::new(&[("10.244.9.0/24", "10.0.0.9")]).with_port(
        "p-a",
        "id-a",
        &["10.0.0.5"],
        true,
    );
    let mut scene = Scene::new(
        neutron.clone(),
        vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])],
        &["10.244.0.0/16"],
    )
    .await;
    scene.support = Support { atomic: false, ..Support::ALL };
    // Between our read and our write, another controller adds its route (outside our CIDR).
    neutron.interleave("router", route("10.250.0.0/24", "10.0.0.42"));
    scene.resync().await.unwrap();
    let want = routes(&[("10.250.0.0/24", "10.0.0.42"), ("10.244.1.0/24", "10.0.0.5")]);
    assert_eq!(neutron.routes(), want);
    // The stale route's removal met the other writer's change (412), read again and redone;
    // the addition is the second guarded write.
    let log = neutron.log();
    let want = ["router_get", "port_list 1", "replace 0", "router_get", "replace 1", "replace 2"];
    assert_eq!(&log[..6], want, "{log:?}");
}

#[tokio::test]
async fn a_pair_another_writer_adds_meanwhile_is_kept() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], true);
    let mut scene =
        Scene::new(neutron.clone(), vec![node("a", &["10.244.1.0/24"], &["10.0.0.5"])], &[]).await;
    neutron.interleave("port", route("192.168.50.0/24", "-"));
    scene.resync().await.unwrap();
    assert_eq!(neutron.pairs("p-a"), ["192.168.50.0/24", "10.244.1.0/24"]);
    let log = neutron.log();
    assert_eq!(log[3..], ["port_update p-a", "port_get p-a", "port_update p-a"], "{log:?}");
}

#[tokio::test]
async fn a_condition_a_network_plugin_set_false_is_left_as_it_is() {
    let neutron = FakeNeutron::new(&[]).with_port("p-a", "id-a", &["10.0.0.5"], true);
    let mut value = node("a", &["10.244.1.0/24"], &["10.0.0.5"]);
    value["status"]["conditions"] = json!([{"type": "Ready", "status": "True"},
        {"type": "NetworkUnavailable", "status": "False", "reason": "CalicoIsUp"}]);
    let mut scene = Scene::new(neutron.clone(), vec![value], &[]).await;
    let report = scene.resync().await.unwrap();
    assert_eq!(report.conditions, 0);
    assert_eq!(scene.condition("a"), Some(("False".into(), "CalicoIsUp".into())));
}

#[test]
fn backoff_doubles_from_the_period_to_five_minutes() {
    let period = Duration::from_secs(10);
    let delays: Vec<u64> = [1, 2, 3, 6, 40].iter().map(|n| backoff(period, *n).as_secs()).collect();
    assert_eq!(delays, [10, 20, 40, 300, 300]);
}

#[test]
fn the_route_controller_stays_off_without_a_router_or_when_told_so() {
    let settings = |enabled, configure, router: Option<&str>| {
        Settings::from_flags(
            enabled,
            configure,
            router.map(str::to_owned),
            Vec::new(),
            Duration::from_secs(10),
        )
    };
    assert!(settings(true, true, None).is_none());
    assert!(settings(true, false, Some("r")).is_none());
    assert!(settings(false, true, Some("r")).is_none());
    assert_eq!(settings(true, true, Some("r")).unwrap().router_id, "r");
}
