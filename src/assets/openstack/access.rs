//! The OpenStack cloud `create manifests` talks to: the clouds.yaml entry named by
//! `platform.openstack.cloud`, with its CA bundle read (I/O, kept out of the pure assets).

use std::path::PathBuf;

use super::Cloud;
use crate::assets::cloud_access::{AccessRequest, CloudAccess, LoadedAccess};
use crate::installconfig::clouds;

/// The selected cloud; its clouds.yaml is an input no asset may overwrite.
pub(crate) fn load(req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
    let Some(openstack) = &req.config.platform.openstack else {
        return Ok(LoadedAccess::default());
    };
    let selected = clouds::load(&clouds::search_paths(&req.env.clouds_search()), &openstack.cloud)?;
    tracing::info!("Loaded cloud {:?} from {}", selected.name, selected.file.display());
    let file = selected.file.clone();
    let mut loaded = cloud(selected)?;
    loaded.trust_bundle =
        req.config.additional_trust_bundle.clone().filter(|b| !b.trim().is_empty());
    let access = CloudAccess::OpenStack(Box::new(loaded));
    Ok(LoadedAccess { access, inputs: vec![file] })
}

/// A CA file named by `cacert` that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}: cloud {cloud:?}: cannot read its cacert {}", path.display())]
pub struct CaError {
    file: String,
    cloud: String,
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// The selected cloud with its CA bundle read (a relative `cacert` is relative to the working
/// directory, as openstacksdk has it).
pub fn cloud(selected: clouds::SelectedCloud) -> Result<Cloud, CaError> {
    let clouds::SelectedCloud { name, file, entry, .. } = selected;
    let ca_bundle = match entry.cacert.as_deref().filter(|c| !c.is_empty()) {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|source| CaError {
            file: file.display().to_string(),
            cloud: name.clone(),
            path: PathBuf::from(path),
            source,
        })?),
        None => None,
    };
    Ok(Cloud { name, entry, ca_bundle, trust_bundle: None })
}
