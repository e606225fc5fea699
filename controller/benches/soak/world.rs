//! What the soak wants the cluster to hold, and the random changes it makes to it: Services
//! (created, changed, deleted) and Nodes (join, leave, flip Ready), with each node's
//! eligibility over time for the member-list rule (batches.rs).
//!
//! No Service selects its members (no node selector, no `externalTrafficPolicy: Local`) and no
//! Node is excluded from load balancers: every pool must hold every eligible node.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::{Value, json};
use testkit::kube::NodeFixture;

use crate::batches::Eligibility;
use crate::cluster::Cluster;
use crate::rng::Rng;

pub(crate) const NAMESPACE: &str = "soak";
const INTERNAL: &str = "service.beta.kubernetes.io/openstack-internal-load-balancer";
const LB_ID: &str = "loadbalancer.openstack.org/load-balancer-id";
const LB_METHOD: &str = "loadbalancer.openstack.org/lb-method";
/// The Service whose load balancer the `Shared` ones join: made first, never changed.
pub(crate) const HOST: &str = "shared-host";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A floating IP on the VIP.
    External,
    /// `openstack-internal-load-balancer`: the VIP is the ingress.
    Internal,
    /// External with two ports.
    TwoPorts,
    /// External with `loadBalancerSourceRanges` (security-group rules from them).
    SourceRanges,
    /// Internal, joining [`HOST`]'s load balancer through `load-balancer-id`.
    Shared,
}

const KINDS: [Kind; 5] =
    [Kind::External, Kind::Internal, Kind::TwoPorts, Kind::SourceRanges, Kind::Shared];

/// One Service the soak made and has not deleted.
#[derive(Debug, Clone)]
pub(crate) struct Svc {
    pub(crate) kind: Kind,
    /// (port, nodePort)
    pub(crate) ports: Vec<(u16, u16)>,
    /// `type: LoadBalancer` (else ClusterIP, moved away from it).
    pub(crate) balanced: bool,
    pub(crate) ranges: Vec<String>,
    pub(crate) method: Option<&'static str>,
}

impl Svc {
    pub(crate) fn internal(&self) -> bool {
        matches!(self.kind, Kind::Internal | Kind::Shared)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) creates: usize,
    pub(crate) updates: usize,
    pub(crate) deletes: usize,
    pub(crate) node_changes: usize,
}

pub(crate) struct World {
    pub(crate) live: BTreeMap<String, Svc>,
    pub(crate) deleted: BTreeSet<String>,
    /// Service names made so far (each name is used once).
    made: usize,
    pub(crate) max: usize,
    node_ports: BTreeSet<u16>,
    /// Shared Services' ports are unique on the host's load balancer.
    shared_ports: BTreeSet<u16>,
    /// The servers (name → present as a Node); the Nodes' Ready status.
    pub(crate) servers: Vec<String>,
    pub(crate) ready: BTreeMap<String, bool>,
    /// The host's load balancer, once known.
    pub(crate) host_lb: Option<String>,
    pub(crate) counts: Counts,
    /// When each node was eligible as a member.
    pub(crate) eligibility: Eligibility,
}

impl World {
    pub(crate) fn new(max: usize, servers: Vec<String>) -> World {
        World {
            live: BTreeMap::new(),
            deleted: BTreeSet::new(),
            made: 0,
            max,
            node_ports: BTreeSet::new(),
            shared_ports: BTreeSet::new(),
            servers,
            ready: BTreeMap::new(),
            host_lb: None,
            counts: Counts::default(),
            eligibility: Eligibility::default(),
        }
    }

    /// A free nodePort of the soak, in the real server's default range (30000–32767).
    fn node_port(&mut self, rng: &mut Rng) -> u16 {
        loop {
            let p = 30000 + rng.below(2700) as u16;
            if self.node_ports.insert(p) {
                return p;
            }
        }
    }

    fn service_port(&mut self, kind: Kind, rng: &mut Rng) -> u16 {
        if kind != Kind::Shared {
            return *rng.pick(&[80, 443, 8080, 8443]);
        }
        loop {
            let p = 9000 + rng.below(900) as u16;
            if self.shared_ports.insert(p) {
                return p;
            }
        }
    }

    /// Every server joins as a tainted Node (the CCM initializes it), Ready.
    pub(crate) fn join_all(&mut self, cluster: &dyn Cluster) {
        for name in self.servers.clone() {
            cluster.create("nodes", "", NodeFixture::tainted(&name).build());
            self.eligibility.set_ready(&name, true, Instant::now());
            self.ready.insert(name, true);
        }
    }

    /// Reads the Nodes' InternalIPs (set by the CCM when it initializes a node) into the
    /// eligibility record.
    pub(crate) fn observe_nodes(&mut self, cluster: &dyn Cluster) {
        let at = Instant::now();
        for node in cluster.list("nodes") {
            let name = node.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let addresses = node.pointer("/status/addresses").and_then(Value::as_array);
            let ip = addresses
                .and_then(|a| a.iter().find(|a| a["type"] == "InternalIP"))
                .and_then(|a| a["address"].as_str());
            self.eligibility.seen(name, ip, at);
        }
    }

    /// The host of the shared load balancer: internal, one port.
    pub(crate) fn create_host(&mut self, cluster: &dyn Cluster, rng: &mut Rng) {
        let node_port = self.node_port(rng);
        let mut svc = Svc {
            kind: Kind::Internal,
            ports: vec![(80, node_port)],
            balanced: true,
            ranges: vec![],
            method: None,
        };
        let stored = cluster.create("services", NAMESPACE, object(HOST, &svc, None));
        self.read_node_ports(&stored, &mut svc);
        self.live.insert(HOST.to_owned(), svc);
    }

    /// Whether a new Service may be made now.
    pub(crate) fn has_room(&self) -> bool {
        self.live.len() < self.max
    }

    pub(crate) fn create(&mut self, cluster: &dyn Cluster, rng: &mut Rng) -> String {
        let mut kind = *rng.pick(&KINDS);
        if kind == Kind::Shared && self.host_lb.is_none() {
            kind = Kind::Internal;
        }
        let name = format!("svc-{:03}", self.made);
        self.made += 1;
        let port = self.service_port(kind, rng);
        let mut ports = vec![(port, self.node_port(rng))];
        if kind == Kind::TwoPorts {
            let second = if port == 8080 { 9090 } else { 8080 };
            ports.push((second, self.node_port(rng)));
        }
        let ranges = match kind {
            Kind::SourceRanges => vec![format!("192.0.2.{}/32", rng.below(250) + 1)],
            _ => vec![],
        };
        let mut svc = Svc { kind, ports, balanced: true, ranges, method: None };
        let stored =
            cluster.create("services", NAMESPACE, object(&name, &svc, self.host_lb.as_deref()));
        self.read_node_ports(&stored, &mut svc);
        self.live.insert(name.clone(), svc);
        self.counts.creates += 1;
        name
    }

    /// A random change of a random Service (never the host): ports, an annotation, source
    /// ranges, or its type away from LoadBalancer and back.
    pub(crate) fn update(&mut self, cluster: &dyn Cluster, rng: &mut Rng) -> Option<String> {
        let names: Vec<String> = self.live.keys().filter(|n| *n != HOST).cloned().collect();
        if names.is_empty() {
            return None;
        }
        let name = rng.pick(&names).clone();
        let mut svc = self.live[&name].clone();
        let what = if svc.balanced { rng.below(5) } else { 4 };
        let change = match what {
            0 if svc.kind != Kind::Shared => {
                // another port number on the first port (listener replaced)
                let old = svc.ports[0].0;
                let new = *rng.pick(&[80, 443, 8080, 8443]);
                if svc.ports.iter().any(|(p, _)| *p == new) || old == new {
                    return None;
                }
                svc.ports[0].0 = new;
                "port"
            }
            1 if svc.kind != Kind::Shared && svc.ports.len() == 1 => {
                let second = if svc.ports[0].0 == 8081 { 8082 } else { 8081 };
                svc.ports.push((second, self.node_port(rng)));
                "port added"
            }
            1 if svc.kind != Kind::Shared => {
                let (_, node_port) = svc.ports.pop().expect("two ports");
                self.node_ports.remove(&node_port);
                "port removed"
            }
            2 => {
                svc.method = match svc.method {
                    None => Some("LEAST_CONNECTIONS"),
                    Some(_) => None,
                };
                "lb-method"
            }
            3 if svc.kind == Kind::SourceRanges => {
                svc.ranges = vec![format!("198.51.100.{}/32", rng.below(250) + 1)];
                "source ranges"
            }
            4 => {
                svc.balanced = !svc.balanced;
                if svc.balanced { "type LoadBalancer again" } else { "type ClusterIP" }
            }
            _ => return None,
        };
        // A merge patch replaces lists whole; absent keys are removed with null.
        let mut patch = object(&name, &svc, self.host_lb.as_deref());
        let annotations = patch["metadata"]["annotations"].as_object_mut().expect("an object");
        for key in [LB_METHOD, INTERNAL, LB_ID] {
            annotations.entry(key).or_insert(Value::Null);
        }
        // The real server allows source ranges on type LoadBalancer only.
        if svc.ranges.is_empty() || !svc.balanced {
            patch["spec"]["loadBalancerSourceRanges"] = Value::Null;
        }
        let stored = cluster.patch("services", NAMESPACE, &name, patch);
        self.read_node_ports(&stored, &mut svc);
        self.live.insert(name.clone(), svc);
        self.counts.updates += 1;
        Some(format!("{name}: {change}"))
    }

    pub(crate) fn delete(&mut self, cluster: &dyn Cluster, rng: &mut Rng) -> Option<String> {
        let names: Vec<String> = self.live.keys().filter(|n| *n != HOST).cloned().collect();
        if names.is_empty() {
            return None;
        }
        let name = rng.pick(&names).clone();
        self.remove(cluster, &name);
        Some(name)
    }

    pub(crate) fn remove(&mut self, cluster: &dyn Cluster, name: &str) {
        cluster.delete("services", NAMESPACE, name);
        if let Some(svc) = self.live.remove(name) {
            for (port, node_port) in svc.ports {
                self.node_ports.remove(&node_port);
                if svc.kind == Kind::Shared {
                    self.shared_ports.remove(&port);
                }
            }
        }
        self.deleted.insert(name.to_owned());
        self.counts.deletes += 1;
    }

    /// A node leaves (its Node deleted; the server stays), joins again, or flips Ready.
    pub(crate) fn node_change(&mut self, cluster: &dyn Cluster, rng: &mut Rng) -> String {
        let name = rng.pick(&self.servers).clone();
        self.counts.node_changes += 1;
        match self.ready.get(&name).copied() {
            None => {
                cluster.create("nodes", "", NodeFixture::tainted(&name).build());
                self.eligibility.set_ready(&name, true, Instant::now());
                self.ready.insert(name.clone(), true);
                format!("{name} joins")
            }
            Some(_) if rng.below(3) == 0 && self.ready.len() > 2 => {
                cluster.delete("nodes", "", &name);
                self.eligibility.left(&name, Instant::now());
                self.ready.remove(&name);
                format!("{name} leaves")
            }
            Some(ready) => {
                let status = if ready { "False" } else { "True" };
                // Through the status subresource (cluster.rs), as a kubelet writes it.
                let patch =
                    json!({"status": {"conditions": [{"type": "Ready", "status": status}]}});
                cluster.patch("nodes", "", &name, patch);
                self.eligibility.set_ready(&name, !ready, Instant::now());
                self.ready.insert(name.clone(), !ready);
                format!("{name} Ready={status}")
            }
        }
    }

    /// Takes the nodePorts the server stored (the real one picks its own when another
    /// Service holds one the soak chose).
    fn read_node_ports(&mut self, stored: &Value, svc: &mut Svc) {
        if !svc.balanced {
            return;
        }
        let stored_ports = stored.pointer("/spec/ports").and_then(Value::as_array);
        for (port, node_port) in &mut svc.ports {
            let found = stored_ports
                .into_iter()
                .flatten()
                .find(|p| p["port"] == *port)
                .and_then(|p| p["nodePort"].as_u64())
                .and_then(|n| u16::try_from(n).ok());
            if let Some(found) = found
                && found != *node_port
            {
                self.node_ports.remove(node_port);
                self.node_ports.insert(found);
                *node_port = found;
            }
        }
    }
}

/// The Service object (also the merge patch of a change).
fn object(name: &str, svc: &Svc, host_lb: Option<&str>) -> Value {
    let ports: Vec<Value> = svc
        .ports
        .iter()
        .map(|(port, node_port)| {
            let mut p = json!({"name": format!("p{port}"), "protocol": "TCP", "port": port,
                               "targetPort": port});
            if svc.balanced {
                p["nodePort"] = json!(node_port);
            }
            p
        })
        .collect();
    let mut annotations = serde_json::Map::new();
    if svc.internal() {
        annotations.insert(INTERNAL.into(), json!("true"));
    }
    if svc.kind == Kind::Shared
        && let Some(id) = host_lb
    {
        annotations.insert(LB_ID.into(), json!(id));
    }
    if let Some(method) = svc.method {
        annotations.insert(LB_METHOD.into(), json!(method));
    }
    let mut spec = json!({
        "type": if svc.balanced { "LoadBalancer" } else { "ClusterIP" },
        "ports": ports,
        "selector": {"app": name},
    });
    if !svc.ranges.is_empty() && svc.balanced {
        spec["loadBalancerSourceRanges"] = json!(svc.ranges);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations},
        "spec": spec,
    })
}
