//! The OpenStack cloud `create manifests` talks to: the clouds.yaml entry named by
//! `platform.openstack.cloud`, with its CA bundle read (I/O, kept out of the pure assets).

use crate::assets::cloud_access::{AccessRequest, CloudAccess, LoadedAccess};
use crate::create::inputs;
use crate::installconfig::clouds;

/// The selected cloud; its clouds.yaml is an input no asset may overwrite.
pub(crate) fn load(req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
    let Some(openstack) = &req.config.platform.openstack else {
        return Ok(LoadedAccess::default());
    };
    let selected = clouds::load(&clouds::search_paths(&req.env.clouds_search()), &openstack.cloud)?;
    tracing::info!("Loaded cloud {:?} from {}", selected.name, selected.file.display());
    let file = selected.file.clone();
    let mut cloud = inputs::cloud(selected)?;
    cloud.trust_bundle =
        req.config.additional_trust_bundle.clone().filter(|b| !b.trim().is_empty());
    let access = CloudAccess::OpenStack(Box::new(cloud));
    Ok(LoadedAccess { access, inputs: vec![file] })
}
