//! `platform.vsphere`, as the installer's `pkg/types/vsphere/validation` checks it.
//!
//! Paths and messages are the installer's, quirks included: failure-domain errors name
//! `failureDomains.<field>` without an index (a duplicate name is `failureDomains.name[<i>]`),
//! the user name is `vcenters[<i>].username` although the key is `user`, and a malformed
//! datastore, folder, compute cluster or resource pool path ends the failure-domain checks.
//! See: issue 19.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde_json::Value;

use super::field::{FieldError, Path};
use super::names;
use super::networking::parse_cidr;
use crate::installconfig::types::{FailureDomain, VspherePlatform};

mod hosts;

pub(crate) use hosts::check as check_hosts;

/// `diskType` values, sorted as the installer's `sets.List` prints them.
const DISK_TYPES: &[&str] = &["eagerZeroedThick", "thick", "thin"];

/// `platform.vsphere`.
pub(crate) fn check(p: &VspherePlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(disk) = p.disk_type.as_deref().filter(|d| !d.is_empty())
        && !DISK_TYPES.contains(&disk)
    {
        let detail = format!("diskType must be one of [{}]", DISK_TYPES.join(" "));
        errs.push(FieldError::invalid(&path.child("diskType"), disk, detail));
    }
    if p.vcenters.is_empty() {
        errs.push(FieldError::required(&path.child("vcenters"), "must be defined"));
        return errs;
    }
    errs.extend(vcenters(p, &path.child("vcenters")));
    if p.failure_domains.is_empty() {
        errs.push(FieldError::required(&path.child("failureDomains"), "must be defined"));
        return errs;
    }
    errs.extend(failure_domains(p, &path.child("failureDomains")));
    if let Some(networking) = &p.node_networking {
        let at = path.child("nodeNetworking");
        for side in ["internal", "external"] {
            let spec = networking.get(side).unwrap_or(&Value::Null);
            errs.extend(node_networking(p, spec, &at.child(side)));
        }
    }
    errs.extend(super::rules::load_balancer_type(p.load_balancer.as_ref(), path));
    errs
}

fn vcenters(p: &VspherePlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let server_detail = "must be the domain name or IP address of the vCenter";
    for (i, vc) in p.vcenters.iter().enumerate() {
        let at = path.index(i);
        if vc.server.is_empty() {
            errs.push(FieldError::required(&at.child("server"), server_detail));
        } else if vc.server.parse::<IpAddr>().is_err() && names::subdomain(&vc.server).is_err() {
            errs.push(FieldError::invalid(&at.child("server"), &vc.server, server_detail));
        }
        if vc.user.is_empty() {
            errs.push(FieldError::required(&at.child("username"), "must specify the username"));
        }
        if vc.password.expose().is_empty() {
            errs.push(FieldError::required(&at.child("password"), "must specify the password"));
        }
        if vc.datacenters.is_empty() {
            let detail = "must specify at least one datacenter";
            errs.push(FieldError::required(&at.child("datacenters"), detail));
        }
        // Not the installer's: a port the CCM could never dial.
        if let Some(port) = vc.port
            && !(1..=65535).contains(&port)
        {
            let detail = "port must be in the range of 1 to 65535";
            errs.push(FieldError::invalid(&at.child("port"), i64::from(port), detail));
        }
    }
    errs
}

fn failure_domains(p: &VspherePlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let servers: BTreeSet<&str> = p.vcenters.iter().map(|vc| vc.server.as_str()).collect();
    let mut names = BTreeSet::new();
    for (i, fd) in p.failure_domains.iter().enumerate() {
        let region_type = fd.region_type.as_deref().unwrap_or("");
        let zone_type = fd.zone_type.as_deref().unwrap_or("");
        if region_type.is_empty() && !zone_type.is_empty() {
            let detail = "must specify regionType if zoneType is defined";
            errs.push(FieldError::required(&path.child("regionType"), detail));
        }
        if !region_type.is_empty() && zone_type.is_empty() {
            let detail = "must specify zoneType if regionType is defined";
            errs.push(FieldError::required(&path.child("zoneType"), detail));
        }
        if region_type == "HostGroup" {
            let detail = "region type cannot be used for host group failure domains";
            errs.push(FieldError::required(&path.child("regionType"), detail));
            return errs;
        }
        if zone_type == "HostGroup" && fd.topology.host_group.as_deref().unwrap_or("").is_empty() {
            let detail = "must not be empty if zoneType is HostGroup";
            errs.push(FieldError::required(&path.child("hostGroup"), detail));
        }
        if region_type == "ComputeCluster" && zone_type != "HostGroup" {
            errs.push(FieldError::required(
                &path.child("regionType"),
                "zoneType must be HostGroup",
            ));
            errs.push(FieldError::required(&path.child("zoneType"), "something something..."));
            return errs;
        }
        if fd.name.is_empty() {
            errs.push(FieldError::required(&path.child("name"), "must specify the name"));
        } else if !names.insert(fd.name.as_str()) {
            errs.push(FieldError::duplicate(&path.child("name").index(i), &fd.name));
        }
        if fd.server.is_empty() {
            errs.push(FieldError::required(&path.child("server"), "must specify a vCenter server"));
        } else if !servers.contains(fd.server.as_str()) {
            let detail = "server does not exist in vcenters";
            errs.push(FieldError::invalid(&path.child("server"), &fd.server, detail));
        }
        if fd.zone.is_empty() {
            errs.push(FieldError::required(&path.child("zone"), "must specify zone tag value"));
        }
        if fd.region.is_empty() {
            errs.push(FieldError::required(&path.child("region"), "must specify region tag value"));
        }
        if let Err(stop) = topology(fd, &path.child("topology"), &mut errs) {
            errs.push(stop);
            return errs;
        }
    }
    errs
}

/// One failure domain's topology; `Err` is the installer's early return, which ends the checks
/// of every failure domain.
fn topology(fd: &FailureDomain, path: &Path, errs: &mut Vec<FieldError>) -> Result<(), FieldError> {
    let t = &fd.topology;
    let dc = t.datacenter.as_deref().unwrap_or("");
    if dc.is_empty() {
        errs.push(FieldError::required(&path.child("datacenter"), "must specify a datacenter"));
    }
    let datastore = t.datastore.as_deref().unwrap_or("");
    if datastore.is_empty() {
        errs.push(FieldError::required(&path.child("datastore"), "must specify a datastore"));
    } else {
        let format = "/<datacenter/datastore/<datastore>";
        in_datacenter(datastore, dc, ("datastore", "datastore", format), &path.child("datastore"))?;
    }
    let tags = path.child("tagIDs");
    if t.tag_ids.len() > 10 {
        let detail = "a maximum of 10 tags are allowed";
        errs.push(FieldError::invalid(&tags, t.tag_ids.as_slice(), detail));
    }
    for tag in &t.tag_ids {
        if !is_tag_urn(tag) {
            let detail =
                "tag ID must be in the format of urn:vmomi:InventoryServiceTag:<UUID>:GLOBAL";
            errs.push(FieldError::invalid(&tags, t.tag_ids.as_slice(), detail));
        }
    }
    if t.networks.is_empty() {
        errs.push(FieldError::required(&path.child("networks"), "must specify a network"));
    }
    if let Some(folder) = t.folder.as_deref().filter(|f| !f.is_empty()) {
        let format = "/<datacenter>/vm/<folder>";
        in_datacenter(folder, dc, ("folder", "vm", format), &path.child("folder"))?;
    }
    let cluster = t.compute_cluster.as_deref().unwrap_or("");
    if cluster.is_empty() {
        let detail = "must specify a computeCluster";
        errs.push(FieldError::required(&path.child("computeCluster"), detail));
    } else {
        let at = path.child("computeCluster");
        let Some((cluster_dc, _)) = inventory_path(cluster, "host") else {
            let detail = "full path of compute cluster must be provided in format /<datacenter>/host/<cluster>";
            return Err(FieldError::invalid(&at, cluster, detail));
        };
        if !dc.is_empty() && !dc.contains(cluster_dc) {
            let detail = format!("compute cluster must be in datacenter {dc}");
            return Err(FieldError::invalid(&at, cluster, detail));
        }
    }
    if let Some(pool) = t.resource_pool.as_deref().filter(|p| !p.is_empty()) {
        let at = path.child("resourcePool");
        let Some((pool_dc, pool_cluster)) = resource_pool_path(pool) else {
            let detail = "full path of resource pool must be provided in format /<datacenter>/host/<cluster>/...";
            return Err(FieldError::invalid(&at, pool, detail));
        };
        if !dc.is_empty() && !dc.contains(pool_dc) {
            let detail = format!("resource pool must be in datacenter {dc}");
            return Err(FieldError::invalid(&at, pool, detail));
        }
        if !cluster.is_empty() && !cluster.contains(pool_cluster) {
            let detail = format!("resource pool must be in compute cluster {cluster}");
            return Err(FieldError::invalid(&at, pool, detail));
        }
    }
    Ok(())
}

/// A datastore or folder path: `(what, kind, format)` name it, its `/<kind>/` segment and the
/// format the installer's message shows. It must be a full path that names the datacenter.
fn in_datacenter(
    value: &str,
    dc: &str,
    (what, kind, format): (&str, &str, &str),
    at: &Path,
) -> Result<(), FieldError> {
    if inventory_path(value, kind).is_none() {
        let detail = format!("full path of {what} must be provided in format {format}");
        return Err(FieldError::invalid(at, value, detail));
    }
    if !value.contains(dc) {
        let detail = format!("the {what} defined does not exist in the correct datacenter");
        return Err(FieldError::invalid(at, value, detail));
    }
    Ok(())
}

/// `^/(.*?)/<kind>/(.*?)$` as Go's regexp matches it: the datacenter before the first
/// `/<kind>/`, and the rest.
fn inventory_path<'a>(text: &'a str, kind: &str) -> Option<(&'a str, &'a str)> {
    let rest = text.strip_prefix('/')?;
    let marker = format!("/{kind}/");
    let at = rest.find(&marker)?;
    Some((&rest[..at], &rest[at + marker.len()..]))
}

/// `^/(.*?)/host/(.*?)/(.*?)$`: the datacenter and cluster of a resource pool path, trying
/// each `/host/` in turn as the lazy match backtracks.
fn resource_pool_path(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    rest.match_indices("/host/").find_map(|(at, marker)| {
        let after = &rest[at + marker.len()..];
        let slash = after.find('/')?;
        Some((&rest[..at], &after[..slash]))
    })
}

/// `urn:vmomi:InventoryServiceTag:<8-4-4-4-12 hex>:<anything without a colon>`.
fn is_tag_urn(tag: &str) -> bool {
    let Some(rest) = tag.strip_prefix("urn:vmomi:InventoryServiceTag:") else { return false };
    let Some((uuid, scope)) = rest.split_once(':') else { return false };
    let groups: Vec<&str> = uuid.split('-').collect();
    let lengths_ok = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]);
    let hex_ok = groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    lengths_ok && hex_ok && !scope.is_empty() && !scope.contains(':')
}

/// One side of `nodeNetworking`: CIDR lists (no index in the path) and a network that one of
/// the failure domains uses.
fn node_networking(p: &VspherePlatform, spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["networkSubnetCidr", "excludeNetworkSubnetCidr"] {
        let at = path.child(key);
        for cidr in spec.get(key).and_then(Value::as_array).into_iter().flatten() {
            let cidr = cidr.as_str().unwrap_or("");
            if cidr.is_empty() {
                let detail = "must specify a IP address with CIDR";
                errs.push(FieldError::required(&at, detail));
            } else if parse_cidr(cidr).is_err() {
                errs.push(FieldError::invalid(&at, cidr, format!("invalid CIDR address: {cidr}")));
            }
        }
    }
    let network = spec.get("network").and_then(Value::as_str).unwrap_or("");
    let known = p.failure_domains.iter().flat_map(|fd| &fd.topology.networks);
    if !network.is_empty() && !known.clone().any(|n| n == network) {
        let detail = "network must be defined in topology";
        errs.push(FieldError::invalid(&path.child("network"), network, detail));
    }
    errs
}

#[cfg(test)]
mod tests;
