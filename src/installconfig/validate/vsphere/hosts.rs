//! `platform.vsphere.hosts` (static IPs), as the installer's `validateHosts` checks it.
//!
//! The installer's paths are kept: every host error names `hosts.<field>` without an index,
//! and the network device's fields sit directly under `hosts` (`hosts.ipAddrs`, not
//! `hosts.networkDevice.ipAddrs`). The model keeps `hosts` opaque (the generator writes
//! nothing from it), so the fields are read from the JSON value. See: issue 19.

use std::net::IpAddr;

use serde_json::Value;

use crate::installconfig::validate::field::{FieldError, Path};
use crate::installconfig::validate::networking::parse_cidr;
use crate::installconfig::{InstallConfig, VspherePlatform};

/// Host roles, sorted as the installer's `sets.List` prints them.
const ROLES: &[&str] = &["bootstrap", "compute", "control-plane"];

/// `platform.vsphere.hosts` of `config`. The installer checks hosts only when they are set
/// and the vCenters and failure domains were there to be checked.
pub(crate) fn check(p: &VspherePlatform, config: &InstallConfig) -> Vec<FieldError> {
    let Some(hosts) = p.hosts.as_ref().and_then(Value::as_array) else { return Vec::new() };
    if p.vcenters.is_empty() || p.failure_domains.is_empty() {
        return Vec::new();
    }
    let path = Path::new("platform").child("vsphere").child("hosts");
    let mut errs = counts(hosts, config, &path);
    for host in hosts {
        let role = text(host, "role");
        if !ROLES.contains(&role) {
            errs.push(FieldError::not_supported(&path.child("role"), role, ROLES));
        }
        let domain = text(host, "failureDomain");
        if !domain.is_empty() && !p.failure_domains.iter().any(|fd| fd.name == domain) {
            let at = path.child("failureDomain");
            errs.push(FieldError::invalid(&at, domain, "failure domain not found"));
        }
        match host.get("networkDevice").filter(|device| !device.is_null()) {
            None => {
                let detail = "must specify networkDevice configuration";
                errs.push(FieldError::required(&path.child("networkDevice"), detail));
            }
            Some(device) => errs.extend(network_device(device, &path)),
        }
    }
    errs
}

/// One bootstrap host, and as many control-plane and compute hosts as replicas. A host
/// without a role counts for neither.
fn counts(hosts: &[Value], config: &InstallConfig, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let with_role = |role: &str| hosts.iter().filter(|h| text(h, "role") == role).count();
    if with_role("bootstrap") != 1 {
        let detail = "a single host with the bootstrap role must be defined";
        errs.push(FieldError::invalid(path, "bootstrap", detail));
    }
    let workers: u64 = config.compute.iter().filter_map(|pool| pool.replicas).map(u64::from).sum();
    let wanted = [
        ("control-plane", "control plane", u64::from(config.control_plane_replicas())),
        ("compute", "compute", workers),
    ];
    for (role, what, replicas) in wanted {
        let found = with_role(role) as u64;
        let detail = if found < replicas {
            format!(
                "not enough hosts found ({found}) to support all the configured {what} replicas ({replicas})"
            )
        } else if found > replicas {
            format!(
                "too many hosts found ({found}) for the configured {what} replicas ({replicas})"
            )
        } else {
            continue;
        };
        errs.push(FieldError::invalid(path, role, detail));
    }
    errs
}

/// `networkDevice`: addresses with prefixes, at most three name servers, and a gateway,
/// each named directly under `hosts`.
fn network_device(device: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let addresses = texts(device, "ipAddrs");
    let at = path.child("ipAddrs");
    if addresses.is_empty() {
        errs.push(FieldError::required(&at, "must specify a IP"));
    }
    for address in addresses {
        if address.is_empty() {
            errs.push(FieldError::required(&at, "must specify a IP address with CIDR"));
        } else if let Err(detail) = parse_cidr(address) {
            errs.push(FieldError::invalid(&at, address, detail));
        }
    }
    let nameservers = texts(device, "nameservers");
    let at = path.child("nameservers");
    if nameservers.len() > 3 {
        errs.push(FieldError::too_many(&at, nameservers.len(), 3));
    }
    for ip in nameservers {
        errs.extend(optional_ip(ip, &at));
    }
    errs.extend(optional_ip(text(device, "gateway"), &path.child("gateway")));
    errs
}

/// The installer's `validateIP` for an optional address.
fn optional_ip(ip: &str, at: &Path) -> Option<FieldError> {
    let bad = !ip.is_empty() && ip.parse::<IpAddr>().is_err();
    bad.then(|| FieldError::invalid(at, ip, format!("\"{ip}\" is not a valid IP")))
}

/// A string field, or `""` when it is missing or not a string.
fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A list of strings (an item that is not a string reads as `""`).
fn texts<'a>(value: &'a Value, key: &str) -> Vec<&'a str> {
    let items = value.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items.iter().map(|item| item.as_str().unwrap_or("")).collect()
}

#[cfg(test)]
mod tests;
