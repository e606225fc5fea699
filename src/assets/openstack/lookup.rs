//! Facts only the cloud knows: the external network's ID and whether Octavia exists.
//!
//! The [`Lookup`] trait is the only place the generator talks to OpenStack; `--offline` swaps in
//! [`Offline`], which makes no call: `externalNetwork` must then already be an ID, and a
//! load-balancer service is assumed. [`Online`] asks the cloud through osauth.

mod online;
mod session;

pub use online::Online;
// What this asset produces is defined below the provider contract, which carries it, and named
// here too, beside the asset.
pub use crate::assets::cloud_facts::CloudFacts;

use super::Cloud;
use crate::assets::cloud_access::{self, CloudAccess};
use crate::assets::install_config;
use crate::graph::{Asset, AssetError, AssetId, Key, Output, Parents};
use crate::installconfig::InstallConfig;

/// Asset id.
pub const ID: AssetId = "openstack/cloud-facts";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<Option<CloudFacts>> = Key::new(ID);

/// Answers the questions the generator asks the cloud.
pub trait Lookup: Send + Sync + std::fmt::Debug {
    /// The ID of the network named (or identified by) `name_or_id`.
    fn network_id(&self, cloud: &Cloud, name_or_id: &str) -> Result<String, AssetError>;
    /// Whether the service catalog has a `load-balancer` endpoint.
    fn has_load_balancer(&self, cloud: &Cloud) -> Result<bool, AssetError>;
}

/// `--offline`: no call at all.
#[derive(Debug, Clone, Copy)]
pub struct Offline;

impl Lookup for Offline {
    fn network_id(&self, _: &Cloud, name_or_id: &str) -> Result<String, AssetError> {
        if crate::uuid::is_canonical(name_or_id) {
            Ok(name_or_id.to_owned())
        } else {
            Err(format!(
                "platform.openstack.externalNetwork: {name_or_id:?} is not a network ID, and \
                 --offline forbids looking the name up: give the network's ID instead"
            )
            .into())
        }
    }

    fn has_load_balancer(&self, _: &Cloud) -> Result<bool, AssetError> {
        Ok(true)
    }
}

/// Asks the cloud once per run.
#[derive(Debug)]
pub struct CloudFactsAsset {
    lookup: Option<Box<dyn Lookup>>,
}

impl CloudFactsAsset {
    /// `lookup` is `None` when only describing the graph.
    pub fn new(lookup: Option<Box<dyn Lookup>>) -> CloudFactsAsset {
        CloudFactsAsset { lookup }
    }
}

impl Asset for CloudFactsAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "OpenStack Cloud Facts"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cloud_access::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let access: CloudAccess = parents.get(&cloud_access::KEY)?;
        let (Some(openstack), Some(cloud)) = (config.platform.openstack, access.openstack()) else {
            return Ok(Output::default());
        };
        let lookup = self.lookup.as_deref().ok_or("no cloud lookup was configured")?;
        let load_balancer = lookup.has_load_balancer(cloud)?;
        let floating_network_id = match openstack.external_network.as_deref() {
            Some(network) if !network.is_empty() => Some(lookup.network_id(cloud, network)?),
            _ => None,
        };
        Output::new(&CloudFacts { floating_network_id, load_balancer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_accepts_ids_and_rejects_names() {
        let cloud = Cloud {
            name: "c".into(),
            entry: Default::default(),
            ca_bundle: None,
            trust_bundle: None,
        };
        let id = "6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6d";
        assert_eq!(Offline.network_id(&cloud, id).unwrap(), id);
        let err = Offline.network_id(&cloud, "public").unwrap_err().to_string();
        assert!(err.contains("\"public\" is not a network ID"), "{err}");
        assert!(Offline.has_load_balancer(&cloud).unwrap());
    }
}
