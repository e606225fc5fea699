//! Operator mode: `ccm-assets operator` keeps a running cluster's CCM as `create` renders it.
//!
//! ```text
//!  watches by name (world) ─▶ snapshot ─┬─ controllers::cloud_config ─┐
//!                                       ├─ controllers::trusted_ca ───┼─ apply (only what differs)
//!                                       └─ controllers::ccm ──────────┘
//!                                          a ConfigMap or Secret written ─▶ kubelet_sync (the
//!                                          pods that mount it annotated: the kubelet refreshes now)
//!  records (status::Record) ─▶ status ─▶ ClusterOperator/cloud-controller-manager, /readyz (health)
//! ```
//!
//! `render` turns the live objects into what `create manifests` would write; `run` holds the
//! Lease and the tasks; `remove` hands the cluster back.

pub mod apply;
pub mod controllers;
pub mod health;
pub mod kubelet_sync;
pub mod remove;
pub mod render;
pub mod run;
pub mod status;
pub mod trusted_ca;
pub mod world;
