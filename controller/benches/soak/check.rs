//! The end state the soak demands, read from OpenStack (scripts/openstack/soak_state.py state)
//! and the API server: every live Service has exactly one load balancer with the right
//! listeners, members, status and addresses; nothing of a deleted (or no longer LoadBalancer)
//! Service is left; no finalizer is stuck.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::cluster::Cluster;
use crate::journal;
use crate::world::{HOST, Kind, NAMESPACE, World};

/// Nodes with this label are never members (Kubernetes' well-known label; the CCM's rule).
const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

const OWNER_TAG: &str = "kube_managed_by_openstack-cloud-controller-manager";

#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Live Services not as they should be.
    pub(crate) problems: Vec<String>,
    /// Objects of ours that nothing live owns.
    pub(crate) orphans: Vec<String>,
    /// A second object where one belongs.
    pub(crate) duplicates: Vec<String>,
}

impl Report {
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty() && self.orphans.is_empty() && self.duplicates.is_empty()
    }

    /// Every line, with its kind: stdout and the report.
    pub(crate) fn print(&self) {
        for line in self.lines() {
            journal::out(&format!("soak: {line}"));
        }
    }

    /// `problem: …`, `orphan: …`, `duplicate: …`, one per finding.
    pub(crate) fn lines(&self) -> Vec<String> {
        let kinds = [
            ("problem", &self.problems),
            ("orphan", &self.orphans),
            ("duplicate", &self.duplicates),
        ];
        kinds
            .iter()
            .flat_map(|(title, list)| list.iter().map(move |line| format!("{title}: {line}")))
            .collect()
    }
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

fn describe(kind: &str, v: &Value) -> String {
    format!("{kind} {} {}", text(v, "id"), text(v, "name"))
}

/// The addresses pool members must have: the InternalIP of every Ready Node not excluded from
/// load balancers (on the real server, Nodes not the soak's count too: the CCM serves them).
fn member_ips(cluster: &dyn Cluster) -> Vec<String> {
    let mut ips = Vec::new();
    for node in cluster.list("nodes") {
        let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
        if labels.is_some_and(|l| l.contains_key(EXCLUDE_LABEL))
            || node.pointer("/metadata/deletionTimestamp").is_some()
        {
            continue;
        }
        let conditions = node.pointer("/status/conditions").and_then(Value::as_array);
        let ready = conditions
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
        let addresses = node.pointer("/status/addresses").and_then(Value::as_array);
        let ip = addresses
            .and_then(|a| a.iter().find(|a| a["type"] == "InternalIP"))
            .map(|a| text(a, "address"));
        if let (true, Some(ip)) = (ready, ip) {
            ips.push(ip);
        }
    }
    ips
}

/// The soak's Services as the API server has them, by name (one list, not a get each).
fn services(cluster: &dyn Cluster) -> BTreeMap<String, Value> {
    cluster
        .list("services")
        .into_iter()
        .filter(|s| s.pointer("/metadata/namespace").and_then(Value::as_str) == Some(NAMESPACE))
        .filter_map(|s| Some((s.pointer("/metadata/name")?.as_str()?.to_owned(), s)))
        .collect()
}

/// What the API server alone shows is not done yet: a LoadBalancer Service without an
/// ingress, a ClusterIP one with one, a deleted one still there (its finalizer).
pub(crate) fn pending(world: &World, cluster: &dyn Cluster) -> Vec<String> {
    let services = services(cluster);
    let mut left = Vec::new();
    for (name, svc) in &world.live {
        let object = services.get(name);
        let ingress = object.and_then(|o| o.pointer("/status/loadBalancer/ingress/0/ip"));
        if svc.balanced != ingress.is_some() {
            left.push(format!(
                "Service {name}: ingress {ingress:?} (type LoadBalancer: {})",
                svc.balanced
            ));
        }
    }
    for name in &world.deleted {
        if services.contains_key(name) {
            left.push(format!("deleted Service {name} is still there"));
        }
    }
    left
}

/// `decoys`: IDs the checks leave out (compared separately, field by field).
pub(crate) fn check(
    world: &World,
    api: &dyn Cluster,
    state: &Value,
    cluster: &str,
    decoys: &BTreeSet<String>,
) -> Report {
    let mut r = Report::default();
    let list = |key: &str| state[key].as_array().cloned().unwrap_or_default();
    let (lbs, fips, groups, ports) =
        (list("loadbalancers"), list("floating_ips"), list("security_groups"), list("ports"));
    let lbs: Vec<Value> = lbs.into_iter().filter(|l| !decoys.contains(&text(l, "id"))).collect();
    let prefix = format!("kube_service_{cluster}_{NAMESPACE}_");
    let lb_name = |svc: &str| format!("{prefix}{svc}");
    let ips = member_ips(api);
    let services = services(api);

    // Which load balancer names, groups and floating IPs live Services own.
    let mut owned_lbs = BTreeSet::new();
    let mut owned_groups = BTreeSet::new();
    let mut owned_fips = BTreeSet::new();
    for (name, svc) in &world.live {
        let Some(object) = services.get(name) else {
            r.problems.push(format!("Service {name} is gone from the API server"));
            continue;
        };
        let ingress = object.pointer("/status/loadBalancer/ingress/0/ip").and_then(Value::as_str);
        if !svc.balanced {
            if let Some(ip) = ingress {
                r.problems.push(format!("Service {name} (ClusterIP now) still has ingress {ip}"));
            }
            continue;
        }
        let uid = object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
        let group = format!("lb-sg-{uid}-{NAMESPACE}-{name}");
        owned_groups.insert(group.clone());
        let n = groups.iter().filter(|g| g["name"] == group.as_str()).count();
        match n {
            1 => {}
            0 => r.problems.push(format!("Service {name}: no security group {group}")),
            _ => r.duplicates.push(format!("{n} security groups {group}")),
        }
        // The load balancer it is served by: its own, or the host's for a shared one.
        let lb_of = if svc.kind == Kind::Shared { HOST } else { name.as_str() };
        let mine: Vec<&Value> = lbs.iter().filter(|l| l["name"] == lb_name(lb_of)).collect();
        if svc.kind != Kind::Shared {
            owned_lbs.insert(lb_name(name));
        }
        let lb = match mine.as_slice() {
            [lb] => *lb,
            [] => {
                r.problems.push(format!("Service {name}: no load balancer {}", lb_name(lb_of)));
                continue;
            }
            many => {
                if svc.kind != Kind::Shared {
                    let ids: Vec<String> = many.iter().map(|l| text(l, "id")).collect();
                    r.duplicates.push(format!("load balancers {} {ids:?}", lb_name(lb_of)));
                }
                continue;
            }
        };
        if lb["provisioning_status"] != "ACTIVE" {
            r.problems.push(format!(
                "{}: {}",
                describe("loadbalancer", lb),
                lb["provisioning_status"]
            ));
        }
        let tags: Vec<&str> =
            lb["tags"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if !tags.contains(&OWNER_TAG) {
            r.problems.push(format!("{}: no tag {OWNER_TAG}", describe("loadbalancer", lb)));
        }
        // Listeners and members: the Service's ports (the host: its own and every live
        // shared Service's).
        let mut want: BTreeMap<u16, u16> = BTreeMap::new();
        if svc.kind == Kind::Shared {
            want.extend(svc.ports.iter().copied());
        } else {
            want.extend(svc.ports.iter().copied());
            if name == HOST {
                for s in world.live.values().filter(|s| s.kind == Kind::Shared && s.balanced) {
                    want.extend(s.ports.iter().copied());
                }
            }
        }
        let listeners = lb["listeners"].as_array().cloned().unwrap_or_default();
        let pools: BTreeMap<String, Vec<String>> = lb["pools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let members = p["members"].as_array().into_iter().flatten();
                (text(p, "id"), members.filter_map(|m| m.as_str().map(str::to_owned)).collect())
            })
            .collect();
        for (port, node_port) in &want {
            let found: Vec<&Value> = listeners.iter().filter(|l| l["port"] == *port).collect();
            let Some(listener) = found.first() else {
                r.problems.push(format!("Service {name}: no listener on port {port}"));
                continue;
            };
            if found.len() > 1 {
                r.duplicates.push(format!(
                    "{} listeners on port {port} of {}",
                    found.len(),
                    lb_name(lb_of)
                ));
            }
            let mut expected: Vec<String> =
                ips.iter().map(|ip| format!("{ip}:{node_port}")).collect();
            expected.sort();
            let members = pools.get(&text(listener, "pool")).cloned().unwrap_or_default();
            if members != expected {
                r.problems.push(format!(
                    "Service {name}: port {port} has members {members:?}, want {expected:?}"
                ));
            }
        }
        if svc.kind != Kind::Shared {
            for l in &listeners {
                let port = l["port"].as_u64().unwrap_or_default() as u16;
                if !want.contains_key(&port) {
                    r.problems.push(format!("Service {name}: a listener on port {port} too"));
                }
            }
        }
        // The address: the floating IP on the VIP port, or the VIP.
        let vip_port = text(lb, "vip_port_id");
        let on_vip: Vec<&Value> =
            fips.iter().filter(|f| f["port_id"] == vip_port.as_str()).collect();
        for f in &on_vip {
            owned_fips.insert(text(f, "id"));
        }
        let want_ip = if svc.internal() {
            if !on_vip.is_empty() {
                r.problems.push(format!("Service {name} is internal but has a floating IP"));
            }
            Some(text(lb, "vip_address"))
        } else {
            match on_vip.as_slice() {
                [f] => Some(text(f, "address")),
                [] => {
                    r.problems.push(format!("Service {name}: no floating IP on its VIP"));
                    None
                }
                many => {
                    let ids: Vec<String> = many.iter().map(|f| text(f, "id")).collect();
                    r.duplicates.push(format!("floating IPs on the VIP of {name}: {ids:?}"));
                    None
                }
            }
        };
        if let Some(want_ip) = want_ip
            && ingress != Some(want_ip.as_str())
        {
            r.problems.push(format!("Service {name}: ingress {ingress:?}, want {want_ip}"));
        }
    }

    // Deleted Services: gone, finalizer and all.
    for name in &world.deleted {
        if let Some(object) = services.get(name) {
            let finalizers = object.pointer("/metadata/finalizers").cloned().unwrap_or_default();
            r.problems
                .push(format!("deleted Service {name} is still there (finalizers {finalizers})"));
        }
    }

    // Ours and owned by nothing live.
    let lb_ids: BTreeSet<String> = lbs.iter().map(|l| text(l, "id")).collect();
    for lb in &lbs {
        let name = text(lb, "name");
        if name.starts_with(&prefix) && !owned_lbs.contains(&name) {
            r.orphans.push(describe("loadbalancer", lb));
        }
    }
    for f in &fips {
        let id = text(f, "id");
        let marks = f["tags"].to_string() + &text(f, "description");
        if marks.contains(cluster) && !owned_fips.contains(&id) && !decoys.contains(&id) {
            r.orphans.push(format!(
                "floating-ip {id} {} ({})",
                text(f, "address"),
                text(f, "description")
            ));
        }
    }
    for g in &groups {
        let name = text(g, "name");
        if name.starts_with("lb-sg-")
            && !owned_groups.contains(&name)
            && !decoys.contains(&text(g, "id"))
        {
            r.orphans.push(describe("security-group", g));
        }
    }
    for p in &ports {
        let name = text(p, "name");
        if let Some(lb) = name.strip_prefix("octavia-lb-")
            && !lb_ids.contains(lb)
            && !decoys.contains(lb)
        {
            r.orphans.push(format!(
                "{} (VIP port of a load balancer that is gone)",
                describe("port", p)
            ));
        }
    }
    r
}
