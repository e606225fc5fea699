//! Validation of a defaulted install-config: every error at once, sorted by field path.
//!
//! Rules and wording follow the installer's `pkg/types/validation` (and k8s `field.Error`),
//! except where noted; checks that need the cloud (does the network exist?) are not here.

mod azure;
mod field;
mod gcp;
mod keys;
mod names;
mod networking;
mod nutanix;
mod openstack;
mod platforms;
mod powervs;
mod rules;
mod uri;
mod vips;
mod vsphere;

#[cfg(test)]
pub(crate) mod tests;

use std::collections::BTreeSet;
use std::net::IpAddr;

use field::Path;
pub use field::{BadValue, ErrorKind, FieldError};
use names::NameRule;
use networking::AddressPlan;
pub(crate) use networking::parse_cidr;
pub(crate) use powervs::region_of as powervs_region_of;

use super::types::{InstallConfig, MachinePool, Proxy, Publish};

/// Feature sets the installer accepts (the empty string is the default set).
const FEATURE_SETS: &[&str] =
    &["", "CustomNoUpgrade", "DevPreviewNoUpgrade", "OKD", "TechPreviewNoUpgrade"];

/// Checks `config` (after defaults) and returns every error, sorted by field path.
pub(crate) fn validate(config: &InstallConfig) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let platform = config.platform_name();

    // The installer stops at a missing or unknown version; every error is reported here
    // (DESIGN §4: all at once). See: README, "Where we differ".
    let version = Path::new("apiVersion");
    if config.api_version.is_empty() {
        errs.push(FieldError::required(&version, "install-config version required"));
    } else if config.api_version != "v1" {
        let detail = "install-config version must be \"v1\"";
        errs.push(FieldError::invalid(&version, &config.api_version, detail));
    }
    if let Some(key) = config.ssh_key.as_deref().filter(|key| !key.is_empty()) {
        if let Err(detail) = keys::ssh_public_key(key) {
            errs.push(FieldError::invalid(&Path::new("sshKey"), key, detail));
        }
    } else if platform == "powervs" {
        errs.push(FieldError::required(&Path::new("sshKey"), "sshKey is required"));
    }
    if let Some(bundle) = config.additional_trust_bundle.as_deref().filter(|b| !b.is_empty())
        && let Err(detail) = keys::ca_bundle(bundle)
    {
        errs.push(FieldError::invalid(&Path::new("additionalTrustBundle"), bundle, detail));
    }
    if let Some(policy) = config.additional_trust_bundle_policy.as_deref()
        && !matches!(policy, "" | "Proxyonly" | "Always")
    {
        let at = Path::new("additionalTrustBundlePolicy");
        errs.push(FieldError::invalid(&at, policy, "supported values \"Proxyonly\", \"Always\""));
    }
    errs.extend(names_and_domain(config));

    let plan = AddressPlan::new(&config.networking);
    errs.extend(networking::check(&config.networking, &plan, &config.platform));
    errs.extend(vips::check(config, &plan));
    errs.extend(platforms::check(config));
    if let Some(vsphere) = &config.platform.vsphere {
        errs.extend(vsphere::check_hosts(vsphere, config));
    }
    errs.extend(machine_pools(config));
    if config.platform.openstack.is_some() {
        errs.extend(openstack::machine_pools(config));
    }
    if let Some(proxy) = &config.proxy {
        errs.extend(check_proxy(proxy, &plan));
    }
    errs.extend(publish(config));
    errs.extend(credentials_mode(config));
    errs.extend(feature_set(config));

    errs.sort_by(|a, b| a.field.cmp(&b.field));
    errs.dedup();
    errs
}

fn names_and_domain(config: &InstallConfig) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = &config.metadata.name;
    let rule = match config.platform_name() {
        "gcp" | "azure" => NameRule::Rfc1035,
        "vsphere" | "baremetal" | "openstack" | "nutanix" => NameRule::OnPremises,
        _ => NameRule::Default,
    };
    // No "required" rule: an empty name or domain fails the name rules, as in the installer.
    let name_path = Path::new("metadata").child("name");
    let name_ok = names::cluster_name(name, rule)
        .map_err(|detail| errs.push(FieldError::invalid(&name_path, name, detail)))
        .is_ok();
    let domain_path = Path::new("baseDomain");
    let domain = &config.base_domain;
    let domain_ok = names::domain(domain)
        .map_err(|detail| errs.push(FieldError::invalid(&domain_path, domain, detail)))
        .is_ok();
    if name_ok && domain_ok {
        let cluster_domain = config.cluster_domain();
        if let Err(detail) = names::domain(&cluster_domain) {
            errs.push(FieldError::invalid(&domain_path, &cluster_domain, detail));
        }
    }
    errs
}

fn machine_pools(config: &InstallConfig) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match &config.control_plane {
        None => {
            errs.push(FieldError::required(&Path::new("controlPlane"), "controlPlane is required"))
        }
        Some(pool) => {
            let path = Path::new("controlPlane");
            if pool.name != "master" {
                errs.push(FieldError::not_supported(&path.child("name"), &pool.name, &["master"]));
            }
            if pool.replicas == Some(0) {
                let detail = "number of control plane replicas must be positive";
                errs.push(FieldError::invalid(&path.child("replicas"), 0_i64, detail));
            }
            errs.extend(machine_pool(pool, &path));
        }
    }
    let path = Path::new("compute");
    let mut names = BTreeSet::new();
    for (i, pool) in config.compute.iter().enumerate() {
        let at = path.index(i);
        match pool.name.as_str() {
            "worker" => {}
            "edge" if config.platform_name() == "aws" => {}
            "edge" => errs.push(FieldError::not_supported(&at.child("name"), "edge", &["worker"])),
            other => {
                let supported = ["worker", "edge"];
                errs.push(FieldError::not_supported(&at.child("name"), other, &supported));
            }
        }
        if !names.insert(pool.name.as_str()) {
            errs.push(FieldError::duplicate(&at.child("name"), &pool.name));
        }
        errs.extend(machine_pool(pool, &at));
    }
    errs
}

/// The installer's `ValidateMachinePool`, without the per-platform machine settings.
fn machine_pool(pool: &MachinePool, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(ht) = pool.hyperthreading.as_deref()
        && !matches!(ht, "" | "Enabled" | "Disabled")
    {
        let at = path.child("hyperthreading");
        errs.push(FieldError::not_supported(&at, ht, &["Enabled", "Disabled"]));
    }
    if let Some(arch) = pool.architecture.as_deref()
        && !matches!(arch, "" | "amd64" | "arm64" | "ppc64le" | "s390x")
    {
        let supported = ["amd64", "arm64", "ppc64le", "s390x"];
        errs.push(FieldError::not_supported(&path.child("architecture"), arch, &supported));
    }
    errs
}

fn check_proxy(proxy: &Proxy, plan: &AddressPlan) -> Vec<FieldError> {
    let path = Path::new("proxy");
    let mut errs = Vec::new();
    let http = proxy.http_proxy.as_deref().unwrap_or("");
    let https = proxy.https_proxy.as_deref().unwrap_or("");
    if http.is_empty() && https.is_empty() {
        errs.push(FieldError::required(&path, "must include httpProxy or httpsProxy"));
    }
    for (key, url, schemes) in
        [("httpProxy", http, &["http"][..]), ("httpsProxy", https, &["http", "https"][..])]
    {
        if url.is_empty() {
            continue;
        }
        let at = path.child(key);
        match uri::request_uri(url) {
            Err(detail) => errs.push(FieldError::invalid(&at, url, detail)),
            Ok(scheme) if !schemes.contains(&scheme.as_str()) => {
                errs.push(FieldError::not_supported(&at, scheme.as_str(), schemes));
            }
            Ok(_) => {
                if let Some(ip) = proxy_ip(url) {
                    if plan.cluster_contains(ip) {
                        let detail = "proxy value is part of the cluster networks";
                        errs.push(FieldError::invalid(&at, url, detail));
                    }
                    if plan.service_contains(ip) {
                        let detail = "proxy value is part of the service networks";
                        errs.push(FieldError::invalid(&at, url, detail));
                    }
                }
            }
        }
    }
    let no_proxy = proxy.no_proxy.as_deref().unwrap_or("");
    if !no_proxy.is_empty() && no_proxy != "*" {
        let at = path.child("noProxy");
        if no_proxy.contains(' ') {
            errs.push(FieldError::invalid(&at, no_proxy, "noProxy must not have spaces"));
        }
        for (i, entry) in no_proxy.split(',').enumerate() {
            let entry = entry.trim();
            let valid = names::no_proxy_domain(entry).is_ok()
                || parse_cidr(entry).is_ok()
                || entry.parse::<IpAddr>().is_ok();
            if !valid {
                let detail = format!(
                    "each element of noProxy must be a IP, CIDR or domain without wildcard characters, which is violated by element {i} {}",
                    field::go_quote(entry)
                );
                errs.push(FieldError::invalid(&at, no_proxy, detail));
            }
        }
    }
    errs
}

/// The host of a proxy URL when it is an IP literal.
fn proxy_ip(url: &str) -> Option<IpAddr> {
    let authority = url.split_once("://")?.1.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split(']').next()?.parse().ok();
    }
    host.rsplit_once(':').map_or(host, |(host, _)| host).parse().ok()
}

fn publish(config: &InstallConfig) -> Vec<FieldError> {
    let path = Path::new("publish");
    let platform = config.platform_name();
    let mut errs = Vec::new();
    match &config.publish {
        Some(Publish::Other(value)) => {
            let mut supported = Publish::KNOWN.to_vec();
            supported.sort_unstable();
            errs.push(FieldError::not_supported(&path, value, &supported));
        }
        Some(Publish::Internal)
            if !matches!(platform, "aws" | "azure" | "gcp" | "ibmcloud" | "powervs") =>
        {
            let detail =
                format!("Internal publish strategy is not supported on \"{platform}\" platform");
            errs.push(FieldError::invalid(&path, "Internal", detail));
        }
        Some(Publish::Mixed) => {
            if platform != "azure" {
                let detail =
                    format!("mixed publish strategy is not supported on \"{platform}\" platform");
                errs.push(FieldError::invalid(&path, "Mixed", detail));
            }
            if config.operator_publishing_strategy.is_none() {
                let detail =
                    "please specify the operator publishing strategy for mixed publish strategy";
                errs.push(FieldError::invalid(&path, "Mixed", detail));
            }
        }
        _ => {}
    }
    if config.operator_publishing_strategy.is_some() && config.publish != Some(Publish::Mixed) {
        let value = config.publish.as_ref().map_or("", Publish::as_str);
        let detail =
            "operator publishing strategy is only allowed with mixed publishing strategy installs";
        errs.push(FieldError::invalid(&Path::new("operatorPublishingStrategy"), value, detail));
    }
    errs
}

fn credentials_mode(config: &InstallConfig) -> Vec<FieldError> {
    let Some(mode) = &config.credentials_mode else {
        return Vec::new();
    };
    let path = Path::new("credentialsMode");
    let azure_stack = config
        .platform
        .azure
        .as_ref()
        .is_some_and(|azure| azure.cloud_name == Some(super::types::AzureCloudName::Stack));
    // Sorted, as the installer lists them. OpenStack is not in the installer's table; `Manual`
    // is accepted there because it is how a user opts out of the credentials Secret (issue 3).
    let valid: &[&str] = match config.platform_name() {
        "aws" | "gcp" => &["Manual", "Mint", "Passthrough"],
        "azure" if azure_stack => &["Manual"],
        "azure" => &["Manual", "Passthrough"],
        "ibmcloud" | "powervs" | "nutanix" | "openstack" => &["Manual"],
        "" => return Vec::new(),
        other => {
            let detail = format!("cannot be set when using the \"{other}\" platform");
            return vec![FieldError::invalid(&path, mode.as_str(), detail)];
        }
    };
    if valid.contains(&mode.as_str()) {
        return Vec::new();
    }
    vec![FieldError::not_supported(&path, mode.as_str(), valid)]
}

fn feature_set(config: &InstallConfig) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let set = config.feature_set.as_deref().unwrap_or("");
    if !FEATURE_SETS.contains(&set) {
        errs.push(FieldError::not_supported(&Path::new("featureSet"), set, FEATURE_SETS));
    }
    if !config.feature_gates.is_empty() {
        let path = Path::new("featureGates");
        if set != "CustomNoUpgrade" {
            let detail = "featureGates can only be used with the CustomNoUpgrade feature set";
            errs.push(FieldError::forbidden(&path, detail));
        }
        for (i, gate) in config.feature_gates.iter().enumerate() {
            let detail = match gate.split('=').collect::<Vec<_>>().as_slice() {
                [_, value] if is_go_bool(value) => continue,
                [_, _] => {
                    "must match the format <feature-name>=<bool>, could not parse boolean value"
                }
                _ => "must match the format <feature-name>=<bool>",
            };
            errs.push(FieldError::invalid(&path.index(i), gate, detail));
        }
    }
    errs
}

/// Go's `strconv.ParseBool` spellings.
fn is_go_bool(value: &str) -> bool {
    matches!(
        value,
        "1" | "t" | "T" | "TRUE" | "true" | "True" | "0" | "f" | "F" | "FALSE" | "false" | "False"
    )
}
