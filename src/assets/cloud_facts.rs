//! What the OpenStack cloud told us (or what `--offline` assumed): the external network's ID
//! and whether Octavia exists.
//!
//! The provider contract's context carries them, so they are defined here, below it; the
//! `openstack/cloud-facts` asset (`openstack::lookup`) asks the cloud for them.

use serde::{Deserialize, Serialize};

/// What the cloud told us (or what `--offline` assumed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloudFacts {
    /// The ID of `platform.openstack.externalNetwork`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floating_network_id: Option<String>,
    /// Whether the catalog has a `load-balancer` (Octavia) endpoint.
    pub load_balancer: bool,
}
