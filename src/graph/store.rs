//! Depth-first resolution: generate each asset once, keep user edits, regenerate what follows.
//!
//! For every file an asset produces, three hashes decide what happens: the newly generated
//! bytes, the bytes generated last time (from the state) and what is on disk now.
//!
//! | on disk                         | result                                              |
//! |---------------------------------|-----------------------------------------------------|
//! | missing                         | written                                             |
//! | equal to the new bytes          | untouched (mtime kept)                              |
//! | what we generated last time     | rewritten with the new bytes                        |
//! | edited, our output unchanged    | the edit is kept; `Asset::load` feeds it downstream |
//! | edited, our output changed      | rewritten; the discarded edit is named in a warning |
//! | not written by ccm-assets       | rewritten with a warning                            |
//!
//! Files generated last time and no longer produced are removed unless edited. Nothing touches
//! the disk until every asset has been generated; then [`super::write::commit`] applies it all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::state::{self, AssetState, State};
use super::write::{self, Plan};
use super::{AssetId, Error, File, Graph, Parents, Result};

/// Something the user should hear about, logged once the commit succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A file was created or updated.
    Wrote(String),
    /// A generated file the user deleted was written again.
    Restored(String),
    /// A user's edit was kept because the generated output did not change.
    KeptEdit(String),
    /// A user's edit was overwritten because the generated output changed.
    DiscardedEdit(String),
    /// A file ccm-assets had not written was overwritten.
    Replaced(String),
    /// A file ccm-assets wrote earlier and no longer produces was deleted.
    Removed(String),
    /// A file ccm-assets no longer produces was kept because the user edited it.
    KeptStale(String),
    /// The state file could not be used and was ignored.
    IgnoredState(String),
}

impl Note {
    /// Logs the note in the installer's style.
    pub fn log(&self) {
        match self {
            Note::Wrote(p) => tracing::info!("Wrote {p}"),
            Note::Restored(p) => tracing::info!("Restored {p}, which had been deleted"),
            Note::KeptEdit(p) => tracing::info!("Kept user edits to {p}"),
            Note::DiscardedEdit(p) => {
                tracing::warn!("Discarded user edits to {p}: its inputs changed")
            }
            Note::Replaced(p) => {
                tracing::warn!("Replaced {p}, which was not written by ccm-assets")
            }
            Note::Removed(p) => tracing::info!("Removed {p}, which is no longer generated"),
            Note::KeptStale(p) => {
                tracing::warn!("Kept {p}: it is no longer generated, but it was edited")
            }
            Note::IgnoredState(why) => {
                tracing::warn!("Ignoring the unreadable {}: {why}", state::FILE_NAME)
            }
        }
    }
}

/// Everything one run decided, before anything is written.
#[derive(Debug, Default)]
pub struct Resolution {
    /// What to write and delete, the state file included.
    pub plan: Plan,
    /// What to tell the user.
    pub notes: Vec<Note>,
    /// The content of every resolved asset.
    pub contents: BTreeMap<AssetId, Value>,
    /// Assets whose `generate` left declared parents unread, with those parents.
    pub unread: Vec<(AssetId, Vec<AssetId>)>,
}

/// Resolves `targets` against the files and state in `dir`. `reserved` are input file names
/// that no asset may write.
pub fn resolve(
    graph: &Graph,
    dir: &Path,
    targets: &[AssetId],
    reserved: &[&str],
) -> Result<Resolution> {
    let mut out = Resolution::default();
    let old = match state::load(dir)
        .map_err(|source| Error::Read { path: dir.join(state::FILE_NAME), source })?
    {
        state::Loaded::Found(s) => s,
        state::Loaded::Missing => State::new(),
        state::Loaded::Unusable(why) => {
            out.notes.push(Note::IgnoredState(why));
            State::new()
        }
    };
    let mut new = State::new();
    let mut owners: BTreeMap<String, AssetId> = BTreeMap::new();
    for id in graph.topological(targets)? {
        let asset = graph.get(id).expect("topological returns registered ids");
        let previous = old.assets.get(id).map(|a| &a.content);
        let (content, files) = {
            let parents = Parents::new(id, asset.dependencies(), &out.contents, previous);
            tracing::debug!("Generating {}", asset.name());
            let output = asset
                .generate(&parents)
                .map_err(|source| Error::Generate { name: asset.name(), source })?;
            let unread = parents.unread();
            if !unread.is_empty() {
                out.unread.push((id, unread));
            }
            (output.content, output.files)
        };
        let mut recorded = BTreeMap::new();
        let mut on_disk = Vec::with_capacity(files.len());
        let mut edited = Vec::new();
        for file in files {
            check_path(id, &file.path, reserved)?;
            if let Some(first) = owners.insert(file.path.clone(), id) {
                return Err(Error::PathConflict { first, second: id, path: file.path });
            }
            let last = old.assets.get(id).and_then(|a| a.files.get(&file.path));
            recorded.insert(file.path.clone(), state::sha256(&file.bytes));
            match reconcile(dir, &file, last.map(String::as_str), &mut out)? {
                Some(disk) => {
                    edited.push(file.path.clone());
                    on_disk.push(File { bytes: disk, ..file });
                }
                None => on_disk.push(file),
            }
        }
        let content = match (edited.is_empty(), asset.load(&on_disk)) {
            (false, Some(loaded)) => loaded.map_err(|source| Error::Load {
                name: asset.name(),
                files: edited.join(", "),
                source,
            })?,
            _ => content,
        };
        new.assets.insert(id.to_owned(), AssetState { content: content.clone(), files: recorded });
        out.contents.insert(id, content);
    }
    remove_stale(dir, &old, &owners, &mut out)?;
    let state_bytes = new.to_bytes().map_err(Error::State)?;
    if read_existing(dir, state::FILE_NAME)?.as_deref() != Some(state_bytes.as_slice()) {
        out.plan.writes.push(File::secret(state::FILE_NAME, state_bytes));
    }
    Ok(out)
}

/// Resolves and commits; returns the notes (already logged) for callers and tests.
pub fn create(
    graph: &Graph,
    dir: &Path,
    targets: &[AssetId],
    reserved: &[&str],
) -> Result<Resolution> {
    let resolution = resolve(graph, dir, targets, reserved)?;
    write::commit(dir, &resolution.plan)?;
    for note in &resolution.notes {
        note.log();
    }
    Ok(resolution)
}

/// Decides one file; returns the on-disk bytes when a user edit is kept.
fn reconcile(
    dir: &Path,
    file: &File,
    last: Option<&str>,
    out: &mut Resolution,
) -> Result<Option<Vec<u8>>> {
    let new_hash = state::sha256(&file.bytes);
    let Some(disk) = read_existing(dir, &file.path)? else {
        let note = if last.is_some() { Note::Restored } else { Note::Wrote };
        out.notes.push(note(file.path.clone()));
        out.plan.writes.push(file.clone());
        return Ok(None);
    };
    if disk == file.bytes {
        return Ok(None);
    }
    let disk_hash = state::sha256(&disk);
    let note = match last {
        Some(last) if last == disk_hash => Note::Wrote(file.path.clone()),
        Some(last) if last == new_hash => {
            out.notes.push(Note::KeptEdit(file.path.clone()));
            return Ok(Some(disk));
        }
        Some(_) => Note::DiscardedEdit(file.path.clone()),
        None => Note::Replaced(file.path.clone()),
    };
    out.notes.push(note);
    out.plan.writes.push(file.clone());
    Ok(None)
}

fn remove_stale(
    dir: &Path,
    old: &State,
    produced: &BTreeMap<String, AssetId>,
    out: &mut Resolution,
) -> Result<()> {
    let mut seen = BTreeSet::new();
    for asset in old.assets.values() {
        for (path, hash) in &asset.files {
            if produced.contains_key(path)
                || !seen.insert(path)
                || check_path("", path, &[]).is_err()
            {
                continue;
            }
            match read_existing(dir, path)? {
                None => {}
                Some(disk) if state::sha256(&disk) == *hash => {
                    out.notes.push(Note::Removed(path.clone()));
                    out.plan.removes.push(path.clone());
                }
                Some(_) => out.notes.push(Note::KeptStale(path.clone())),
            }
        }
    }
    Ok(())
}

fn read_existing(dir: &Path, rel: &str) -> Result<Option<Vec<u8>>> {
    let path = dir.join(rel);
    crate::files::if_exists(std::fs::read(&path)).map_err(|source| Error::Read { path, source })
}

fn check_path(asset: AssetId, path: &str, reserved: &[&str]) -> Result<()> {
    let bad = |reason| Err(Error::BadPath { asset, path: path.to_owned(), reason });
    if path.is_empty() || path.starts_with('/') {
        return bad("it must be a relative path");
    }
    if path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return bad("it must not contain empty, `.` or `..` components");
    }
    if path == state::FILE_NAME || reserved.contains(&path) {
        return bad("it is an input or the state file");
    }
    Ok(())
}
