//! API and Ingress VIP checks, as the installer's `validateAPIAndIngressVIPs` applies them.

use std::net::IpAddr;

use super::field::{FieldError, Path};
use super::networking::AddressPlan;
use crate::installconfig::types::{InstallConfig, LoadBalancer, LoadBalancerType};

/// How strict the platform is about its VIPs.
struct Rules {
    /// Both lists must be given (after defaults).
    required: bool,
    /// Each VIP must lie in a machine network.
    in_machine_network: bool,
}

/// VIP checks for the platforms that have VIPs (bare metal, Nutanix, OpenStack, vSphere).
pub(crate) fn check(config: &InstallConfig, plan: &AddressPlan) -> Vec<FieldError> {
    let p = &config.platform;
    let platform = Path::new("platform");
    let (path, api, ingress, lb, rules) = if let Some(b) = &p.baremetal {
        let rules = Rules { required: true, in_machine_network: true };
        (platform.child("baremetal"), &b.api_vips, &b.ingress_vips, &b.load_balancer, rules)
    } else if let Some(n) = &p.nutanix {
        let rules = Rules { required: false, in_machine_network: false };
        (platform.child("nutanix"), &n.api_vips, &n.ingress_vips, &n.load_balancer, rules)
    } else if let Some(o) = &p.openstack {
        let rules = Rules { required: true, in_machine_network: true };
        (platform.child("openstack"), &o.api_vips, &o.ingress_vips, &o.load_balancer, rules)
    } else if let Some(v) = &p.vsphere {
        // Outside the agent-based installer, vSphere VIPs are optional and unconstrained.
        let rules = Rules { required: false, in_machine_network: false };
        (platform.child("vsphere"), &v.api_vips, &v.ingress_vips, &v.load_balancer, rules)
    } else {
        return Vec::new();
    };
    let user_managed =
        matches!(lb, Some(LoadBalancer { kind: Some(LoadBalancerType::UserManaged) }));
    let mut errs = Vec::new();
    let api_path = path.child("apiVIPs");
    let ingress_path = path.child("ingressVIPs");
    // (this list, the other list, where, what it is, message when the other list is missing)
    let sides = [
        (api, ingress, &api_path, "API", "must specify VIP for ingress, when VIP for API is set"),
        (
            ingress,
            api,
            &ingress_path,
            "Ingress",
            "must specify VIP for API, when VIP for ingress is set",
        ),
    ];
    for (vips, others, at, what, other_missing) in sides {
        if vips.is_empty() {
            if rules.required {
                let detail = format!("must specify at least one VIP for the {what}");
                errs.push(FieldError::required(at, detail));
            }
            continue;
        }
        if vips.len() > 2 {
            errs.push(FieldError::too_many(at, vips.len(), 2));
            continue;
        }
        for vip in vips {
            let Ok(ip) = vip.parse::<IpAddr>() else {
                errs.push(FieldError::invalid(at, vip, format!("\"{vip}\" is not a valid IP")));
                continue;
            };
            // A user-managed load balancer may share one address and live outside the
            // machine networks.
            if user_managed {
                continue;
            }
            if what == "API" && others.iter().any(|o| o.parse::<IpAddr>() == Ok(ip)) {
                let detail = "VIP for API must not be one of the Ingress VIPs";
                errs.push(FieldError::invalid(at, vip, detail));
            }
            if rules.in_machine_network
                && let Err(detail) = plan.machine.contains_or_explain(ip)
            {
                errs.push(FieldError::invalid(at, vip, detail));
            }
        }
        if others.is_empty() {
            let other_at = if what == "API" { &ingress_path } else { &api_path };
            errs.push(FieldError::required(other_at, other_missing));
        }
        match vips.as_slice() {
            [one] => {
                let v6 = one.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6());
                if plan.dual_stack() && v6 != plan.machine_primary_v6() {
                    let detail = format!(
                        "VIP for the {what} must be of the same IP family with machine network's primary IP Family for dual-stack IPv4/IPv6"
                    );
                    errs.push(FieldError::invalid(at, one, detail));
                }
            }
            [first, second] if !is_dual_stack_pair(first, second) => {
                let detail = format!(
                    "If two {what} VIPs are given, one must be an IPv4 address, the other an IPv6"
                );
                errs.push(FieldError::invalid(at, vips.as_slice(), detail));
            }
            _ => {}
        }
    }
    errs
}

fn is_dual_stack_pair(first: &str, second: &str) -> bool {
    match (first.parse::<IpAddr>(), second.parse::<IpAddr>()) {
        (Ok(a), Ok(b)) => a.is_ipv6() != b.is_ipv6(),
        _ => false,
    }
}
