//! The Octavia calls that make a load balancer what a Service wants, on the Octavia client
//! alone (no Service, no context, no Events: `ensure` and `cleanup` tell the Service):
//! the plan read from the load balancer's tree (`diff`, `hold`, an adoption's relabel), then
//! its calls one at a time with ACTIVE between, a 409 waited out; a create, a delete.

use super::hold::{self, Held};
use super::names::ServiceId;
use super::ownership::{self, Maker};
use super::wait::Waits;
use super::{Error, Result, diff};
use crate::cloud::load_balancing::Octavia;
use crate::cloud::octavia::{ACTIVE, Change, LoadBalancer, LoadBalancerSpec};

/// What [`Changes::plan`] makes of a load balancer, for which Service.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'a> {
    /// The Service's listeners, pools and members (the load balancer's own fields are not
    /// compared).
    pub(super) spec: &'a LoadBalancerSpec,
    pub(super) id: &'a ServiceId<'a>,
    /// Set for the Service's own load balancer: one another controller made is adopted (its
    /// untagged listeners are the Service's; our names and tags, the load balancer's last).
    pub(super) maker: Option<Maker>,
    /// No node is eligible: no pool that has members is emptied (`hold`).
    pub(super) keep_members: bool,
    /// `max-shared-lb`: how many Services a shared load balancer may serve.
    pub(super) max_shared_lb: usize,
}

/// The calls that make a load balancer what the [`Target`] says, read from its tree.
#[derive(Debug)]
pub(super) struct Plan {
    /// The load balancer as read, ACTIVE.
    pub(super) lb: LoadBalancer,
    /// The calls, in order; a relabel (adopting or renaming) last.
    pub(super) changes: Vec<Change>,
    /// The pools whose members were kept (`hold`).
    pub(super) held: Vec<Held>,
    /// Who made the load balancer the last change relabels as ours.
    pub(super) relabels: Option<Maker>,
}

impl Plan {
    /// What an Event says before the calls: `Updating load balancer <id>: <labels>`.
    pub(super) fn summary(&self) -> String {
        let labels: Vec<&str> = self.changes.iter().map(Change::label).collect();
        format!("Updating load balancer {}: {}", self.lb.id, labels.join(", "))
    }
}

/// The Octavia client and the waits' shared schedule.
#[derive(Debug, Clone, Copy)]
pub(super) struct Changes<'a, O> {
    pub(super) cloud: &'a O,
    pub(super) waits: &'a Waits,
}

impl<O: Octavia> Changes<'_, O> {
    /// Waits for `lb` to be ACTIVE (when it is not), reads its tree and plans the calls. A
    /// shared load balancer already serving `max_shared_lb` other Services, or a port another
    /// Service holds on it, leaves the Service alone.
    pub(super) async fn plan(&self, lb: LoadBalancer, target: Target<'_>) -> Result<Plan> {
        let Target { spec, id, maker, keep_members, max_shared_lb } = target;
        let lb = if lb.provisioning_status == ACTIVE { lb } else { self.active(&lb).await? };
        let doing = format!("reading load balancer {}", lb.id);
        let tree = self.cloud.tree(lb.clone()).await.map_err(Error::cloud(doing))?;
        let tags = id.tags();
        let sharing = diff::services_on(&tree);
        let others = sharing.iter().filter(|s| !tags.iter().any(|t| t == *s)).count();
        if maker.is_none()
            && !spec.listeners.is_empty()
            && others == sharing.len()
            && others >= max_shared_lb
        {
            let message = format!(
                "load balancer {} already serves {others} Services ([LoadBalancer] max-shared-lb \
                 = {max_shared_lb}): the Service waits until one leaves it, or until its \
                 load-balancer-id annotation names another one",
                lb.id
            );
            return Err(Error::LeftAlone { reason: "SharedLoadBalancerFull", message });
        }
        let mut named_after: Vec<String> = id.in_tree().map(str::to_owned).into_iter().collect();
        if maker.is_some_and(|m| m != Maker::Us) {
            named_after.push(lb.name.clone());
        }
        let mine = diff::Mine { tags, named_after: &named_after };
        let mut changes = diff::plan(&spec.listeners, &tree, mine).map_err(|taken| {
            let message = format!(
                "port {}/{} is already used by another Service on load balancer {}",
                taken.port, taken.protocol, lb.id
            );
            Error::LeftAlone { reason: "ListenerPortTaken", message }
        })?;
        let held = if keep_members { hold::keep_members(&mut changes, &tree) } else { Vec::new() };
        let relabel = maker.and_then(|maker| Some((maker, ownership::relabel(&lb, id, maker)?)));
        let relabels = relabel.map(|(maker, change)| {
            changes.push(change);
            maker
        });
        Ok(Plan { lb, changes, held, relabels })
    }

    /// Makes the plan's calls in order; the load balancer as the last wait left it.
    pub(super) async fn make(&self, plan: Plan) -> Result<LoadBalancer> {
        let mut lb = plan.lb;
        for change in &plan.changes {
            lb = self.apply(&lb, change).await?;
        }
        Ok(lb)
    }

    /// Makes `change`, waiting for ACTIVE after each call. A new listener is the listener,
    /// then its pool, then its members and monitor: Zed refuses a listener posted with its pool
    /// (500).
    pub(super) async fn apply(&self, lb: &LoadBalancer, change: &Change) -> Result<LoadBalancer> {
        match change {
            Change::CreateListener(spec) => {
                let (listener_id, lb) = self.call(lb, change).await?;
                let pool = Change::CreatePool { listener_id, pool: spec.default_pool.clone() };
                Box::pin(self.apply(&lb, &pool)).await
            }
            Change::CreatePool { pool, .. } => {
                let (pool_id, mut lb) = self.call(lb, change).await?;
                if !pool.members.is_empty() {
                    let members = pool.members.clone();
                    let change = Change::ReplaceMembers { pool_id: pool_id.clone(), members };
                    lb = self.call(&lb, &change).await?.1;
                }
                if let Some(monitor) = &pool.healthmonitor {
                    let change = Change::CreateMonitor { pool_id, monitor: monitor.clone() };
                    lb = self.call(&lb, &change).await?.1;
                }
                Ok(lb)
            }
            _ => Ok(self.call(lb, change).await?.1),
        }
    }

    /// One call, then the wait for ACTIVE: the created object's ID (empty if none) and the
    /// LB. A 409 (the load balancer locked by a writer outside this process, or left
    /// `PENDING_*` by one of ours that failed half-way) is waited out and the call made again,
    /// at most [`CONFLICT_RETRIES`] times, rather than failing the reconcile into its backoff.
    async fn call(&self, lb: &LoadBalancer, change: &Change) -> Result<(String, LoadBalancer)> {
        let mut conflicts = 0;
        let created = loop {
            match self.cloud.change(&lb.id, change).await {
                Ok(created) => break created,
                Err(error) if error.is_conflict() && conflicts < CONFLICT_RETRIES => {
                    conflicts += 1;
                    tracing::info!(
                        load_balancer = %lb.id,
                        change = change.label(),
                        "Octavia answered 409 (load balancer busy): waiting for ACTIVE to try again"
                    );
                    self.active(lb).await?;
                }
                Err(error) => {
                    let doing = format!("{} on load balancer {}", change.label(), lb.id);
                    return Err(Error::cloud(doing)(error));
                }
            }
        };
        let lb = self.active(lb).await?;
        Ok((created.unwrap_or_default(), lb))
    }

    /// A fully-populated create (or, `serial`, for providers that need it, the load balancer
    /// first and then one listener at a time), waited on until ACTIVE.
    pub(super) async fn create(
        &self,
        spec: &LoadBalancerSpec,
        serial: bool,
    ) -> Result<LoadBalancer> {
        let first = if serial {
            LoadBalancerSpec { listeners: Vec::new(), ..spec.clone() }
        } else {
            spec.clone()
        };
        let doing = format!("creating load balancer {:?}", spec.name);
        let lb = self.cloud.create(&first).await.map_err(Error::cloud(doing))?;
        tracing::info!(load_balancer = %lb.id, "load balancer created");
        let mut lb = self.active(&lb).await?;
        if serial {
            for listener in &spec.listeners {
                lb = self.apply(&lb, &Change::CreateListener(listener.clone())).await?;
            }
        }
        Ok(lb)
    }

    /// Deletes the load balancer with everything under it (`why` says which in the error),
    /// and waits until it is gone.
    pub(super) async fn delete(&self, lb: &LoadBalancer, why: &str) -> Result<()> {
        let doing = format!("deleting load balancer {}{why}", lb.id);
        self.cloud.delete(&lb.id).await.map_err(Error::cloud(doing))?;
        Ok(self.waits.gone(self.cloud, lb).await?)
    }

    /// Waits until `lb` is ACTIVE.
    pub(super) async fn active(&self, lb: &LoadBalancer) -> Result<LoadBalancer> {
        Ok(self.waits.active(self.cloud, lb).await?)
    }

    /// Waits until `lb` may be deleted (no longer `PENDING_*`).
    pub(super) async fn settled(&self, lb: &LoadBalancer) -> Result<LoadBalancer> {
        Ok(self.waits.settled(self.cloud, lb).await?)
    }
}

/// How often one call is made again after a 409: a conflict that outlasts this many waits for
/// ACTIVE is not a lock (a listener port taken, say) and fails the reconcile.
pub(super) const CONFLICT_RETRIES: u32 = 3;

#[cfg(test)]
mod tests;
