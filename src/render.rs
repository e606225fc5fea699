//! Bootstrap mode: `/assets/manifests` → static pods and bootstrap configs, on the bootstrap node.
//!
//! Runs after `create manifests` and after any edits the user made to the manifests: the
//! bootstrap cloud.conf is derived again from `manifests/cloud-provider-config.yaml` (and, for
//! a CCM reading its credentials from its config, `openshift/99_cloud-creds-secret.yaml`) as
//! they are now; the static pod and the kubeconfig are taken from `bootstrap/` as `create`
//! wrote them.
//! Without a cloud-provider config (a platform with no cloud config) it renders nothing and
//! succeeds. Output is committed all at once, like `create`.

use std::path::{Path, PathBuf};

use crate::assets::bootstrap::{self, kubeconfig};
use crate::assets::cloud_provider_config as cloud_conf;
use crate::assets::{credentials, infrastructure, platform};
use crate::graph::File;
use crate::graph::write::{self, Plan};

/// Why rendering failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// An input could not be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The cloud-provider ConfigMap is unusable.
    #[error("{}", path.display())]
    CloudConfig {
        /// The ConfigMap's path.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: crate::graph::AssetError,
    },
    /// The asset directory does not exist (a typo must not look like "nothing to do").
    #[error("asset directory {} does not exist", path.display())]
    NoAssetDir {
        /// The directory given.
        path: PathBuf,
    },
    /// `create manifests` was not run (or its bootstrap files were removed).
    #[error("{} is missing: run `ccm-assets create manifests` on this directory first", path.display())]
    Missing {
        /// The expected file.
        path: PathBuf,
    },
    /// Writing the output failed (nothing was written).
    #[error(transparent)]
    Write(#[from] write::Error),
}

/// What `render` did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rendered {
    /// No cloud-provider config: nothing to start.
    Nothing,
    /// The files written, relative to the destination.
    Files(Vec<String>),
}

/// Renders the bootstrap CCM from `asset_dir` into `dest_dir`.
pub(crate) fn render(asset_dir: &Path, dest_dir: &Path) -> Result<Rendered, Error> {
    if !asset_dir.is_dir() {
        return Err(Error::NoAssetDir { path: asset_dir.to_owned() });
    }
    let map_path = asset_dir.join(cloud_conf::PATH);
    let Some(map) = read_optional(&map_path)? else {
        return Ok(Rendered::Nothing);
    };
    let content = cloud_conf::read_config_map(&map)
        .map_err(|e| Error::CloudConfig { path: map_path.clone(), source: e.into() })?;
    let row = platform_of(asset_dir)?;
    let Some(spec) = row.provider.ccm() else {
        return Ok(Rendered::Nothing);
    };
    // Only a CCM that reads its credentials from its config needs the Secret here.
    let creds_path = asset_dir.join(credentials::SECRET_PATH);
    let creds_text = if spec.inject_credentials { read_optional(&creds_path)? } else { None };
    let creds = creds_text
        .map(|text| credentials::read_secret(&text))
        .transpose()
        .map_err(|source| Error::CloudConfig { path: creds_path, source })?;
    let configs = bootstrap::configs(row.provider, &spec, &content, creds.as_ref())
        .map_err(|source| Error::CloudConfig { path: map_path, source })?;
    let mut plan = Plan::default();
    plan.writes.extend(configs);
    let pod_path = bootstrap::pod_path(spec.app);
    let pod = required(asset_dir, &pod_path)?;
    let pod_name = Path::new(&pod_path).file_name().expect("a file path").to_string_lossy();
    plan.writes.push(File::new(format!("manifests/{pod_name}"), pod));
    plan.writes
        .push(File::secret("secrets/ccm-kubeconfig", required(asset_dir, kubeconfig::PATH)?));
    let written = plan.writes.iter().map(|f| f.path.clone()).collect();
    write::commit(dest_dir, &plan)?;
    Ok(Rendered::Files(written))
}

/// The platform, as the Infrastructure manifest names it (`status.platformStatus.type`).
fn platform_of(asset_dir: &Path) -> Result<&'static platform::Platform, Error> {
    let path = asset_dir.join(infrastructure::PATH);
    let text = required(asset_dir, infrastructure::PATH)?;
    let infra: infrastructure::Infrastructure = serde_saphyr::from_str(&text)
        .map_err(|e| Error::CloudConfig { path: path.clone(), source: e.into() })?;
    let kind = infra.status.platform_status.get("type").and_then(|t| t.as_str()).unwrap_or("");
    platform::find_by_infrastructure_type(kind).ok_or_else(|| Error::CloudConfig {
        path,
        source: format!("status.platformStatus.type: unknown platform {kind:?}").into(),
    })
}

fn required(dir: &Path, rel: &str) -> Result<String, Error> {
    let path = dir.join(rel);
    read_optional(&path)?.ok_or(Error::Missing { path })
}

fn read_optional(path: &Path) -> Result<Option<String>, Error> {
    crate::files::if_exists(std::fs::read_to_string(path))
        .map_err(|source| Error::Read { path: path.to_owned(), source })
}
