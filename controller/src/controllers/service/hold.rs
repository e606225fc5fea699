//! A node view with no eligible node never empties a pool that has members (issue 35).
//!
//! The first guard is that no controller reads the Node cache before it synced
//! (`controllers::synced`); this is the second. A view in which not one node is eligible is far
//! more often a view that is wrong or behind (a list not yet in, every kubelet cut off from the
//! API server at once) than a cluster that lost every node; and an emptied pool serves nothing
//! either way, while a kept one still serves through the members whose nodes are up. So the
//! member updates that would empty a pool are held back (and the security group stays on the
//! ports) until a node is eligible again; everything else of the reconcile goes on. A Service
//! whose own node selector matches none of the eligible nodes is not held: that empty list is
//! the user's choice, not the view's.

use crate::cloud::octavia::{Change, Tree};

/// A pool whose members were kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) pool_id: String,
    /// How many members it keeps.
    pub(crate) members: usize,
}

/// Takes out of `changes` every member update that would empty a pool of `tree` that has
/// members, and says which.
pub(crate) fn keep_members(changes: &mut Vec<Change>, tree: &Tree) -> Vec<Held> {
    let members_of = |pool: &str| {
        tree.members.iter().find(|(id, _)| id == pool).map_or(0, |(_, members)| members.len())
    };
    let mut held = Vec::new();
    changes.retain(|change| match change {
        Change::ReplaceMembers { pool_id, members } if members.is_empty() => {
            let count = members_of(pool_id);
            if count > 0 {
                held.push(Held { pool_id: pool_id.clone(), members: count });
            }
            count == 0
        }
        _ => true,
    });
    held
}

/// The Event's text for `held`, on load balancer `lb`.
pub(crate) fn message(lb: &str, held: &[Held]) -> String {
    let pools: Vec<String> =
        held.iter().map(|h| format!("{} ({} members)", h.pool_id, h.members)).collect();
    format!(
        "No node is eligible as a member (none Ready with an InternalIP, or all excluded or being \
         deleted): the members of load balancer {lb}'s pools {} are kept rather than emptied, \
         and updated once a node is eligible again",
        pools.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::octavia::{Member, MemberSpec};

    fn tree(pools: &[(&str, usize)]) -> Tree {
        let mut tree = Tree::default();
        for (id, n) in pools {
            let members = (0..*n).map(|i| Member { id: format!("m{i}"), ..Member::default() });
            tree.members.push(((*id).to_owned(), members.collect()));
        }
        tree
    }

    fn replace(pool: &str, members: usize) -> Change {
        let members = (0..members)
            .map(|i| MemberSpec { address: format!("10.0.0.{i}"), ..MemberSpec::default() })
            .collect();
        Change::ReplaceMembers { pool_id: pool.to_owned(), members }
    }

    #[test]
    fn an_update_that_would_empty_a_pool_with_members_is_held_and_said() {
        let mut changes = vec![replace("p80", 0), replace("p443", 1), replace("empty", 0)];
        let held = keep_members(&mut changes, &tree(&[("p80", 2), ("p443", 2), ("empty", 0)]));
        assert_eq!(held, [Held { pool_id: "p80".into(), members: 2 }]);
        // A pool that is empty already is not "emptied"; one that keeps a member is updated.
        assert_eq!(changes, [replace("p443", 1), replace("empty", 0)]);
        assert!(message("lb-1", &held).contains("lb-1's pools p80 (2 members) are kept"));
    }

    #[test]
    fn other_changes_go_through() {
        let delete = Change::DeletePool { pool_id: "p80".into() };
        let mut changes = vec![delete.clone()];
        assert!(keep_members(&mut changes, &tree(&[("p80", 2)])).is_empty());
        assert_eq!(changes, [delete]);
    }
}
