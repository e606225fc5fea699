//! What several platforms write alike in the Infrastructure's `platformSpec`/`platformStatus`
//! blocks: the VIPs with the load balancer type, and the DNS type.
//!
//! Below the platforms, which build their blocks from it; the `infrastructure` asset, above
//! them, puts each platform's blocks in place.

use serde_json::Value;

use crate::installconfig::{InstallConfig, LoadBalancerType};

/// `cloudLoadBalancerConfig.dnsType`: `ClusterHosted` with `userProvisionedDNS: Enabled`.
pub(crate) fn dns_type(user_provisioned_dns: Option<&str>) -> &'static str {
    if user_provisioned_dns == Some("Enabled") { "ClusterHosted" } else { "PlatformDefault" }
}

/// The VIPs OpenStack, vSphere, Nutanix and bare metal share in their platform blocks.
#[derive(Debug, Clone)]
pub struct Vips<'a> {
    /// `apiVIPs`.
    pub api: &'a [String],
    /// `ingressVIPs`.
    pub ingress: &'a [String],
    /// `loadBalancer.type` after defaults.
    pub load_balancer: LoadBalancerType,
}

impl Vips<'_> {
    /// `(spec, status)` objects: the VIP lists (and machine networks, when the platform's types
    /// have them), the load balancer type, and the deprecated single-IP status fields the
    /// installer still sets.
    pub fn blocks(&self, config: &InstallConfig, machine_networks: bool) -> (Value, Value) {
        let mut spec = serde_json::json!({
            "apiServerInternalIPs": self.api,
            "ingressIPs": self.ingress,
        });
        let mut status = spec.clone();
        status["loadBalancer"] = serde_json::json!({"type": self.load_balancer.as_str()});
        if machine_networks {
            let networks: Vec<&str> =
                config.networking.machine_network.iter().map(|n| n.cidr.as_str()).collect();
            spec["machineNetworks"] = serde_json::json!(networks);
            status["machineNetworks"] = serde_json::json!(networks);
        }
        if let Some(first) = self.api.first() {
            status["apiServerInternalIP"] = Value::from(first.as_str());
        }
        if let Some(first) = self.ingress.first() {
            status["ingressIP"] = Value::from(first.as_str());
        }
        (spec, status)
    }
}
