//! The start-up race detector's rule (issue 35): a member list the CCM sent to Octavia must not
//! leave out a node the soak had kept eligible for [`GRACE`] before it.
//!
//! The CCM once replaced every pool's members with an empty list at each restart, for the
//! seconds its Node list took. This rule catches that class (a write from a node view that lags
//! the cluster) whatever the cause, from the lists alone. Eligible means what the CCM's member
//! rule asks (controller `service/desired.rs`, `eligible`): present, Ready, not excluded, with an
//! InternalIP. The soak never excludes a node (no exclude label) and makes no Service with a
//! member selection (no node selector, no `externalTrafficPolicy: Local`: world.rs), so every
//! pool it causes must hold every eligible node. Pure and std-only, so that it can be tested
//! without a stack.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a node must have been eligible before a list may not leave it out: the CCM notices
/// a node change within about 5–10 s; 30 s is generous, not blind.
pub(crate) const GRACE: Duration = Duration::from_secs(30);

/// Each node's eligibility over time, as the soak made it and saw it.
#[derive(Debug, Default)]
pub(crate) struct Eligibility {
    nodes: BTreeMap<String, Track>,
}

#[derive(Debug, Default)]
struct Track {
    /// Present and Ready, as the soak made it.
    wanted: bool,
    /// Its InternalIP seen since it last joined (the CCM initialized it).
    addressed: bool,
    /// The InternalIP last seen.
    address: Option<String>,
    /// The spans in which it was eligible, `[from, to)`; the last one may be open.
    spans: Vec<(Instant, Option<Instant>)>,
}

impl Track {
    fn eligible(&self) -> bool {
        self.wanted && self.addressed
    }

    /// Applies a change made at `at`, opening or closing a span.
    fn change(&mut self, at: Instant, apply: impl FnOnce(&mut Track)) {
        let before = self.eligible();
        apply(self);
        match (before, self.eligible()) {
            (false, true) => self.spans.push((at, None)),
            (true, false) => {
                if let Some((_, end)) = self.spans.last_mut() {
                    *end = Some(at);
                }
            }
            _ => {}
        }
    }
}

impl Eligibility {
    /// The soak made `node` present and Ready (`true`), or NotReady (`false`).
    pub(crate) fn set_ready(&mut self, node: &str, ready: bool, at: Instant) {
        let track = self.nodes.entry(node.to_owned()).or_default();
        track.change(at, |t| t.wanted = ready);
    }

    /// The soak deleted `node`: when it joins again, it is a new Node without an address.
    pub(crate) fn left(&mut self, node: &str, at: Instant) {
        let track = self.nodes.entry(node.to_owned()).or_default();
        track.change(at, |t| {
            t.wanted = false;
            t.addressed = false;
        });
    }

    /// The API server showed `node` with `address` as its InternalIP (`None`: without one) at
    /// `at`. Only nodes the soak made count; others are not its to judge.
    pub(crate) fn seen(&mut self, node: &str, address: Option<&str>, at: Instant) {
        let Some(track) = self.nodes.get_mut(node) else { return };
        if let Some(address) = address {
            track.address = Some(address.to_owned());
            track.change(at, |t| t.addressed = true);
        }
    }

    /// How long `node` had been eligible without a break at `at`; `None` when it was not.
    pub(crate) fn eligible_for(&self, node: &str, at: Instant) -> Option<Duration> {
        let track = self.nodes.get(node)?;
        let (from, _) =
            track.spans.iter().find(|(from, to)| *from <= at && to.is_none_or(|to| at < to))?;
        Some(at.duration_since(*from))
    }
}

/// One member list sent to Octavia.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Batch {
    /// When the proxy had the request.
    pub(crate) at: Instant,
    /// Which pool: `pool <id>` for a replace, `new pool <name>` inside a create.
    pub(crate) pool: String,
    /// Each member's `name` and `address`.
    pub(crate) members: Vec<(String, String)>,
}

/// The nodes eligible for at least [`GRACE`] when `batch` was sent that it leaves out (a
/// member names the node, or has its last-seen address), with how long each had been eligible.
pub(crate) fn left_out(batch: &Batch, eligibility: &Eligibility) -> Vec<(String, Duration)> {
    let mut missing = Vec::new();
    for (node, track) in &eligibility.nodes {
        let Some(eligible) = eligibility.eligible_for(node, batch.at) else { continue };
        if eligible < GRACE {
            continue;
        }
        let listed = batch.members.iter().any(|(name, address)| {
            name == node || track.address.as_deref() == Some(address.as_str())
        });
        if !listed {
            missing.push((node.clone(), eligible));
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// Two nodes, Ready and addressed from `t0`.
    fn two_nodes(t0: Instant) -> Eligibility {
        let mut e = Eligibility::default();
        for (node, ip) in [("n1", "10.0.0.11"), ("n2", "10.0.0.12")] {
            e.set_ready(node, true, t0);
            e.seen(node, Some(ip), t0);
        }
        e
    }

    fn batch(at: Instant, members: &[(&str, &str)]) -> Batch {
        let members = members.iter().map(|(n, a)| ((*n).to_owned(), (*a).to_owned())).collect();
        Batch { at, pool: "pool p1".to_owned(), members }
    }

    #[test]
    fn an_empty_list_while_nodes_were_long_eligible_leaves_every_one_out() {
        let t0 = Instant::now();
        let e = two_nodes(t0);
        let missing = left_out(&batch(t0 + secs(40), &[]), &e);
        assert_eq!(missing, vec![("n1".to_owned(), secs(40)), ("n2".to_owned(), secs(40))]);
    }

    #[test]
    fn a_node_eligible_for_less_than_the_grace_may_be_missing() {
        let t0 = Instant::now();
        let e = two_nodes(t0);
        assert!(left_out(&batch(t0 + secs(29), &[("n1", "10.0.0.11")]), &e).is_empty());
        let late = left_out(&batch(t0 + secs(31), &[("n1", "10.0.0.11")]), &e);
        assert_eq!(late, vec![("n2".to_owned(), secs(31))]);
    }

    #[test]
    fn a_member_counts_by_its_name_or_by_the_nodes_address() {
        let t0 = Instant::now();
        let e = two_nodes(t0);
        let at = t0 + secs(60);
        assert!(left_out(&batch(at, &[("n1", "10.0.0.11"), ("x", "10.0.0.12")]), &e).is_empty());
        assert!(left_out(&batch(at, &[("n1", "1.1.1.1"), ("n2", "1.1.1.2")]), &e).is_empty());
    }

    #[test]
    fn a_ready_flip_restarts_the_clock() {
        let t0 = Instant::now();
        let mut e = two_nodes(t0);
        e.set_ready("n2", false, t0 + secs(50));
        e.set_ready("n2", true, t0 + secs(60));
        // NotReady at the time: not owed a place.
        assert!(left_out(&batch(t0 + secs(55), &[("n1", "10.0.0.11")]), &e).is_empty());
        // Ready again for 20 s only.
        assert!(left_out(&batch(t0 + secs(80), &[("n1", "10.0.0.11")]), &e).is_empty());
        let missing = left_out(&batch(t0 + secs(95), &[("n1", "10.0.0.11")]), &e);
        assert_eq!(missing, vec![("n2".to_owned(), secs(35))]);
    }

    #[test]
    fn a_node_that_joined_again_counts_from_its_new_address() {
        let t0 = Instant::now();
        let mut e = two_nodes(t0);
        e.left("n2", t0 + secs(50));
        e.set_ready("n2", true, t0 + secs(60));
        // Present and Ready, but the CCM has not initialized it yet: no InternalIP.
        e.seen("n2", None, t0 + secs(70));
        assert!(left_out(&batch(t0 + secs(95), &[("n1", "10.0.0.11")]), &e).is_empty());
        e.seen("n2", Some("10.0.0.12"), t0 + secs(100));
        assert!(left_out(&batch(t0 + secs(120), &[("n1", "10.0.0.11")]), &e).is_empty());
        let missing = left_out(&batch(t0 + secs(131), &[("n1", "10.0.0.11")]), &e);
        assert_eq!(missing, vec![("n2".to_owned(), secs(31))]);
    }

    #[test]
    fn nodes_the_soak_did_not_make_are_not_judged() {
        let t0 = Instant::now();
        let mut e = Eligibility::default();
        e.seen("localhost", Some("192.0.2.1"), t0);
        assert!(left_out(&batch(t0 + secs(100), &[]), &e).is_empty());
    }
}
