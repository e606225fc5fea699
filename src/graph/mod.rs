//! The asset graph: assets declare their parents and turn them into content and files.
//!
//! The whole contract is on this screen. An [`Asset`] has a stable id (used in the state file,
//! in logs and by `ccm-assets graph`), a human name, the ids it depends on, and `generate`, which
//! reads its declared parents through [`Parents`] and returns an [`Output`]: a JSON `content`
//! (what dependents read) and the [`File`]s to write. An asset whose files a user may edit
//! implements `load` to turn the edited files back into content, so dependents follow the edit.
//! [`store::resolve`] walks the graph, [`write::commit`] puts the result on disk atomically.

pub mod dot;
pub mod parents;
pub mod state;
pub mod store;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};

pub use parents::Parents;
use serde::Serialize;
use serde_json::Value;

/// A stable asset id such as `"cloud-provider-config"`; renaming one orphans old state.
pub type AssetId = &'static str;

/// An asset's id together with the type of its content, so that a parent is read as what it
/// is: `parents.get(&cluster_id::KEY)` is a `ClusterId`, never a guess at the call site.
pub struct Key<T> {
    /// The asset's id.
    pub id: AssetId,
    content: std::marker::PhantomData<fn() -> T>,
}

impl<T> Key<T> {
    /// The key of asset `id`, whose content decodes as `T`.
    pub const fn new(id: AssetId) -> Key<T> {
        Key { id, content: std::marker::PhantomData }
    }

    /// The same asset read as raw JSON (to re-serialize it untouched).
    pub const fn raw(&self) -> Key<Value> {
        Key::new(self.id)
    }
}

impl<T> std::fmt::Debug for Key<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Key").field(&self.id).finish()
    }
}

/// The error an asset returns from `generate` or `load`: each asset family has its own type.
pub type AssetError = Box<dyn std::error::Error + Send + Sync>;

/// One node of the graph.
pub trait Asset: Send + Sync {
    /// The stable id.
    fn id(&self) -> AssetId;
    /// The name shown to humans in logs ("Install Config").
    fn name(&self) -> &'static str;
    /// The ids of the assets `generate` reads; reading any other id is an error.
    fn dependencies(&self) -> &'static [AssetId];
    /// Produces content and files from the declared parents (and, to keep generated ids and
    /// keys stable, from this asset's previous content). Must be deterministic otherwise.
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError>;
    /// Rebuilds content from files a user edited, so dependents are regenerated from the edit.
    /// `None` (the default) means edits are kept on disk but dependents see generated content.
    fn load(&self, files: &[File]) -> Option<Result<Value, AssetError>> {
        let _ = files;
        None
    }
}

/// A file an asset writes, relative to the asset directory.
#[derive(Clone, PartialEq, Eq)]
pub struct File {
    /// Path relative to the asset directory, `/`-separated (`manifests/cluster-config.yaml`).
    pub path: String,
    /// The exact bytes.
    pub bytes: Vec<u8>,
    /// Secrets are written with mode 0600, other files 0644.
    pub secret: bool,
}

impl File {
    /// A plain file (mode 0644).
    pub fn new(path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> File {
        File { path: path.into(), bytes: bytes.into(), secret: false }
    }

    /// A file holding secrets (mode 0600).
    pub fn secret(path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> File {
        File { path: path.into(), bytes: bytes.into(), secret: true }
    }
}

impl std::fmt::Debug for File {
    // The bytes may be a secret: never print them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("path", &self.path)
            .field("len", &self.bytes.len())
            .field("secret", &self.secret)
            .finish()
    }
}

/// What `generate` returns.
#[derive(Debug, Default)]
pub struct Output {
    /// What dependents read through [`Parents::get`]; persisted in the state file.
    pub content: Value,
    /// The files to write (possibly none).
    pub files: Vec<File>,
}

impl Output {
    /// Output with `content` serialized to JSON and no files yet.
    pub fn new<T: Serialize>(content: &T) -> Result<Output, AssetError> {
        Ok(Output { content: serde_json::to_value(content)?, files: Vec::new() })
    }

    /// Adds a file.
    #[must_use]
    pub fn with_file(mut self, file: File) -> Output {
        self.files.push(file);
        self
    }
}

/// Errors of the graph engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two assets share an id.
    #[error("asset {0:?} is registered twice")]
    DuplicateAsset(AssetId),
    /// A dependency names an asset that is not registered.
    #[error("asset {asset:?} depends on unknown asset {parent:?}")]
    UnknownDependency {
        /// The asset declaring the dependency.
        asset: AssetId,
        /// The missing id.
        parent: AssetId,
    },
    /// A target names an asset that is not registered.
    #[error("unknown target asset {0:?}")]
    UnknownTarget(String),
    /// The dependencies form a cycle.
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<AssetId>),
    /// An asset read a parent it did not declare.
    #[error("asset {asset:?} read {parent:?}, which is not among its declared dependencies")]
    UndeclaredParent {
        /// The reading asset.
        asset: AssetId,
        /// The id it tried to read.
        parent: AssetId,
    },
    /// A parent's content did not have the shape the reader expected.
    #[error("asset {asset:?} could not read the content of {parent:?}")]
    ParentContent {
        /// The reading asset.
        asset: AssetId,
        /// The parent.
        parent: AssetId,
        /// Why decoding failed.
        #[source]
        source: serde_json::Error,
    },
    /// `generate` failed.
    #[error("failed to generate {name}")]
    Generate {
        /// The asset's human name.
        name: &'static str,
        /// The asset's own error.
        #[source]
        source: AssetError,
    },
    /// `load` failed on a user-edited file.
    #[error("failed to load the edited files of {name} ({files})")]
    Load {
        /// The asset's human name.
        name: &'static str,
        /// The edited files, comma-separated.
        files: String,
        /// The asset's own error.
        #[source]
        source: AssetError,
    },
    /// An asset produced a path that is absolute, escapes the directory, or is reserved.
    #[error("asset {asset:?} produced an invalid path {path:?}: {reason}")]
    BadPath {
        /// The asset.
        asset: AssetId,
        /// The offending path.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two assets produced the same path.
    #[error("assets {first:?} and {second:?} both write {path:?}")]
    PathConflict {
        /// The first writer.
        first: AssetId,
        /// The second writer.
        second: AssetId,
        /// The shared path.
        path: String,
    },
    /// Reading the asset directory failed.
    #[error("could not read {path}")]
    Read {
        /// The path being read.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The state file could not be serialized.
    #[error("could not serialize the state file")]
    State(#[source] serde_json::Error),
    /// Writing failed; the directory was restored.
    #[error(transparent)]
    Write(#[from] write::Error),
}

/// Result alias for the graph engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The registered assets, checked: unique ids, known dependencies, no cycles.
pub struct Graph {
    assets: BTreeMap<AssetId, Box<dyn Asset>>,
    order: Vec<AssetId>,
}

impl Graph {
    /// Checks and indexes `assets`; `order` keeps their registration order for display.
    pub fn new(assets: Vec<Box<dyn Asset>>) -> Result<Graph> {
        let mut map = BTreeMap::new();
        let mut order = Vec::with_capacity(assets.len());
        for asset in assets {
            let id = asset.id();
            if map.insert(id, asset).is_some() {
                return Err(Error::DuplicateAsset(id));
            }
            order.push(id);
        }
        for asset in map.values() {
            for parent in asset.dependencies() {
                if !map.contains_key(parent) {
                    return Err(Error::UnknownDependency { asset: asset.id(), parent });
                }
            }
        }
        let graph = Graph { assets: map, order };
        graph.topological(&graph.order)?;
        Ok(graph)
    }

    /// The asset with this id.
    pub fn get(&self, id: &str) -> Option<&dyn Asset> {
        self.assets.get(id).map(|a| a.as_ref())
    }

    /// Every asset id in registration order.
    pub fn ids(&self) -> &[AssetId] {
        &self.order
    }

    /// The targets and everything they depend on, dependencies first (depth-first, each once).
    pub fn topological(&self, targets: &[AssetId]) -> Result<Vec<AssetId>> {
        let mut done = BTreeSet::new();
        let mut path = Vec::new();
        let mut out = Vec::new();
        for target in targets {
            if !self.assets.contains_key(target) {
                return Err(Error::UnknownTarget((*target).to_owned()));
            }
            self.visit(target, &mut done, &mut path, &mut out)?;
        }
        Ok(out)
    }

    fn visit(
        &self,
        id: AssetId,
        done: &mut BTreeSet<AssetId>,
        path: &mut Vec<AssetId>,
        out: &mut Vec<AssetId>,
    ) -> Result<()> {
        if done.contains(id) {
            return Ok(());
        }
        if let Some(start) = path.iter().position(|p| *p == id) {
            let mut cycle = path[start..].to_vec();
            cycle.push(id);
            return Err(Error::Cycle(cycle));
        }
        path.push(id);
        for parent in self.assets[id].dependencies() {
            self.visit(parent, done, path, out)?;
        }
        path.pop();
        done.insert(id);
        out.push(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
