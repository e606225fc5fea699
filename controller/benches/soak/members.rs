//! The member lists the CCM sent to Octavia, read from the counting proxy's kept bodies, held
//! to batches.rs's rule as the run goes: every list that left out a long-eligible node is a
//! problem, written to the report the moment it is found.

use std::time::Instant;

use serde_json::Value;

use crate::batches::{Batch, Eligibility, GRACE, left_out};
use crate::journal;
use crate::real::{Captured, Real};

/// The requests that carry member lists: the batch replace, and the creates whose bodies hold
/// pools with members (a fully-populated load balancer, a listener with its default pool, a
/// pool): a create from an empty node view is the same race as a replace.
pub(crate) const OPERATIONS: [&str; 4] = [
    "load-balancer/members_replace",
    "load-balancer/loadbalancer_create",
    "load-balancer/listener_create",
    "load-balancer/pool_create",
];

/// The lists checked so far and what they broke.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// Index of the next kept request to read.
    next: usize,
    /// Member lists read.
    pub(crate) lists: usize,
    /// Of them empty.
    pub(crate) empty: usize,
    /// One line per list that left a node out.
    pub(crate) problems: Vec<String>,
}

impl Watch {
    /// Reads the lists kept since the last call and checks each; `starts` are the moments the
    /// CCM process started (its first start included), in order.
    pub(crate) fn check(&mut self, real: &Real, eligibility: &Eligibility, starts: &[Instant]) {
        let kept = real.captures.since(self.next);
        self.next += kept.len();
        for captured in &kept {
            for batch in batches(captured) {
                self.lists += 1;
                self.empty += usize::from(batch.members.is_empty());
                let missing = left_out(&batch, eligibility);
                if missing.is_empty() {
                    if batch.members.is_empty() {
                        // Right when no node was long eligible; kept for the record.
                        journal::detail(&format!(
                            "    an empty member list for {} at {} ({}): no node eligible for {} s then",
                            batch.pool,
                            journal::stamp(batch.at),
                            captured.operation,
                            GRACE.as_secs()
                        ));
                    }
                    continue;
                }
                let line = describe(&batch, captured, &missing, starts);
                journal::note(&format!("PROBLEM: {line}"));
                self.problems.push(line);
            }
        }
    }
}

/// One line for a list that left nodes out: the pool, the nodes and how long each had been
/// eligible, when it was sent and how long after the CCM's last start.
fn describe(
    batch: &Batch,
    captured: &Captured,
    missing: &[(String, std::time::Duration)],
    starts: &[Instant],
) -> String {
    let nodes: Vec<String> = missing
        .iter()
        .map(|(node, for_)| format!("{node} (eligible for {:.1} s)", for_.as_secs_f64()))
        .collect();
    let since_start = starts.iter().rev().find(|s| **s <= batch.at).map_or(
        "before the CCM started".to_owned(),
        |s| {
            format!("{:.1} s after the CCM's last start", batch.at.duration_since(*s).as_secs_f64())
        },
    );
    let sent: Vec<&str> = batch.members.iter().map(|(name, _)| name.as_str()).collect();
    let what = if batch.members.is_empty() { "an EMPTY member list" } else { "a member list" };
    format!(
        "{} ({}, Octavia's answer: {}) sent {what} {sent:?} at {}, {since_start}, leaving out {}",
        batch.pool,
        captured.operation,
        captured.status.map_or("none seen".to_owned(), |s| s.to_string()),
        journal::stamp(batch.at),
        nodes.join(", "),
    )
}

/// The member lists in one kept request: the whole body of a replace (its pool from the
/// path), or every object with a `members` list inside a create (its pool by name).
pub(crate) fn batches(captured: &Captured) -> Vec<Batch> {
    let Ok(body) = serde_json::from_slice::<Value>(&captured.body) else {
        return Vec::new();
    };
    if captured.operation == "load-balancer/members_replace" {
        let pool = captured.path.trim_end_matches('/').trim_end_matches("/members");
        let pool = pool.rsplit('/').next().unwrap_or_default();
        return vec![batch(captured.at, format!("pool {pool}"), &body)];
    }
    let mut found = Vec::new();
    walk(&body, &mut |object| {
        if object.get("members").is_some_and(Value::is_array) {
            let name = object["name"].as_str().unwrap_or("?");
            found.push(batch(captured.at, format!("new pool {name}"), object));
        }
    });
    found
}

fn batch(at: Instant, pool: String, holder: &Value) -> Batch {
    let members = holder["members"].as_array().into_iter().flatten();
    let text = |m: &Value, key: &str| m[key].as_str().unwrap_or_default().to_owned();
    Batch { at, pool, members: members.map(|m| (text(m, "name"), text(m, "address"))).collect() }
}

/// Calls `visit` on every object in `value`, depth first.
fn walk(value: &Value, visit: &mut impl FnMut(&Value)) {
    match value {
        Value::Object(map) => {
            visit(value);
            map.values().for_each(|v| walk(v, visit));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, visit)),
        _ => {}
    }
}
