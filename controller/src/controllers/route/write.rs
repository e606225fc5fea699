//! The router's writes of one resync: every stale route in one `remove_extraroutes`, every
//! missing one in one `add_extraroutes` (Neutron's atomic calls: another writer's routes are
//! never lost). When Neutron refuses a batch for its content (a quota, a next hop it cannot
//! reach), each node's routes go again on their own, so one node's fault stays its own. Without
//! `extraroute-atomic`, the whole list is written back guarded by the router's revision
//! (`If-Match`), re-read and redone when another writer came first.

use std::collections::{BTreeMap, HashSet};

use super::plan::Hop;
use super::{Error, Failure};
use crate::cloud::routes::{ExtraRoute, Router, Routes, Support, Written};
use crate::cloud::{self, session::chain};

/// Guarded writes redone after a 412 before the resync gives up (the next one starts over).
pub(crate) const ATTEMPTS: usize = 3;

/// How a failed router call is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The router cannot be used (gone, another project's, credentials): every node waits.
    Router,
    /// Neutron refused what was asked (400, 409): the nodes are tried one by one.
    Content,
    /// Neutron did not answer properly (5xx, timeout, connection): retried later as a whole.
    Transient,
}

/// Sorts a failed call.
pub(crate) fn class(error: &cloud::Error) -> Class {
    use osauth::ErrorKind;
    match error {
        cloud::Error::NotFound { .. } => Class::Router,
        cloud::Error::Call { source, .. } => match source.kind() {
            ErrorKind::AccessDenied => Class::Router,
            ErrorKind::InvalidInput | ErrorKind::Conflict => Class::Content,
            _ => Class::Transient,
        },
        _ => Class::Transient,
    }
}

/// A failed write: a call that failed, or a guarded write that kept finding the object changed.
#[derive(Debug)]
pub(crate) enum WriteError {
    Call(cloud::Error),
    Busy(String),
}

impl WriteError {
    pub(crate) fn class(&self) -> Class {
        match self {
            WriteError::Call(error) => class(error),
            WriteError::Busy(_) => Class::Transient,
        }
    }

    /// One line: the error and its causes.
    pub(crate) fn message(&self) -> String {
        match self {
            WriteError::Call(error) => chain(error),
            WriteError::Busy(what) => {
                format!("{what} kept changing under {ATTEMPTS} guarded writes (If-Match)")
            }
        }
    }

    /// The router-wide error, for a [`Class::Router`] failure.
    pub(crate) fn into_router(self) -> Error {
        match self {
            WriteError::Call(source) => Error::Router { source },
            WriteError::Busy(what) => Error::Busy { what },
        }
    }
}

impl From<cloud::Error> for WriteError {
    fn from(error: cloud::Error) -> Self {
        WriteError::Call(error)
    }
}

/// Removes `stale` from the router (`router` is what this resync read; the fallback updates it).
pub(crate) async fn remove<R: Routes>(
    cloud: &R,
    support: Support,
    router: &mut Router,
    stale: &[ExtraRoute],
) -> Result<(), WriteError> {
    if stale.is_empty() {
        return Ok(());
    }
    if support.atomic {
        return Ok(cloud.remove_routes(&router.id, stale).await?);
    }
    let gone: HashSet<&ExtraRoute> = stale.iter().collect();
    replace(cloud, support, router, |routes| routes.retain(|r| !gone.contains(r))).await
}

/// Adds the missing routes (`(plan index, route)`); returns the nodes whose routes could not
/// be made, with why. A router-wide failure is an error: no node could be served.
pub(crate) async fn add<R: Routes>(
    cloud: &R,
    support: Support,
    router: &mut Router,
    missing: &[(usize, Hop)],
) -> Result<BTreeMap<usize, Failure>, Error> {
    let mut failed = BTreeMap::new();
    if missing.is_empty() {
        return Ok(failed);
    }
    let all: Vec<Hop> = missing.iter().map(|(_, hop)| *hop).collect();
    let error = match add_batch(cloud, support, router, &all).await {
        Ok(()) => return Ok(failed),
        Err(error) => error,
    };
    match error.class() {
        Class::Router => return Err(error.into_router()),
        Class::Transient => {
            let failure = Failure::transient(error.message());
            for (node, _) in missing {
                failed.insert(*node, failure.clone());
            }
            return Ok(failed);
        }
        Class::Content => {
            tracing::info!(error = %error.message(), routes = all.len(),
                "Neutron refused the batch of routes; adding them node by node");
        }
    }
    // One node at a time: whose routes does Neutron refuse?
    let mut by_node: BTreeMap<usize, Vec<Hop>> = BTreeMap::new();
    for (node, hop) in missing {
        by_node.entry(*node).or_default().push(*hop);
    }
    for (node, hops) in by_node {
        if let Err(error) = add_batch(cloud, support, router, &hops).await {
            match error.class() {
                Class::Router => return Err(error.into_router()),
                Class::Content => failed.insert(node, Failure::refused(error.message(), &hops)),
                Class::Transient => failed.insert(node, Failure::transient(error.message())),
            };
        }
    }
    Ok(failed)
}

/// One addition: atomic, or the fallback's guarded rewrite.
async fn add_batch<R: Routes>(
    cloud: &R,
    support: Support,
    router: &mut Router,
    hops: &[Hop],
) -> Result<(), WriteError> {
    let routes: Vec<ExtraRoute> = hops.iter().map(Hop::wire).collect();
    if support.atomic {
        return Ok(cloud.add_routes(&router.id, &routes).await?);
    }
    replace(cloud, support, router, |list| {
        let have: HashSet<Option<Hop>> = list.iter().map(Hop::parse).collect();
        list.extend(routes.iter().filter(|r| !have.contains(&Hop::parse(r))).cloned());
    })
    .await
}

/// Read-modify-write of the whole list under the router's revision, redone (re-read) when
/// another writer came first.
async fn replace<R: Routes>(
    cloud: &R,
    support: Support,
    router: &mut Router,
    change: impl Fn(&mut Vec<ExtraRoute>),
) -> Result<(), WriteError> {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            *router = cloud.router(&router.id).await?;
        }
        let mut routes = router.routes.clone();
        change(&mut routes);
        if routes == router.routes {
            return Ok(());
        }
        let revision = support.if_match.then_some(router.revision_number);
        match cloud.replace_routes(&router.id, &routes, revision).await? {
            Written::Done(updated) => {
                *router = updated;
                return Ok(());
            }
            Written::Stale => {
                tracing::debug!(router = %router.id, attempt, "router changed meanwhile; read again");
            }
        }
    }
    Err(WriteError::Busy(format!("router {}", router.id)))
}
