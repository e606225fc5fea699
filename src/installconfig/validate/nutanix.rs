//! `platform.nutanix` as the installer's `pkg/types/nutanix/validation` checks the fields the
//! generator reads: Prism Central (address, port, credentials), the one Prism Element, the
//! subnets, the load balancer type and the failure domains' names, Prism Element and subnets.
//!
//! The installer reports the Prism Element and failure-domain errors without an index
//! (`prismElements.uuid`, `failureDomain.name`); so do we.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde_json::Value;

use super::field::{FieldError, Path};
use super::rules::{load_balancer_type, required};
use crate::installconfig::types::{NutanixPlatform, PrismEndpoint};

/// At most this many subnets (the installer's limit).
const MAX_SUBNETS: usize = 32;

/// `platform.nutanix` at `path`.
pub(crate) fn check(p: &NutanixPlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let pc = path.child("prismCentral");
    errs.extend(endpoint(&p.prism_central.endpoint, &pc.child("endpoint"), Prism::Central));
    let detail = "must specify the Prism Central username";
    required(&mut errs, &p.prism_central.username, &pc.child("username"), detail);
    let detail = "must specify the Prism Central password";
    required(&mut errs, p.prism_central.password.expose(), &pc.child("password"), detail);
    let pe_path = path.child("prismElements");
    if p.prism_elements.len() != 1 {
        errs.push(FieldError::required(&pe_path, "must specify one Prism Element"));
    }
    for pe in &p.prism_elements {
        let detail = "must specify the Prism Element UUID";
        required(&mut errs, &pe.uuid, &pe_path.child("uuid"), detail);
        errs.extend(endpoint(&pe.endpoint, &pe_path.child("endpoint"), Prism::Element));
    }
    errs.extend(subnets(&p.subnet_uuids, &path.child("subnetUUIDs")));
    errs.extend(load_balancer_type(p.load_balancer.as_ref(), path));
    if let Some(domains) = p.failure_domains.as_ref().and_then(Value::as_array) {
        errs.extend(failure_domains(domains, &path.child("failureDomain")));
    }
    errs
}

/// Which Prism an endpoint belongs to, for the messages.
#[derive(Clone, Copy)]
enum Prism {
    Central,
    Element,
}

fn endpoint(e: &PrismEndpoint, path: &Path, prism: Prism) -> Vec<FieldError> {
    let (name, host) = match prism {
        Prism::Central => ("Prism Central", "Prism Central"),
        Prism::Element => ("Prism Element", "Prism Element (cluster)"),
    };
    let mut errs = Vec::new();
    let at = path.child("address");
    if e.address.is_empty() {
        let detail = format!("must specify the {name} endpoint address");
        errs.push(FieldError::required(&at, detail));
    } else if e.address.parse::<IpAddr>().is_err() && super::names::subdomain(&e.address).is_err() {
        let detail = format!("must be the domain name or IP address of the {host}");
        errs.push(FieldError::invalid(&at, &e.address, detail));
    }
    // An unset port is Go's zero value, which the range refuses.
    let port = e.port.unwrap_or(0);
    if !(1..=65535).contains(&port) {
        let detail =
            format!("The {name} endpoint port is invalid, must be in the range of 1 to 65535");
        errs.push(FieldError::invalid(&path.child("port"), i64::from(port), detail));
    }
    errs
}

/// The installer's `validateSubnets`: at least one (the first not empty), at most
/// [`MAX_SUBNETS`], no repeats.
fn subnets(uuids: &[String], path: &Path) -> Vec<FieldError> {
    match uuids {
        [] => vec![FieldError::required(path, "must specify at least one subnet")],
        [first, ..] if first.is_empty() => {
            vec![FieldError::required(path, "must specify at least one subnet")]
        }
        _ if uuids.len() > MAX_SUBNETS => {
            vec![FieldError::too_many(path, uuids.len(), MAX_SUBNETS)]
        }
        _ => {
            let mut seen = BTreeSet::new();
            uuids
                .iter()
                .filter(|uuid| !seen.insert(uuid.as_str()))
                .map(|uuid| FieldError::invalid(path, uuid, "should not configure duplicate value"))
                .collect()
        }
    }
}

/// The failure-domain rules on what the Infrastructure carries: a name holding a DNS-label
/// run (the installer's pattern is not anchored), each name once, each Prism Element and
/// subnet set once, a Prism Element UUID, and the subnets.
fn failure_domains(domains: &[Value], path: &Path) -> Vec<FieldError> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    let mut topologies: BTreeMap<String, String> = BTreeMap::new();
    for domain in domains {
        let name = text(domain.get("name"));
        let name_at = path.child("name");
        if !name.bytes().any(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            let detail =
                "failureDomain name should match the pattern \"[a-z0-9]([-a-z0-9]*[a-z0-9])?\".";
            errs.push(FieldError::invalid(&name_at, &name, detail));
        }
        if !names.insert(name.clone()) {
            errs.push(FieldError::duplicate(&name_at, &name));
        }
        let pe_uuid = text(domain.get("prismElement").and_then(|pe| pe.get("uuid")));
        let subnet_uuids: Vec<String> = domain
            .get("subnetUUIDs")
            .and_then(Value::as_array)
            .map(|list| list.iter().map(|s| text(Some(s))).collect())
            .unwrap_or_default();
        let mut sorted = subnet_uuids.clone();
        sorted.sort();
        let topology = format!("{pe_uuid}/[{}]", sorted.join(","));
        if let Some(existing) = topologies.get(&topology) {
            let detail = format!(
                "failureDomain has the same topology (prismElement {} and subnetUUIDs) as failureDomain {}, each failureDomain must reference distinct infrastructure",
                super::field::go_quote(&pe_uuid),
                super::field::go_quote(existing)
            );
            errs.push(FieldError::invalid(&name_at, &name, detail));
        } else {
            topologies.insert(topology, name.clone());
        }
        if pe_uuid.is_empty() {
            let at = path.child("prismElement").child("uuid");
            errs.push(FieldError::required(&at, "failureDomain prismElement uuid cannot be empty"));
        }
        errs.extend(subnets(&subnet_uuids, &path.child("subnetUUIDs")));
    }
    errs
}

#[cfg(test)]
mod tests;
