//! openstack-cloud-controller-manager: the OpenStack cloud-controller-manager, a drop-in for
//! upstream's (its flags and cloud.conf keys). It initializes Nodes from their servers and
//! keeps their addresses (`cloud-node`), deletes the Nodes whose servers are gone and taints the
//! shut-off ones (`cloud-node-lifecycle`), routes each node's pod CIDRs through a Neutron router
//! (`route`), and gives `type: LoadBalancer` Services Octavia load balancers with their floating
//! IPs and security groups (`service`). It takes over in place what upstream's CCM and the
//! in-tree provider made (with leader migration from kube-controller-manager), and hands the
//! load balancers back to the in-tree provider (`migrate-load-balancers`).
//!
//! ```text
//!  flags ─┐                                      ┌─ controllers::node       (taint → providerID, addresses, labels)
//!  cloud.conf ─ config ─┬─ cloud (osauth: Nova,  ├─ controllers::lifecycle  (404 → delete, SHUTOFF → taint)
//!  Secret (watched) ────┘   Neutron, Octavia,  ──┼─ controllers::route      (pod CIDRs → router routes)
//!                           counted)             ├─ controllers::service    (Octavia, floating IP, security group;
//!                           kube (Nodes,         │                           adopts upstream's and the in-tree's)
//!                           Services, Leases,    └─ leader (Lease, leader migration) · server (/healthz /readyz /metrics)
//!                           Secrets, Events)
//!  migrate: migrate-load-balancers --to in-tree | external (renamed in place: same ID, VIP)
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
pub(crate) mod oneshot;
pub mod purge;
pub mod reload;
pub(crate) mod server;
pub(crate) mod token_bucket;
