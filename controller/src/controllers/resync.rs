//! `cloud-node`'s address resync: every period, the servers changed since the last one (Nova
//! `changes-since`) and only their ports; a full list at start, after any error and every
//! [`FULL_EVERY`]th resync. See: issue 16.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;

use super::node::{node_addresses, patch_addresses};
use super::{Context, ControllerName, Error, Result, UNINITIALIZED_TAINT, has_taint, lookup};
use crate::cloud::{Cloud, Instance, Lookup, Port, Server};
use crate::controllers::projection::CachedNode;

/// One resync in this many lists every server and port: the safety net for what
/// `changes-since` cannot show (a port changed under a server whose `updated` did not move).
pub const FULL_EVERY: u32 = 10;

/// The next `changes-since` starts this long before the newest `updated` seen (Nova's clock,
/// never ours), so that a change whose transaction committed late still shows.
const OVERLAP: SignedDuration = SignedDuration::from_secs(60);

/// Where the next resync starts. The default makes it a full list.
#[derive(Debug, Default)]
pub struct Cursor {
    /// The newest `updated` seen so far; `None`: the next resync is a full list.
    newest: Option<Timestamp>,
    /// Servers already handled whose `updated` falls in the overlap (they come back there):
    /// ID → `updated`. Bounded by the changes of one [`OVERLAP`].
    seen: HashMap<String, Timestamp>,
    /// Incremental resyncs since the last full one.
    incremental: u32,
}

impl Cursor {
    /// The `changes-since` of the next resync, or `None` for a full list.
    fn since(&self) -> Option<Timestamp> {
        let newest = self.newest.filter(|_| self.incremental + 1 < FULL_EVERY)?;
        Some(newest - OVERLAP)
    }

    /// Records the servers a list returned; `full` restarts the count to the next full list.
    fn advance(&mut self, servers: &[Server], full: bool) {
        let stamps = servers.iter().filter_map(|s| Some((&s.id, s.updated.parse().ok()?)));
        for (id, updated) in stamps {
            self.newest = self.newest.max(Some(updated));
            self.seen.insert(id.clone(), updated);
        }
        if let Some(newest) = self.newest {
            self.seen.retain(|_, updated| *updated >= newest - OVERLAP);
        }
        self.incremental = if full { 0 } else { self.incremental + 1 };
    }

    /// True when this server, at this `updated`, was handled already.
    fn is_seen(&self, server: &Server) -> bool {
        server
            .updated
            .parse()
            .ok()
            .is_some_and(|u: Timestamp| self.seen.get(&server.id) == Some(&u))
    }
}

/// What one resync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// A full list (else `changes-since`).
    pub full: bool,
    /// Servers of nodes whose addresses were compared (all on a full resync).
    pub compared: usize,
    /// Nodes whose `status.addresses` was written.
    pub patched: usize,
}

/// One address resync: a full or incremental server list, the ports of the servers to compare,
/// then a status patch only where the addresses changed. Any error makes the next one full.
pub async fn resync<C: Cloud>(
    ctx: &Context<C>,
    nodes: &[Arc<CachedNode>],
    cursor: &mut Cursor,
) -> Result<Report> {
    let since = cursor.since();
    let result = match since {
        None => full(ctx, nodes, cursor).await,
        Some(since) => incremental(ctx, nodes, cursor, since).await,
    };
    if !matches!(result, Ok((_, false))) {
        *cursor = Cursor::default();
    }
    result.map(|(report, _)| report)
}

/// Initialized nodes with how each finds its server.
fn initialized<'a, C: Cloud>(
    ctx: &Context<C>,
    nodes: &'a [Arc<CachedNode>],
) -> impl Iterator<Item = (&'a CachedNode, Lookup)> {
    let region = ctx.cloud.region();
    let usable = nodes.iter().filter(|n| !has_taint(n, UNINITIALIZED_TAINT));
    usable.filter_map(move |n| Some((n.as_ref(), lookup(n, region.as_deref()).ok()?)))
}

fn cloud_error(source: crate::cloud::Error) -> Error {
    Error::Cloud { node: "*".into(), source }
}

/// Every server and every port: the start, the safety net, and the way back from an error.
async fn full<C: Cloud>(
    ctx: &Context<C>,
    nodes: &[Arc<CachedNode>],
    cursor: &mut Cursor,
) -> Result<(Report, bool)> {
    let servers = ctx.cloud.servers(None).await.map_err(cloud_error)?;
    let ports = ctx.cloud.ports(None).await.map_err(cloud_error)?;
    *cursor = Cursor::default();
    cursor.advance(&servers, true);
    let mut names: HashMap<String, Vec<String>> = HashMap::new();
    for server in &servers {
        names.entry(server.name.clone()).or_default().push(server.id.clone());
    }
    let mut by_id: HashMap<String, Server> =
        servers.into_iter().map(|s| (s.id.clone(), s)).collect();
    let mut by_device = group(ports);
    let mut work = Vec::new();
    for (node, how) in initialized(ctx, nodes) {
        let id = match how {
            Lookup::Id(id) => Some(id),
            // A name is usable only when exactly one server carries it.
            Lookup::Name(name) => {
                names.get(&name).filter(|ids| ids.len() == 1).map(|v| v[0].clone())
            }
        };
        if let Some(server) = id.and_then(|id| by_id.remove(&id)) {
            let ports = by_device.remove(&server.id).unwrap_or_default();
            work.push((node, Instance { server, ports, flavor_name: None }));
        }
    }
    let (patched, failed) = apply(ctx, &work).await;
    Ok((Report { full: true, compared: work.len(), patched }, failed))
}

/// The servers changed since `since` (deleted ones left to the lifecycle controller) and only
/// their ports. Nodes found by name wait for the next full resync: a change list cannot tell
/// whether a name is still unique.
async fn incremental<C: Cloud>(
    ctx: &Context<C>,
    nodes: &[Arc<CachedNode>],
    cursor: &mut Cursor,
    since: Timestamp,
) -> Result<(Report, bool)> {
    let servers = ctx.cloud.servers(Some(&since.to_string())).await.map_err(cloud_error)?;
    let mut changed: HashMap<&str, &Server> = servers
        .iter()
        .filter(|s| s.status != "DELETED" && !cursor.is_seen(s))
        .map(|s| (s.id.as_str(), s))
        .collect();
    let mut matched: Vec<(&CachedNode, Server)> = Vec::new();
    for (node, how) in initialized(ctx, nodes) {
        if let Lookup::Id(id) = how
            && let Some(server) = changed.remove(id.as_str())
        {
            matched.push((node, server.clone()));
        }
    }
    let ids: Vec<String> = matched.iter().map(|(_, s)| s.id.clone()).collect();
    // No request when no node's server changed (`Cloud::ports` asks for none then).
    let ports = ctx.cloud.ports(Some(&ids)).await.map_err(cloud_error)?;
    let mut by_device = group(ports);
    let work: Vec<(&CachedNode, Instance)> = matched
        .into_iter()
        .map(|(node, server)| {
            let ports = by_device.remove(&server.id).unwrap_or_default();
            (node, Instance { server, ports, flavor_name: None })
        })
        .collect();
    let (patched, failed) = apply(ctx, &work).await;
    cursor.advance(&servers, false);
    Ok((Report { full: false, compared: work.len(), patched }, failed))
}

fn group(ports: Vec<Port>) -> HashMap<String, Vec<Port>> {
    let mut by_device: HashMap<String, Vec<Port>> = HashMap::new();
    for port in ports {
        by_device.entry(port.device_id.clone()).or_default().push(port);
    }
    by_device
}

/// Patches the nodes whose addresses differ; returns how many, and whether any failed.
async fn apply<C: Cloud>(ctx: &Context<C>, work: &[(&CachedNode, Instance)]) -> (usize, bool) {
    let (mut patched, mut failed) = (0, false);
    for (node, instance) in work {
        let result = match node_addresses(ctx, node, instance) {
            Ok(wanted) => patch_addresses(ctx, node, &wanted).await,
            Err(error) => Err(error),
        };
        match result {
            Ok(Some(_)) => patched += 1,
            Ok(None) => {}
            Err(error) => {
                failed = true;
                tracing::warn!(node = %node.name_any(), error = %crate::cloud::session::chain(&error), "address refresh failed");
            }
        }
    }
    (patched, failed)
}

/// Resyncs addresses every `period` until the process ends.
pub(crate) async fn run<C: Cloud>(ctx: Arc<Context<C>>, period: Duration) {
    if !super::synced::node_cache(&ctx.nodes, ControllerName::CloudNode).await {
        return std::future::pending().await;
    }
    // The first resync waits one period: initialization has just written fresh addresses.
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut cursor = Cursor::default();
    loop {
        ticker.tick().await;
        let nodes = ctx.nodes.state();
        match resync(&ctx, &nodes, &mut cursor).await {
            Ok(report) => tracing::debug!(nodes = nodes.len(), ?report, "addresses refreshed"),
            Err(error) => {
                tracing::warn!(error = %crate::cloud::session::chain(&error), "address refresh skipped; the next one lists everything")
            }
        }
    }
}

#[cfg(test)]
mod tests;
