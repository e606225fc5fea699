//! When the chaos strikes the CCM: the planned SIGKILLs (every other one armed on the next
//! Octavia create), Octavia's API restart and the token revocations, drawn from the seed so that
//! each fits in the chaos; the schedule can never fail a run on its own (issue 35).
//!
//! An armed kill whose create does not come within [`arm_wait`] fires at random; the kills the
//! chaos had no time for fire after it, before the settle phase (chaos.rs). So every planned
//! kill happens, and at least [`MIN_KILLS`] are planned.

use std::time::Duration;

use crate::rng::Rng;

/// The fewest SIGKILLs a run plans (a longer run plans one a minute).
pub(crate) const MIN_KILLS: usize = 5;

/// The longest an armed kill waits for its Octavia create before it fires at random.
const ARM_WAIT: Duration = Duration::from_secs(45);

/// Octavia's API after its downtime: `openstack-up.sh --restart` starts it and waits until it
/// answers (5–15 s on a loaded machine). The restart is planned to end this long before the
/// chaos does.
const OCTAVIA_START: Duration = Duration::from_secs(40);

/// The moments, from the start of the chaos.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The SIGKILLs, in order; the even-numbered ones (0, 2, …) are armed.
    pub(crate) kills: Vec<Duration>,
    /// When Octavia's API stops, and for how many seconds.
    pub(crate) octavia_at: Duration,
    pub(crate) octavia_down: u64,
    /// When the CCM's current token is revoked, in order.
    pub(crate) revokes: Vec<Duration>,
}

impl Plan {
    /// Draws the plan for `run_for` of chaos. The draws come in the order they always did, so a
    /// seed keeps its moments; only Octavia's restart is pulled earlier when it would not end
    /// [`OCTAVIA_START`] before the chaos does.
    pub(crate) fn draw(rng: &mut Rng, run_for: Duration) -> Plan {
        let minutes = (run_for.as_secs_f64() / 60.0).round() as usize;
        let mut kills: Vec<Duration> =
            (0..MIN_KILLS.max(minutes)).map(|_| run_for.mul_f64(0.05 + 0.8 * rng.unit())).collect();
        kills.sort();
        let octavia_at = run_for.mul_f64(0.35 + 0.25 * rng.unit());
        let octavia_down = 8 + rng.below(13) as u64;
        let latest = run_for.saturating_sub(Duration::from_secs(octavia_down) + OCTAVIA_START);
        let mut revokes: Vec<Duration> =
            (0..3.max(minutes / 2)).map(|_| run_for.mul_f64(0.05 + 0.85 * rng.unit())).collect();
        revokes.sort();
        Plan { kills, octavia_at: octavia_at.min(latest), octavia_down, revokes }
    }
}

/// How long a kill armed with `left` of the chaos to go waits for its create: [`ARM_WAIT`] at
/// most, and at most half of what is left, so that it fires within the chaos either way.
pub(crate) fn arm_wait(left: Duration) -> Duration {
    ARM_WAIT.min(left / 2)
}
