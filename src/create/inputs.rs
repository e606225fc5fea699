//! The inputs `create manifests` reads besides the install-config: images (flags over the
//! built-in table), how to ask the cloud, the installer's TLS files (a cloud's CA bundle is
//! read by `assets::openstack::access`, re-exported here).

use std::path::{Path, PathBuf};

use crate::assets::bootstrap::tls::{self, Tls};
use crate::assets::images::Images;
pub use crate::assets::openstack::access::{CaError, cloud};
use crate::assets::openstack::lookup;

/// The file name of the install-config inside an asset directory.
pub const INSTALL_CONFIG: &str = "install-config.yaml";

/// The install-config path inside `dir`.
pub fn install_config_path(dir: &Path) -> PathBuf {
    dir.join(INSTALL_CONFIG)
}

/// Flags over the built-in image table.
pub fn images(ccm: Option<String>, assets: Option<String>) -> Images {
    let defaults = Images::default();
    Images { ccm_override: ccm, assets: assets.unwrap_or(defaults.assets), ..defaults }
}

/// How assets ask the cloud: not at all with `--offline`.
pub fn lookup(offline: bool) -> Box<dyn lookup::Lookup> {
    if offline { Box::new(lookup::Offline) } else { Box::new(lookup::Online::default()) }
}

/// The installer's TLS files in `DIR/tls/`, each optional; the signer needs both halves.
pub fn tls(dir: &Path) -> anyhow::Result<Tls> {
    use anyhow::Context as _;
    let read = |rel: &str| -> anyhow::Result<Option<String>> {
        crate::files::if_exists(std::fs::read_to_string(dir.join(rel)))
            .with_context(|| format!("could not read {}", dir.join(rel).display()))
    };
    let signer = match (read(tls::SIGNER_CERT)?, read(tls::SIGNER_KEY)?) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => anyhow::bail!(
            "{} and {} must be given together (found only one)",
            tls::SIGNER_CERT,
            tls::SIGNER_KEY
        ),
    };
    Ok(Tls { signer, localhost_ca: read(tls::LOCALHOST_CA)? })
}
