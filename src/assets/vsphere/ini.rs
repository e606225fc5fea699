//! The legacy gcfg (INI) cloud config, laid out byte for byte as the installer's
//! `CloudProviderConfigIni` writes it.
//!
//! Every value is double-quoted ([`gcfg::quoted`]; the installer uses Go's `%q`, identical for
//! the printable ASCII these values hold) and empty ones are left out. The installer's layout
//! is kept as is, quirks included: a blank line after `port`, none between two
//! `[VirtualCenter]` sections, a blank line ending `[Workspace]`.

use std::fmt::Write as _;

use super::{REGION_TAG_CATEGORY, SECRET_NAME, SECRET_NAMESPACE, ZONE_TAG_CATEGORY, datacenters};
use crate::installconfig::VspherePlatform;
use ccm_formats::gcfg;

/// `[Global]`, one `[VirtualCenter "<server>"]` per vCenter, `[Workspace]` from the first
/// failure domain (folder `/<datacenter>/vm/<infraID>` unless set), and `[Labels]` with more
/// than one failure domain. Without failure domains (the installer always has one: it would
/// fail), `[Workspace]` falls back to the first vCenter and its first datacenter.
pub(super) fn render(p: &VspherePlatform, infra_id: &str) -> String {
    let mut out = String::from("[Global]\n");
    line(&mut out, "secret-name", SECRET_NAME);
    line(&mut out, "secret-namespace", SECRET_NAMESPACE);
    line(&mut out, "insecure-flag", "1");
    out.push('\n');

    for vc in &p.vcenters {
        let _ = writeln!(out, "[VirtualCenter {}]", gcfg::quoted(&vc.server));
        if let Some(port) = vc.port.filter(|port| *port != 0) {
            line(&mut out, "port", &port.to_string());
            out.push('\n');
        }
        line(&mut out, "datacenters", &datacenters(p, vc).join(","));
    }
    out.push('\n');

    let first_domain = p.failure_domains.first();
    let first_vcenter = p.vcenters.first();
    let server = match first_domain {
        Some(fd) => fd.server.as_str(),
        None => first_vcenter.map(|vc| vc.server.as_str()).unwrap_or_default(),
    };
    let datacenter = match first_domain {
        Some(fd) => fd.topology.datacenter.as_deref().unwrap_or_default(),
        None => first_vcenter.and_then(|vc| vc.datacenters.first()).map_or("", String::as_str),
    };
    let topology = first_domain.map(|fd| &fd.topology);
    let folder = match topology.and_then(|t| t.folder.as_ref()).filter(|f| !f.is_empty()) {
        Some(folder) => folder.clone(),
        None => format!("/{datacenter}/vm/{infra_id}"),
    };
    out.push_str("[Workspace]\n");
    line(&mut out, "server", server);
    line(&mut out, "datacenter", datacenter);
    line(
        &mut out,
        "default-datastore",
        topology.and_then(|t| t.datastore.as_deref()).unwrap_or_default(),
    );
    line(&mut out, "folder", &folder);
    line(
        &mut out,
        "resourcepool-path",
        topology.and_then(|t| t.resource_pool.as_deref()).unwrap_or_default(),
    );
    out.push('\n');

    if p.failure_domains.len() > 1 {
        out.push_str("[Labels]\n");
        line(&mut out, "region", REGION_TAG_CATEGORY);
        line(&mut out, "zone", ZONE_TAG_CATEGORY);
    }
    out
}

/// `key = "value"`, or nothing for an empty value (the installer's `printIfNotEmpty`).
fn line(out: &mut String, key: &str, value: &str) {
    if !value.is_empty() {
        let _ = writeln!(out, "{key} = {}", gcfg::quoted(value));
    }
}
