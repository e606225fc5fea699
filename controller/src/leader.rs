//! Leader election on a `coordination.k8s.io/v1` Lease (`kube_support::lease`), with
//! client-go's timing (15 s / 10 s / 2 s) from the `--leader-elect-*` flags, and leader
//! migration.
//!
//! Losing the lease ends `Elector::hold`, and `main` then exits: a restart is the only safe
//! way to stop controllers that may be mid-write.

pub(crate) mod migration;

pub(crate) use kube_support::lease::{Elector, Settings};
