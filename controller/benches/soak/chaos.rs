//! The chaos phase: random Service and node changes every 0.3–2.5 s while the plan
//! (schedule.rs) kills and restarts the CCM, stops Octavia's API and revokes tokens; then what
//! the chaos left of the plan, so that all of it has happened before the settle phase.

use std::process::Child;
use std::time::{Duration, Instant};

use crate::ccm::Ccm;
use crate::cluster::Cluster;
use crate::journal::note;
use crate::members;
use crate::openstack::Scripts;
use crate::real::Real;
use crate::rng::Rng;
use crate::schedule::{MIN_KILLS, Plan, arm_wait};
use crate::world::World;

const LB_CREATE: &str = "load-balancer/loadbalancer_create";

/// How often the Nodes' addresses are read and the new member lists checked.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// What the chaos works on.
pub(crate) struct Parts<'a> {
    pub(crate) world: &'a mut World,
    pub(crate) cluster: &'a dyn Cluster,
    pub(crate) ccm: &'a mut Ccm,
    pub(crate) real: &'a Real,
    pub(crate) scripts: &'a Scripts,
    /// The soak's OpenStack directory (for `openstack-up.sh --restart`).
    pub(crate) openstack_dir: &'a str,
    pub(crate) members: &'a mut members::Watch,
}

impl Parts<'_> {
    /// Reads the Nodes' addresses and checks the member lists sent since the last look.
    pub(crate) fn look(&mut self) {
        self.world.observe_nodes(self.cluster);
        self.members.check(self.real, &self.world.eligibility, &self.ccm.starts);
    }
}

/// What the chaos did, beyond the counts the World and the CCM keep.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) kills_after_create: usize,
    pub(crate) revoked: usize,
}

/// A kill armed on the next Octavia create.
#[derive(Debug, Clone, Copy)]
struct Armed {
    creates: usize,
    deadline: Instant,
    wait: Duration,
}

/// Runs the chaos for `run_for`, then whatever of `plan` is left. `rng` makes the changes,
/// `dice` the restart delays.
pub(crate) async fn run(
    p: &mut Parts<'_>,
    plan: &Plan,
    rng: &mut Rng,
    dice: &mut Rng,
    run_for: Duration,
) -> Outcome {
    let chaos = Instant::now();
    let mut out = Outcome::default();
    let mut kills = plan.kills.iter().copied().enumerate().peekable();
    let mut revokes = plan.revokes.iter().copied().peekable();
    let mut octavia: Option<Child> = None;
    let mut octavia_started = false;
    let mut armed: Option<Armed> = None;
    let mut restart_at: Option<Instant> = None;
    let mut next_action = Duration::ZERO;
    let mut next_look = Instant::now();
    while chaos.elapsed() < run_for {
        let now = chaos.elapsed();
        p.ccm.check_alive();
        if let Some(a) = armed {
            // One reading of the clock: a kill decided is a kill made.
            let created = p.real.counter.answered(LB_CREATE) > a.creates;
            if created || Instant::now() > a.deadline {
                if created {
                    kill(p.ccm, "right after an Octavia create answered");
                    out.kills_after_create += 1;
                } else {
                    let wait = a.wait.as_secs_f64();
                    kill(p.ccm, &format!("at random: no Octavia create within {wait:.0} s"));
                }
                armed = None;
                restart_at = Some(Instant::now() + dice.seconds(0.2, 5.0));
            }
        }
        if let Some(at) = restart_at
            && Instant::now() >= at
        {
            p.ccm.restart();
            restart_at = None;
            note("CCM started again");
        }
        if armed.is_none()
            && restart_at.is_none()
            && let Some((i, _)) = kills.next_if(|(_, at)| now >= *at)
        {
            if i % 2 == 0 {
                // Make sure a create comes: a new Service (room made when there is none).
                if !p.world.has_room() {
                    p.world.delete(p.cluster, rng);
                }
                let name = p.world.create(p.cluster, rng);
                let wait = arm_wait(run_for.saturating_sub(now));
                note(&format!(
                    "kill armed: the next Octavia create (Service {name} new; at random after {:.0} s)",
                    wait.as_secs_f64()
                ));
                let creates = p.real.counter.answered(LB_CREATE);
                armed = Some(Armed { creates, deadline: Instant::now() + wait, wait });
            } else {
                kill(p.ccm, "at random");
                restart_at = Some(Instant::now() + dice.seconds(0.2, 5.0));
            }
        }
        if !octavia_started && now >= plan.octavia_at {
            octavia = Some(stop_octavia(p, plan.octavia_down));
            octavia_started = true;
        }
        if let Some(child) = octavia.as_mut()
            && let Some(status) = child.try_wait().expect("wait for openstack-up.sh --restart")
        {
            assert!(status.success(), "openstack-up.sh --restart octavia-api failed: {status}");
            note("Octavia's API is back");
            octavia = None;
        }
        if revokes.next_if(|at| now >= *at).is_some()
            && let Some(token) = p.real.counter.last_token()
        {
            let status = p.real.revoke(&token).await;
            out.revoked += usize::from(status == 204);
            note(&format!("the CCM's current token revoked (Keystone: {status})"));
        }
        if now >= next_action {
            act(p, rng);
            next_action = now + rng.seconds(0.3, 2.5);
        }
        if Instant::now() >= next_look {
            p.look();
            next_look = Instant::now() + LOOK_EVERY;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // What the chaos left of the plan happens now, before the settle phase.
    if armed.take().is_some() {
        kill(p.ccm, "at random: the chaos ended before an Octavia create came");
        restart_at = Some(Instant::now() + dice.seconds(0.2, 5.0));
    }
    if let Some(at) = restart_at {
        tokio::time::sleep_until(at.into()).await;
        p.ccm.restart();
        note("CCM started again");
    }
    for (i, at) in kills {
        // The CCM back at work for a moment, as between kills in the chaos.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let why = format!(
            "at random, after the chaos: planned kill {} (+{:.0} s) had no time",
            i + 1,
            at.as_secs_f64()
        );
        kill(p.ccm, &why);
        tokio::time::sleep(dice.seconds(0.2, 5.0)).await;
        p.ccm.restart();
        note("CCM started again");
    }
    if !octavia_started {
        octavia = Some(stop_octavia(p, plan.octavia_down));
    }
    if let Some(mut child) = octavia.take() {
        let status = child.wait().expect("wait for openstack-up.sh --restart");
        assert!(status.success(), "openstack-up.sh --restart octavia-api failed: {status}");
        note("Octavia's API is back");
    }
    // The driver's own promise (schedule.rs), not the CCM's: every planned kill happened.
    assert!(
        p.ccm.kills >= plan.kills.len() && p.ccm.kills >= MIN_KILLS,
        "soak driver bug: {} SIGKILLs of {} planned (at least {MIN_KILLS}): every planned kill \
         must fire (chaos.rs)",
        p.ccm.kills,
        plan.kills.len()
    );
    p.look();
    out
}

/// SIGKILLs the CCM, which must be running (the loop never kills while a restart is pending).
fn kill(ccm: &mut Ccm, why: &str) {
    assert!(ccm.kill(), "soak driver bug: a kill ({why}) while the CCM was not running");
    note(&format!("SIGKILL #{} ({why})", ccm.kills));
}

fn stop_octavia(p: &Parts<'_>, down: u64) -> Child {
    note(&format!("Octavia's API stopped for {down} s"));
    p.scripts.restart_octavia(p.openstack_dir, down)
}

/// One random change: create (30 %), update (30 %), delete (15 %), a node change (25 %).
fn act(p: &mut Parts<'_>, rng: &mut Rng) {
    let roll = rng.below(100);
    let what = if roll < 30 && p.world.has_room() {
        Some(format!("create {}", p.world.create(p.cluster, rng)))
    } else if roll < 60 {
        p.world.update(p.cluster, rng).map(|u| format!("update {u}"))
    } else if roll < 75 {
        p.world.delete(p.cluster, rng).map(|n| format!("delete {n}"))
    } else {
        Some(format!("node {}", p.world.node_change(p.cluster, rng)))
    };
    if let Some(what) = what {
        note(&what);
    }
}
