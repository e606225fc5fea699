//! The service controller: an Octavia load balancer for every `type: LoadBalancer` Service.
//!
//! ```text
//!  Service + Nodes ─ annotations (settings) ─ desired (Octavia tree) ─┐
//!                                          Octavia (tree by tag) ────┴─ diff → calls
//! ```

pub(crate) mod annotations;
pub(crate) mod desired;
pub(crate) mod diff;
pub(crate) mod names;
