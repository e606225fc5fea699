//! Desired tree vs Octavia's: the smallest list of calls that makes them equal, and none when
//! they already are. Pure: unit-tested without a network.
//!
//! Only listeners tagged with the Service's tag are this Service's (a shared load balancer
//! holds other Services' listeners too, which are never touched), and, while the Service's own
//! load balancer made by another controller is adopted, its untagged listeners named after it.
//! Listeners match by (protocol, port); members by (address, port); what Octavia cannot update
//! in place (a listener's protocol, a pool's protocol, a monitor's type) is deleted and created
//! again; names and tags that differ from ours (an adopted tree's) are updated in place.

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

/// Which listeners of a load balancer are the Service's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mine<'a> {
    /// The tags that name the Service (`ownership::service_tags`).
    pub(crate) tags: &'a [String],
    /// Load-balancer names after which a listener that names no Service is the Service's too
    /// (upstream's `listener_<i>_<lb>`, the in-tree provider's `listener_<lb>_<i>`): the name of
    /// its own load balancer while adopting it, and its in-tree name (made from its UID, so
    /// nobody else's), whose listeners the in-tree provider may have added after a downgrade.
    pub(crate) named_after: &'a [String],
}

impl Mine<'_> {
    fn owns(&self, listener: &Listener) -> bool {
        if listener.tags.iter().any(|t| self.tags.contains(t)) {
            return true;
        }
        let names_a_service =
            listener.tags.iter().any(|t| t.starts_with(names::LOAD_BALANCER_PREFIX));
        !names_a_service && self.named_after.iter().any(|lb| named_after(&listener.name, lb))
    }
}

/// `listener_<digits>_<lb>` or `listener_<lb>_<digits>`.
fn named_after(listener: &str, lb: &str) -> bool {
    let Some(rest) = listener.strip_prefix("listener_") else { return false };
    let index = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    rest.strip_suffix(lb).and_then(|r| r.strip_suffix('_')).is_some_and(index)
        || rest.strip_prefix(lb).and_then(|r| r.strip_prefix('_')).is_some_and(index)
}

/// The calls that turn `actual` into `desired` for the Service whose listeners are `mine`.
pub(crate) fn plan(
    desired: &[ListenerSpec],
    actual: &Tree,
    mine: Mine<'_>,
) -> Result<Vec<Op>, PortTaken> {
    let mine = |l: &&Listener| mine.owns(l);
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
    let tags = listener_tags(want, have);
    let relabel = have.name != want.name || sorted(&tags) != sorted(&have.tags);
    if relabel || listener_changed(want, have) {
        let spec = ListenerSpec { tags, ..want.clone() };
        ops.push(Op::UpdateListener { listener_id: have.id.clone(), spec });
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
    if pool.lb_algorithm != want_pool.lb_algorithm || pool.name != want_pool.name {
        let lb_algorithm = want_pool.lb_algorithm.clone();
        let name = want_pool.name.clone();
        ops.push(Op::UpdatePool { pool_id: pool.id.clone(), lb_algorithm, name });
    }
    let have_members = members_of(tree, pool);
    if members_changed(&want_pool.members, have_members) {
        let members = keeping_subnets(&want_pool.members, have_members);
        ops.push(Op::ReplaceMembers { pool_id: pool.id.clone(), members });
    }
    monitor_ops(want_pool.healthmonitor.as_ref(), monitor_of(tree, pool), pool, ops);
}

/// Our tags for the listener, then those of its own that name no Service (a user's).
fn listener_tags(want: &ListenerSpec, have: &Listener) -> Vec<String> {
    let mut tags = want.tags.clone();
    for tag in &have.tags {
        let ours = tag.starts_with(names::LOAD_BALANCER_PREFIX) || tag == names::OWNER_TAG;
        if !ours && !tags.contains(tag) {
            tags.push(tag.clone());
        }
    }
    tags
}

fn sorted(tags: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = tags.iter().map(String::as_str).collect();
    out.sort_unstable();
    out
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

/// `want`, where no subnet is asked for, with the subnet of the member already there at the
/// same address and port (upstream's CCM sets one): a batch update sends every member, and one
/// that is already right must come out of it as it was.
fn keeping_subnets(want: &[MemberSpec], have: &[crate::cloud::octavia::Member]) -> Vec<MemberSpec> {
    let subnet_of = |m: &MemberSpec| {
        let same =
            have.iter().find(|h| h.address == m.address && h.protocol_port == m.protocol_port);
        same.and_then(|h| h.subnet_id.clone())
    };
    want.iter()
        .map(|m| MemberSpec {
            subnet_id: m.subnet_id.clone().or_else(|| subnet_of(m)),
            ..m.clone()
        })
        .collect()
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
                == (have.delay, have.timeout, have.max_retries, have.max_retries_down)
                && want.name == have.name;
            if !same {
                ops.push(Op::UpdateMonitor { monitor_id: have.id.clone(), monitor: want.clone() });
            }
        }
    }
}

#[cfg(test)]
mod tests;
