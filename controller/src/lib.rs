//! openstack-cloud-controller-manager: initializes Nodes from OpenStack servers and removes the gone ones.
//!
//! ```text
//!  flags ─┐                                      ┌─ controllers::node       (taint → providerID, addresses, labels)
//!  cloud.conf ─ config ─┬─ cloud (osauth: Nova,  ├─ controllers::lifecycle  (404 → delete, SHUTOFF → taint)
//!  Secret (watched) ────┘   Neutron, counted)  ──┤
//!                            kube (Nodes, Leases,└─ leader (Lease) · server (/healthz /readyz /metrics)
//!                            Secrets, Events)
//! ```
//!
//! `main` owns every long-running task in one `JoinSet` and exits non-zero when any ends.

pub mod app;
pub mod check;
pub mod cloud;
pub mod config;
pub mod controllers;
pub(crate) mod duration;
pub mod flags;
pub mod kube;
pub(crate) mod leader;
pub mod metrics;
pub mod migrate;
pub(crate) mod server;
