//! Desired tree vs Octavia's: the smallest list of calls that makes them equal, and none when
//! they already are. Pure: unit-tested without a network.
//!
//! Only listeners tagged with the Service's tag are this Service's (a shared load balancer
//! holds other Services' listeners too, which are never touched). Listeners match by
//! (protocol, port); members by (address, port); what Octavia cannot update in place (a
//! listener's protocol, a pool's protocol, a monitor's type) is deleted and created again.

use std::collections::BTreeSet;

use super::names;

use crate::cloud::octavia::{
    Change as Op, HealthMonitor, Listener, ListenerSpec, MemberSpec, MonitorSpec, Pool, Tree,
};

/// A port of the Service that another Service's listener already holds on a shared LB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortTaken {
    pub(crate) protocol: String,
    pub(crate) port: u16,
}

/// The Services whose listeners `tree` holds, by their tags (the load-balancer names,
/// `kube_service_…`): what `max-shared-lb` counts.
pub(crate) fn services_on(tree: &Tree) -> BTreeSet<&str> {
    let tags = tree.listeners.iter().flat_map(|l| l.tags.iter());
    tags.map(String::as_str).filter(|t| t.starts_with(names::LOAD_BALANCER_PREFIX)).collect()
}

/// The calls that turn `actual` into `desired` for the Service tagged `service_tag`.
pub(crate) fn plan(
    desired: &[ListenerSpec],
    actual: &Tree,
    service_tag: &str,
) -> Result<Vec<Op>, PortTaken> {
    let mine = |l: &&Listener| l.tags.iter().any(|t| t == service_tag);
    let key = |protocol: &str, port: u16| (protocol.to_owned(), port);
    let mut ops = Vec::new();
    for want in desired {
        let found = actual
            .listeners
            .iter()
            .find(|l| key(&l.protocol, l.protocol_port) == key(&want.protocol, want.protocol_port));
        match found {
            None => ops.push(Op::CreateListener(want.clone())),
            Some(have) if !mine(&have) => {
                return Err(PortTaken {
                    protocol: want.protocol.clone(),
                    port: want.protocol_port,
                });
            }
            Some(have) => listener_ops(want, have, actual, &mut ops),
        }
    }
    let wanted: BTreeSet<_> = desired.iter().map(|l| key(&l.protocol, l.protocol_port)).collect();
    for have in actual.listeners.iter().filter(mine) {
        if !wanted.contains(&key(&have.protocol, have.protocol_port)) {
            if let Some(pool_id) = &have.default_pool_id {
                ops.push(Op::DeletePool { pool_id: pool_id.clone() });
            }
            ops.push(Op::DeleteListener { listener_id: have.id.clone() });
        }
    }
    Ok(ops)
}

fn listener_ops(want: &ListenerSpec, have: &Listener, tree: &Tree, ops: &mut Vec<Op>) {
    if listener_changed(want, have) {
        ops.push(Op::UpdateListener { listener_id: have.id.clone(), spec: want.clone() });
    }
    let pool = have.default_pool_id.as_ref().and_then(|id| tree.pools.iter().find(|p| &p.id == id));
    let want_pool = &want.default_pool;
    let Some(pool) = pool.filter(|p| p.protocol == want_pool.protocol) else {
        if let Some(old) = pool {
            ops.push(Op::DeletePool { pool_id: old.id.clone() });
        }
        ops.push(Op::CreatePool { listener_id: have.id.clone(), pool: want_pool.clone() });
        return;
    };
    if pool.lb_algorithm != want_pool.lb_algorithm {
        let lb_algorithm = want_pool.lb_algorithm.clone();
        ops.push(Op::UpdatePool { pool_id: pool.id.clone(), lb_algorithm });
    }
    if members_changed(&want_pool.members, members_of(tree, pool)) {
        let members = want_pool.members.clone();
        ops.push(Op::ReplaceMembers { pool_id: pool.id.clone(), members });
    }
    monitor_ops(want_pool.healthmonitor.as_ref(), monitor_of(tree, pool), pool, ops);
}

fn listener_changed(want: &ListenerSpec, have: &Listener) -> bool {
    let have_cidrs = have.allowed_cidrs.clone().unwrap_or_default();
    let mut have_cidrs: Vec<String> =
        have_cidrs.into_iter().filter(|c| c != "0.0.0.0/0" && c != "::/0").collect();
    have_cidrs.sort();
    let timeout = |want: Option<u64>, have: Option<u64>| want.is_some() && want != have;
    have_cidrs != want.allowed_cidrs
        || have.connection_limit != want.connection_limit
        || timeout(want.timeout_client_data, have.timeout_client_data)
        || timeout(want.timeout_member_connect, have.timeout_member_connect)
        || timeout(want.timeout_member_data, have.timeout_member_data)
        || timeout(want.timeout_tcp_inspect, have.timeout_tcp_inspect)
}

fn members_of<'a>(tree: &'a Tree, pool: &Pool) -> &'a [crate::cloud::octavia::Member] {
    let found = tree.members.iter().find(|(id, _)| *id == pool.id);
    found.map_or(&[], |(_, members)| members.as_slice())
}

fn monitor_of<'a>(tree: &'a Tree, pool: &Pool) -> Option<&'a HealthMonitor> {
    let id = pool.healthmonitor_id.as_ref()?;
    tree.monitors.iter().find(|m| &m.id == id)
}

/// Members compare by address and port, and by subnet where one is asked for.
fn members_changed(want: &[MemberSpec], have: &[crate::cloud::octavia::Member]) -> bool {
    let wanted: BTreeSet<_> = want
        .iter()
        .map(|m| (m.address.as_str(), m.protocol_port, m.subnet_id.as_deref()))
        .collect();
    let subnet_asked = want.iter().any(|m| m.subnet_id.is_some());
    let present: BTreeSet<_> = have
        .iter()
        .map(|m| {
            let subnet = if subnet_asked { m.subnet_id.as_deref() } else { None };
            (m.address.as_str(), m.protocol_port, subnet)
        })
        .collect();
    wanted != present
}

fn monitor_ops(
    want: Option<&MonitorSpec>,
    have: Option<&HealthMonitor>,
    pool: &Pool,
    ops: &mut Vec<Op>,
) {
    match (want, have) {
        (None, None) => {}
        (None, Some(have)) => ops.push(Op::DeleteMonitor { monitor_id: have.id.clone() }),
        (Some(want), None) => {
            ops.push(Op::CreateMonitor { pool_id: pool.id.clone(), monitor: want.clone() });
        }
        (Some(want), Some(have)) if want.kind != have.kind => {
            ops.push(Op::DeleteMonitor { monitor_id: have.id.clone() });
            ops.push(Op::CreateMonitor { pool_id: pool.id.clone(), monitor: want.clone() });
        }
        (Some(want), Some(have)) => {
            let same = (want.delay, want.timeout, want.max_retries, want.max_retries_down)
                == (have.delay, have.timeout, have.max_retries, have.max_retries_down);
            if !same {
                ops.push(Op::UpdateMonitor { monitor_id: have.id.clone(), monitor: want.clone() });
            }
        }
    }
}

#[cfg(test)]
mod tests;
