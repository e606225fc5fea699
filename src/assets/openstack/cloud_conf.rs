//! OpenStack's cloud.conf: the installer's (the cloud-provider ConfigMap's `config`) and the
//! CCM's own derivations of it.
//!
//! `manifests/cloud-provider-config.yaml` holds the cloud.conf every other config is derived
//! from, so a user's edit of it flows downstream: [`in_cluster`] turns it into the in-cluster
//! CCM's `cloud-conf` (the cluster-cloud-controller-manager-operator's transform) and
//! [`bootstrap`] into the bootstrap node's cloud.conf.

use super::{CA_PATH, CREDENTIALS_NAMESPACE, CREDENTIALS_SECRET, Cloud};
use crate::assets::cloud_facts::CloudFacts;
use ccm_formats::gcfg::{self, Document, Section};

/// Where the in-cluster CCM finds clouds.yaml (the mounted `openstack-cloud-credentials`).
pub const CLOUDS_FILE: &str = "/etc/openstack/secret/clouds.yaml";

/// Where the bootstrap node keeps the CA bundle (beside the bootstrap cloud.conf).
pub const BOOTSTRAP_CA_PATH: &str = "/etc/kubernetes/bootstrap-configs/ca-bundle.pem";

/// A cloud.conf that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// It does not parse as gcfg.
    #[error("cloud.conf does not parse")]
    Parse(#[source] gcfg::ParseError),
    /// A key the in-cluster CCM cannot honour holds a value other than the installer's.
    #[error(
        "'[Global] {key}' is set to a non-default value {value:?} (only {default:?} is supported)"
    )]
    NonDefault {
        /// The key.
        key: &'static str,
        /// What it holds.
        value: String,
        /// What it may hold.
        default: &'static str,
    },
}

/// The installer's cloud.conf for `cloud` and `facts`.
pub fn cloud_conf(cloud: &Cloud, facts: &CloudFacts) -> String {
    cloud_conf_routed(cloud, facts, None)
}

/// [`cloud_conf`], with `[Route] router-id` when the install-config names a router
/// (`platform.openstack.routerID`, ours). See: issue 27.
pub fn cloud_conf_routed(cloud: &Cloud, facts: &CloudFacts, router_id: Option<&str>) -> String {
    let mut global = Section::new("Global")
        .with("secret-name", CREDENTIALS_SECRET)
        .with("secret-namespace", CREDENTIALS_NAMESPACE);
    if let Some(region) = cloud.entry.region_name.as_deref().filter(|r| !r.is_empty()) {
        global = global.with("region", region);
    }
    if cloud.ca_bundle.is_some() {
        global = global.with("ca-file", CA_PATH);
    }
    let mut doc = Document { sections: vec![global] };
    if !facts.load_balancer {
        // Without Octavia the CCM would fail at start; the installer turns the service off.
        doc.sections.push(Section::new("LoadBalancer").with("enabled", "false"));
    } else if let Some(id) = &facts.floating_network_id {
        doc.sections.push(Section::new("LoadBalancer").with("floating-network-id", id.as_str()));
    }
    if let Some(router) = router_id {
        doc.sections.push(Section::new("Route").with("router-id", router));
    }
    doc.to_string()
}

/// The in-cluster CCM's cloud.conf: drop what only the legacy provider read (refusing values
/// it cannot honour), read credentials from the mounted clouds.yaml, drop `[BlockStorage]`,
/// and give `[LoadBalancer]` the operator's defaults unless the user set them.
pub fn in_cluster(config: &str) -> Result<String, Error> {
    let mut doc = gcfg::parse(config).map_err(Error::Parse)?;
    for (key, default) in [
        ("secret-name", CREDENTIALS_SECRET),
        ("secret-namespace", CREDENTIALS_NAMESPACE),
        ("kubeconfig-path", ""),
    ] {
        if let Some(bad) = doc.remove("Global", key).into_iter().find(|e| e.text() != default) {
            return Err(Error::NonDefault { key, value: bad.text().to_owned(), default });
        }
    }
    if !doc.has_section("Global") {
        doc.sections.insert(0, Section::new("Global"));
    }
    doc.set("Global", "use-clouds", "true");
    doc.set("Global", "clouds-file", CLOUDS_FILE);
    doc.set("Global", "cloud", "openstack");
    doc.remove_section("BlockStorage");
    doc.remove("LoadBalancer", "use-octavia");
    for (key, value) in [("max-shared-lb", "1"), ("manage-security-groups", "true")] {
        if doc.get("LoadBalancer", key).is_none() {
            doc.set("LoadBalancer", key, value);
        }
    }
    Ok(doc.to_string())
}

/// The bootstrap CCM's cloud.conf: the same file, with the CA read from beside it. It keeps
/// `secret-name`/`secret-namespace`: the bootstrap CCM reads that Secret through the API.
pub fn bootstrap(config: &str) -> Result<String, Error> {
    let mut doc = gcfg::parse(config).map_err(Error::Parse)?;
    if doc.get("Global", "ca-file") == Some(CA_PATH) {
        doc.set("Global", "ca-file", BOOTSTRAP_CA_PATH);
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests;
