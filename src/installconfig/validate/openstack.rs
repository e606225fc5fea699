//! `platform.openstack` and its machine pools, as the installer's
//! `pkg/types/openstack/validation` checks them, plus the rules of
//! `pkg/asset/installconfig/openstack/validation` that need no cloud.
//!
//! Paths and messages are the installer's, quirks included: an `externalDNS` error names the
//! list, not the entry, and carries the whole list as its value. See: issue 19.

use std::net::IpAddr;

use serde_json::Value;

use super::field::{FieldError, Path};
use super::uri;
use crate::installconfig::types::{
    InstallConfig, LoadBalancerType, Networking, OpenStackPlatform, PortTarget,
};

/// `serverGroupPolicy` values, in the order the installer lists them.
const SERVER_GROUP_POLICIES: &[&str] =
    &["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"];

/// `platform.openstack` of `config` (the caller has checked that it is set).
pub(crate) fn check(p: &OpenStackPlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if p.cloud.is_empty() {
        errs.push(FieldError::required(&path.child("cloud"), "a cloud must be specified"));
    }
    let dns_path = path.child("externalDNS");
    for ip in &p.external_dns {
        if ip.parse::<IpAddr>().is_err() {
            let detail = format!("\"{ip}\" is not a valid IP");
            errs.push(FieldError::invalid(&dns_path, p.external_dns.as_slice(), detail));
        }
    }
    if let Some(flavor) = p.bootstrap_flavor.as_deref()
        && !flavor.is_empty()
        && flavor.trim().is_empty()
    {
        let detail = "bootstrapFlavor must not consist entirely of whitespace";
        errs.push(FieldError::invalid(&path.child("bootstrapFlavor"), flavor, detail));
    }
    let default_pool = path.child("defaultMachinePlatform");
    errs.extend(machine_pool(p.default_machine_platform.as_ref(), &default_pool));
    let lb_type = p.load_balancer.as_ref().and_then(|lb| lb.kind.as_ref());
    if let Some(LoadBalancerType::Other(value)) = lb_type {
        let at = path.child("loadBalancer").child("type");
        errs.push(FieldError::invalid(&at, value, "invalid load balancer type"));
    }
    if let Some(dns) = p.dns_records_type.as_deref()
        && dns == "External"
        && lb_type != Some(&LoadBalancerType::UserManaged)
    {
        let detail = "external DNS records can only be configured with user-managed loadbalancers";
        errs.push(FieldError::invalid(&path.child("dnsRecordsType"), dns, detail));
    }
    if let Some(port) = &p.control_plane_port {
        errs.extend(control_plane_port(port, &path.child("controlPlanePort")));
        if !p.external_dns.is_empty() {
            let detail =
                "externalDNS is set, externalDNS is not supported when ControlPlanePort is set";
            errs.push(FieldError::invalid(&dns_path, p.external_dns.as_slice(), detail));
        }
    }
    errs.extend(floating_ips(p, path));
    errs.extend(cluster_os_image(p, path));
    errs
}

/// `platform.openstack.routerID` (ours, not the installer's): a router ID, and a cluster network
/// the route controller can take as `--cluster-cidr` (at most one per IP family).
pub(crate) fn routes(p: &OpenStackPlatform, networking: &Networking) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(router) = p.router_id.as_deref() else { return errs };
    let at = Path::new("platform").child("openstack").child("routerID");
    if !crate::uuid::is_canonical(router) {
        errs.push(FieldError::invalid(&at, router, "must be the ID (a UUID) of a Neutron router"));
    }
    let v4 = |cidr: &str| !cidr.contains(':');
    let cidrs = networking.cluster_network.iter().map(|e| e.cidr.as_str());
    let (four, six): (Vec<&str>, Vec<&str>) = cidrs.partition(|c| v4(c));
    if four.len() > 1 || six.len() > 1 {
        let all: Vec<&str> = networking.cluster_network.iter().map(|e| e.cidr.as_str()).collect();
        let detail = "with platform.openstack.routerID, at most one IPv4 and one IPv6 cluster \
                      network: the route controller's --cluster-cidr takes no more";
        let path = Path::new("networking").child("clusterNetwork");
        errs.push(FieldError::invalid(&path, all.join(",").as_str(), detail));
    }
    errs
}

/// `controlPlanePort`: a UUIDv4 network ID, one or two subnets each named by ID or name.
fn control_plane_port(port: &PortTarget, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let network_id = port.network.as_ref().and_then(|n| n.id.as_deref()).unwrap_or("");
    if !network_id.is_empty() && !crate::uuid::is_v4(network_id) {
        let detail = "invalid network ID: must be a UUIDv4";
        errs.push(FieldError::invalid(&path.child("network"), network_id, detail));
    }
    let fixed_ips = path.child("fixedIPs");
    match port.fixed_ips.len() {
        0 => {
            let detail = "it is required to set a subnet filter to the controlPlanePort";
            errs.push(FieldError::required(&fixed_ips, detail));
        }
        1 | 2 => {
            for (i, fixed_ip) in port.fixed_ips.iter().enumerate() {
                let subnet = fixed_ips.index(i).child("subnet");
                let id = fixed_ip.subnet.id.as_deref().unwrap_or("");
                let name = fixed_ip.subnet.name.as_deref().unwrap_or("");
                if !id.is_empty() && !crate::uuid::is_v4(id) {
                    let detail = "invalid subnet ID: must be a UUIDv4";
                    errs.push(FieldError::invalid(&subnet.child("id"), id, detail));
                }
                if id.is_empty() && name.is_empty() {
                    let detail = "either ID or Name must be set on the subnet filter";
                    errs.push(FieldError::required(&subnet, detail));
                }
            }
        }
        n => errs.push(FieldError::too_many(&fixed_ips, n, 2)),
    }
    errs
}

/// Floating IPs need an external network, and the API and Ingress ones must differ. The
/// installer checks the first rule after finding the IPs in the cloud; it needs no cloud.
fn floating_ips(p: &OpenStackPlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let no_external_network = p.external_network.as_deref().unwrap_or("").is_empty();
    let api = p.api_floating_ip.as_deref().unwrap_or("");
    for (key, ip) in [("apiFloatingIP", api), ("ingressFloatingIP", ingress_fip(p))] {
        if ip.is_empty() {
            continue;
        }
        let at = path.child(key);
        // Not the installer's: it finds the address in the cloud instead.
        if ip.parse::<IpAddr>().is_err() {
            errs.push(FieldError::invalid(&at, ip, format!("\"{ip}\" is not a valid IP")));
        }
        if no_external_network {
            let detail = "Cannot set floating ips when external network not specified";
            errs.push(FieldError::invalid(&at, ip, detail));
        }
    }
    let ingress = ingress_fip(p);
    if !api.is_empty() && api == ingress {
        let detail = "ingressFloatingIP can not be the same as apiFloatingIP";
        errs.push(FieldError::invalid(&path.child("ingressFloatingIP"), ingress, detail));
    }
    errs
}

fn ingress_fip(p: &OpenStackPlatform) -> &str {
    p.ingress_floating_ip.as_deref().unwrap_or("")
}

/// A `clusterOSImage` that parses as a request URI must be `http(s)` or `file`; anything else
/// is a Glance image name, which only the cloud can check.
fn cluster_os_image(p: &OpenStackPlatform, path: &Path) -> Option<FieldError> {
    let image = p.cluster_os_image.as_deref().filter(|image| !image.is_empty())?;
    let scheme = uri::request_uri(image).ok()?;
    if matches!(scheme.as_str(), "http" | "https" | "file") {
        return None;
    }
    let detail = format!("URL scheme should be either http(s) or file but it is '{scheme}'");
    Some(FieldError::invalid(&path.child("clusterOSImage"), image, detail))
}

/// The OpenStack settings of every machine pool of `config`: `controlPlane.platform.openstack`
/// and `compute[i].platform.openstack`.
pub(crate) fn machine_pools(config: &InstallConfig) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let openstack = |pool: &crate::installconfig::types::MachinePool| {
        pool.platform.as_ref().and_then(|platform| platform.get("openstack")).cloned()
    };
    if let Some(pool) = &config.control_plane {
        let path = Path::new("controlPlane").child("platform").child("openstack");
        errs.extend(machine_pool(openstack(pool).as_ref(), &path));
    }
    for (i, pool) in config.compute.iter().enumerate() {
        let path = Path::new("compute").index(i).child("platform").child("openstack");
        errs.extend(machine_pool(openstack(pool).as_ref(), &path));
    }
    errs
}

/// The installer's `ValidateMachinePool` for OpenStack: a known `serverGroupPolicy`. The pool
/// is opaque in our model, so it is read as JSON; a value of the wrong type is left to the
/// installer's own YAML decoding.
fn machine_pool(pool: Option<&Value>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(pool) = pool else { return errs };
    if let Some(policy) = pool.get("serverGroupPolicy").and_then(Value::as_str)
        && !policy.is_empty()
        && !SERVER_GROUP_POLICIES.contains(&policy)
    {
        let at = path.child("serverGroupPolicy");
        errs.push(FieldError::not_supported(&at, policy, SERVER_GROUP_POLICIES));
    }
    errs
}

#[cfg(test)]
mod tests;
