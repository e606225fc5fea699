//! The servers of many tainted nodes found at once: when at least [`BATCH_FROM`] nodes wait
//! for initialization (a cluster's first boot, a scale-up, a CCM started late), one server
//! list and one port list answer every one of them, instead of two requests per node. Each
//! answer is used once and only while it is fresh ([`FRESH`]); a node the lists did not have
//! (a server made since, a name that is not unique, a Nova older than 2.47 that does not embed
//! the flavor's name) is looked up on its own, as before, with the same errors.
//! See: issue 40 (1,000 nodes initialized in half a second).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::FutureExt;

use super::{Context, UNINITIALIZED_TAINT, has_taint, lookup};
use crate::cloud::{Cloud, Instance, Lookup, Port};

/// Fewer tainted nodes than this are looked up one by one: a project's whole server list costs
/// more than a few lookups.
pub(crate) const BATCH_FROM: usize = 16;

/// How long a list answers lookups: long enough for thousands of nodes, short enough that a
/// server replaced under a reused name is not taken for the old one.
pub(crate) const FRESH: Duration = Duration::from_secs(5);

/// The lists last taken, shared by every reconcile of the node controller.
#[derive(Debug, Default)]
pub(crate) struct Lookups {
    taken: tokio::sync::Mutex<Option<Taken>>,
}

/// The tainted nodes' servers of one list, each with its ports, until used.
#[derive(Debug)]
struct Taken {
    at: Instant,
    by_id: HashMap<String, Instance>,
    /// Server name → the IDs of every server so named (a name lookup needs exactly one).
    by_name: HashMap<String, Vec<String>>,
}

impl Lookups {
    /// The instance of `how` from the lists, taking them first when enough nodes wait;
    /// `None`: look it up on its own.
    pub(crate) async fn instance<C: Cloud>(
        &self,
        ctx: &Context<C>,
        how: &Lookup,
    ) -> Option<Instance> {
        let mut taken = self.taken.lock().await;
        if taken.as_ref().is_none_or(|t| t.at.elapsed() >= FRESH) {
            *taken = None;
            let waiting = waiting(ctx);
            if waiting.len() < BATCH_FROM {
                return None;
            }
            *taken = Some(take(ctx, &waiting).await);
        }
        let lists = taken.as_mut()?;
        let id = match how {
            Lookup::Id(id) => id.clone(),
            Lookup::Name(name) => match lists.by_name.get(name).map(Vec::as_slice) {
                Some([id]) => id.clone(),
                _ => return None,
            },
        };
        let found = lists.by_id.remove(&id)?;
        if lists.by_id.is_empty() {
            // Every answer used: nothing held until the next burst.
            *taken = None;
        }
        Some(found)
    }
}

/// How each node waiting for initialization finds its server (none before the Node cache has
/// synced).
fn waiting<C: Cloud>(ctx: &Context<C>) -> Vec<Lookup> {
    // The node controller starts only once the cache is ready (kube-runtime holds its runner
    // until then); any other caller is never made to wait here.
    if !matches!(ctx.nodes.wait_until_ready().now_or_never(), Some(Ok(()))) {
        return Vec::new();
    }
    let region = ctx.cloud.region();
    let nodes = ctx.nodes.state();
    let tainted = nodes.iter().filter(|n| has_taint(n, UNINITIALIZED_TAINT));
    tainted.filter_map(|n| lookup(n, region.as_deref()).ok()).collect()
}

/// One server list and one port list, kept for the `waiting` nodes' servers only. A failed
/// list is logged and answers nothing until it is stale: each node is then looked up (and
/// fails, or not) on its own, and the lists are not asked again per node.
async fn take<C: Cloud>(ctx: &Context<C>, waiting: &[Lookup]) -> Taken {
    let mut taken = Taken { at: Instant::now(), by_id: HashMap::new(), by_name: HashMap::new() };
    let listed = async {
        let servers = ctx.cloud.servers(None).await?;
        let ports = ctx.cloud.ports(None).await?;
        Ok::<_, crate::cloud::Error>((servers, ports))
    };
    let (servers, ports) = match listed.await {
        Ok(lists) => lists,
        Err(error) => {
            let error = crate::cloud::session::chain(&error);
            tracing::warn!(%error, "cannot list the servers of the nodes to initialize; looking them up one by one");
            return taken;
        }
    };
    let mut ids = HashSet::new();
    let mut names = HashSet::new();
    for how in waiting {
        match how {
            Lookup::Id(id) => ids.insert(id.as_str()),
            Lookup::Name(name) => names.insert(name.as_str()),
        };
    }
    let mut by_device: HashMap<String, Vec<Port>> = HashMap::new();
    for port in ports {
        by_device.entry(port.device_id.clone()).or_default().push(port);
    }
    for server in servers {
        if names.contains(server.name.as_str()) {
            taken.by_name.entry(server.name.clone()).or_default().push(server.id.clone());
        }
        let wanted = ids.contains(server.id.as_str()) || names.contains(server.name.as_str());
        // Before Nova 2.47 the flavor's name needs its own request: left to the lookup.
        let Some(flavor_name) = server.flavor.original_name.clone().filter(|_| wanted) else {
            continue;
        };
        let ports = by_device.remove(&server.id).unwrap_or_default();
        let instance = Instance { server, ports, flavor_name: Some(flavor_name) };
        taken.by_id.insert(instance.server.id.clone(), instance);
    }
    tracing::debug!(
        waiting = waiting.len(),
        found = taken.by_id.len(),
        "servers listed for initialization"
    );
    taken
}

#[cfg(test)]
mod tests;
