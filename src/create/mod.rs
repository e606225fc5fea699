//! `create manifests` as one library call: the only place its pipeline is assembled. The
//! command line, the integration tests and the benchmarks all come through here.
//!
//! ```text
//!  Request (dir, env, flags) ─ install-config.yaml (defaults, validation)
//!                            ─ platform provider: load_access (credentials, clouds.yaml)
//!                            ─ inputs: images, lookup (online/offline), DIR/tls
//!                            ─ assets::graph ─ graph::store::create (keep edits, commit) ─ Outcome
//! ```

pub mod inputs;

use std::path::{Path, PathBuf};

pub use crate::assets::env::{CredentialVars, Env};
pub use inputs::{CaError, INSTALL_CONFIG, install_config_path};

use crate::assets::cloud_access::AccessRequest;
use crate::assets::options::{ConfigFormat, Options};
use crate::assets::{self, Inputs, ccm, platform};
use crate::graph::{Graph, store};
use crate::installconfig;

/// Everything one `create manifests` run is given.
#[derive(Debug, Clone)]
pub struct Request {
    /// The asset directory (`--dir`).
    pub dir: PathBuf,
    /// The environment (the command line captures the process's once).
    pub env: Env,
    /// `--offline`: no cloud call.
    pub offline: bool,
    /// `--infra-id`.
    pub infra_id: Option<String>,
    /// `--ccm-image`.
    pub ccm_image: Option<String>,
    /// `--ccm-assets-image`.
    pub ccm_assets_image: Option<String>,
    /// `--ibm-account-id`.
    pub ibm_account_id: Option<String>,
    /// `--vsphere-config-format`.
    pub vsphere_config_format: ConfigFormat,
    /// `--leader-migration`.
    pub leader_migration: bool,
}

impl Request {
    /// A run on `dir` in environment `env`, online, with every flag at its default.
    pub fn new(dir: impl Into<PathBuf>, env: Env) -> Request {
        Request {
            dir: dir.into(),
            env,
            offline: false,
            infra_id: None,
            ccm_image: None,
            ccm_assets_image: None,
            ibm_account_id: None,
            vsphere_config_format: ConfigFormat::default(),
            leader_migration: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Files written (created or replaced), relative to the directory.
    pub written: Vec<String>,
    /// Files removed (generated earlier, no longer produced).
    pub removed: Vec<String>,
}

impl Outcome {
    /// True when the directory was already up to date.
    pub fn unchanged(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }
}

/// The asset graph of a request, with the input files no asset may overwrite (relative to
/// the directory): what [`create_manifests`] commits, and what the benchmarks resolve.
pub struct Prepared {
    /// Every asset, inputs loaded.
    pub graph: Graph,
    /// Inputs inside the directory (install-config.yaml, a clouds.yaml there).
    pub reserved: Vec<String>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("reserved", &self.reserved).finish_non_exhaustive()
    }
}

/// Loads the inputs of `request` and builds its graph; reads files and, online, asks the cloud
/// (the IBM account), but writes nothing.
pub fn prepare(request: &Request) -> anyhow::Result<Prepared> {
    let config = load_install_config(&request.dir, &request.env)?.config;
    let row = platform::of(&config)?;
    if request.leader_migration {
        // Before any cloud is asked: the flag cannot work here whatever the cloud says.
        ccm::leader_migration::supported_ccm(row)?;
    }
    let loaded = row.provider.load_access(&AccessRequest {
        config: &config,
        env: &request.env,
        ibm_account_id: request.ibm_account_id.as_deref(),
        offline: request.offline,
    })?;
    let mut reserved = vec![INSTALL_CONFIG.to_owned()];
    reserved.extend(loaded.inputs.iter().filter_map(|file| relative_to(file, &request.dir)));
    let inputs = Inputs {
        install_config: Some(config),
        access: loaded.access,
        infra_id: request.infra_id.clone(),
        lookup: Some(inputs::lookup(request.offline)),
        options: Options {
            vsphere_config_format: request.vsphere_config_format,
            leader_migration: request.leader_migration,
        },
        images: inputs::images(request.ccm_image.clone(), request.ccm_assets_image.clone()),
        tls: inputs::tls(&request.dir)?,
    };
    Ok(Prepared { graph: assets::graph(inputs)?, reserved })
}

/// Runs `create manifests`: every manifest generated, user edits kept, all written at once
/// (or nothing, on any error).
pub fn create_manifests(request: &Request) -> anyhow::Result<Outcome> {
    let Prepared { graph, reserved } = prepare(request)?;
    let reserved: Vec<&str> = reserved.iter().map(String::as_str).collect();
    let run = store::create(&graph, &request.dir, assets::MANIFEST_TARGETS, &reserved)?;
    Ok(Outcome {
        written: run.plan.writes.iter().map(|f| f.path.clone()).collect(),
        removed: run.plan.removes.clone(),
    })
}

/// Loads, defaults and validates `dir/install-config.yaml`, logging its warnings.
pub fn load_install_config(dir: &Path, env: &Env) -> anyhow::Result<installconfig::Loaded> {
    let loaded = installconfig::load(&install_config_path(dir), &env.install_config_defaults())?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    tracing::info!("Loaded {INSTALL_CONFIG}");
    Ok(loaded)
}

/// `file`'s path relative to `dir` when it lies inside it (an input no asset may overwrite).
fn relative_to(file: &Path, dir: &Path) -> Option<String> {
    let file = file.canonicalize().ok()?;
    let dir = dir.canonicalize().ok()?;
    file.strip_prefix(dir).ok().map(|p| p.to_string_lossy().into_owned())
}
