//! All-or-nothing writes: stage temp files, swap them in by rename, roll back on any error.
//!
//! Every new file is first written beside its target (`.NAME.ccm-tmp`); only when all are staged
//! are they renamed into place, each old file moved to a backup first. Any failure restores
//! the backups and removes temps and the directories this commit created, so a failed run leaves
//! the asset directory as it was. Secrets get mode 0600, everything else 0644.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::File;

/// A failed commit (the directory has been restored).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Creating a directory failed.
    #[error("could not create directory {path}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing a staged file failed.
    #[error("could not write {path}")]
    Stage {
        /// The file being staged.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A path inside the directory leads out of it through a symbolic link: nothing is written.
    #[error("refusing to write {path}: {link} is a symbolic link to {target}, outside {dir}")]
    Escapes {
        /// The planned file, relative to the directory.
        path: String,
        /// The link on its way, relative to the directory.
        link: String,
        /// Where the link leads.
        target: PathBuf,
        /// The directory.
        dir: PathBuf,
    },
    /// A path could not be checked (its directory is unreadable).
    #[error("could not check {path}")]
    Check {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Moving a file into place failed.
    #[error("could not replace {path}")]
    Swap {
        /// The target.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// What one commit changes.
#[derive(Debug, Default)]
pub struct Plan {
    /// Files to create or replace.
    pub writes: Vec<File>,
    /// Relative paths to delete (files ccm-assets wrote and no longer produces).
    pub removes: Vec<String>,
}

impl Plan {
    /// True when the commit would change nothing.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removes.is_empty()
    }
}

/// Applies `plan` to `dir` atomically (as far as a POSIX file system allows).
pub fn commit(dir: &Path, plan: &Plan) -> Result<(), Error> {
    commit_with(dir, plan, &mut |from, to| fs::rename(from, to))
}

/// Work done so far, undone in reverse on failure.
#[derive(Default)]
struct Journal {
    created_dirs: Vec<PathBuf>,
    staged: Vec<PathBuf>,
    /// (target, backup): the target's old file now lives at backup.
    backups: Vec<(PathBuf, PathBuf)>,
    /// Targets that now hold new content.
    placed: Vec<PathBuf>,
}

fn commit_with(
    dir: &Path,
    plan: &Plan,
    rename: &mut dyn FnMut(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), Error> {
    let paths =
        plan.writes.iter().map(|f| f.path.as_str()).chain(plan.removes.iter().map(String::as_str));
    let mut confinement = Confinement::new(dir)?;
    for path in paths {
        confinement.check(path)?;
    }
    let mut journal = Journal::default();
    let result = stage_and_swap(dir, plan, rename, &mut journal);
    match result {
        Ok(()) => {
            for (_, backup) in &journal.backups {
                // A leftover backup is harmless; the commit itself succeeded.
                let _ = fs::remove_file(backup);
            }
            Ok(())
        }
        Err(e) => {
            roll_back(journal);
            Err(e)
        }
    }
}

fn stage_and_swap(
    dir: &Path,
    plan: &Plan,
    rename: &mut dyn FnMut(&Path, &Path) -> std::io::Result<()>,
    journal: &mut Journal,
) -> Result<(), Error> {
    let mut staged = Vec::with_capacity(plan.writes.len());
    // Directories known to exist (found or created by this commit): each is looked up once.
    let mut present = BTreeSet::new();
    for file in &plan.writes {
        let target = dir.join(&file.path);
        if let Some(parent) = target.parent() {
            create_dirs(parent, &mut present, journal)?;
        }
        let temp = sibling(&target, "ccm-tmp");
        journal.staged.push(temp.clone());
        write_new(&temp, &file.bytes, if file.secret { 0o600 } else { 0o644 })
            .map_err(|source| Error::Stage { path: target.clone(), source })?;
        staged.push((temp, target));
    }
    for (temp, target) in staged {
        back_up(&target, rename, journal)?;
        rename(&temp, &target).map_err(|source| Error::Swap { path: target.clone(), source })?;
        journal.staged.retain(|s| s != &temp);
        journal.placed.push(target);
    }
    for path in &plan.removes {
        back_up(&dir.join(path), rename, journal)?;
    }
    Ok(())
}

/// Checks that no component of a planned path under `dir` is a symbolic link leading out of
/// `dir` (`DIR/manifests -> /etc` would make every write land in /etc). A link that stays inside
/// is fine; a component that does not exist yet is created as a real directory later. The
/// directory is resolved once and every component once per commit, however many planned paths
/// share it (nothing is written before all are checked).
struct Confinement<'a> {
    dir: &'a Path,
    /// `dir` resolved; `None` when it does not exist yet (nothing under it can be a link).
    root: Option<PathBuf>,
    /// Components already found to stay inside (relative to `dir`).
    checked: BTreeSet<PathBuf>,
    /// Components found missing: nothing below them can be a link.
    missing: BTreeSet<PathBuf>,
}

impl<'a> Confinement<'a> {
    fn new(dir: &'a Path) -> Result<Confinement<'a>, Error> {
        let root = match fs::canonicalize(dir) {
            Ok(root) => Some(root),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(Error::Check { path: dir.to_owned(), source }),
        };
        Ok(Confinement { dir, root, checked: BTreeSet::new(), missing: BTreeSet::new() })
    }

    fn check(&mut self, rel: &str) -> Result<(), Error> {
        let Some(root) = &self.root else { return Ok(()) };
        let dir = self.dir;
        let check = |source, path: &Path| Error::Check { path: path.to_owned(), source };
        let mut current = dir.to_owned();
        let mut relative = PathBuf::new();
        for component in Path::new(rel).components() {
            current.push(component);
            relative.push(component);
            if self.checked.contains(&relative) {
                continue;
            }
            if self.missing.contains(&relative) {
                return Ok(());
            }
            let meta = match fs::symlink_metadata(&current) {
                Ok(meta) => meta,
                // Missing, or under a regular file: the write itself will create or fail there.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    ) =>
                {
                    self.missing.insert(relative);
                    return Ok(());
                }
                Err(e) => return Err(check(e, &current)),
            };
            if meta.file_type().is_symlink() {
                let target = match fs::canonicalize(&current) {
                    Ok(target) => target,
                    // A dangling link: where it points is outside anything we can vouch for.
                    Err(_) => fs::read_link(&current).map_err(|e| check(e, &current))?,
                };
                if !target.starts_with(root) {
                    let link = current.strip_prefix(dir).unwrap_or(&current).display().to_string();
                    return Err(Error::Escapes {
                        path: rel.to_owned(),
                        link,
                        target,
                        dir: dir.to_owned(),
                    });
                }
            }
            self.checked.insert(relative.clone());
        }
        Ok(())
    }
}

/// Moves an existing `target` aside so it can be restored.
fn back_up(
    target: &Path,
    rename: &mut dyn FnMut(&Path, &Path) -> std::io::Result<()>,
    journal: &mut Journal,
) -> Result<(), Error> {
    if fs::symlink_metadata(target).is_err() {
        return Ok(());
    }
    let backup = sibling(target, "ccm-bak");
    rename(target, &backup).map_err(|source| Error::Swap { path: target.to_owned(), source })?;
    journal.backups.push((target.to_owned(), backup));
    Ok(())
}

fn roll_back(journal: Journal) {
    // Best effort, newest first; each step is independent of the others' success.
    for placed in journal.placed.iter().rev() {
        let _ = fs::remove_file(placed);
    }
    for (target, backup) in journal.backups.iter().rev() {
        let _ = fs::rename(backup, target);
    }
    for temp in &journal.staged {
        let _ = fs::remove_file(temp);
    }
    for dir in journal.created_dirs.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

/// Creates `path` and its missing ancestors; `present` holds the directories already known to
/// exist in this commit, so a directory shared by many files is looked up once.
fn create_dirs(
    path: &Path,
    present: &mut BTreeSet<PathBuf>,
    journal: &mut Journal,
) -> Result<(), Error> {
    let mut missing = Vec::new();
    let mut cur = Some(path);
    while let Some(p) = cur {
        if present.contains(p) {
            break;
        }
        if p.exists() {
            present.insert(p.to_owned());
            break;
        }
        missing.push(p.to_owned());
        cur = p.parent();
    }
    for p in missing.into_iter().rev() {
        fs::create_dir(&p).map_err(|source| Error::CreateDir { path: p.clone(), source })?;
        journal.created_dirs.push(p.clone());
        present.insert(p);
    }
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path)?;
    f.write_all(bytes)?;
    // The umask may have narrowed the mode at creation; set it exactly (on the open file: no
    // second path lookup).
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
}

/// `dir/.name.TAG-PID`: beside the target, so the rename stays on one file system.
fn sibling(target: &Path, tag: &str) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.{tag}-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_owned()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                if p.is_dir() {
                    stack.push(p);
                    out.push((rel + "/", Vec::new()));
                } else {
                    out.push((rel, fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    fn plan() -> Plan {
        Plan {
            writes: vec![
                File::new("a.yaml", "new a"),
                File::secret("deep/er/s.yaml", "secret"),
                File::new("b.yaml", "new b"),
            ],
            removes: vec!["old.yaml".into()],
        }
    }

    fn seeded() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.yaml"), "old a").unwrap();
        fs::write(dir.path().join("old.yaml"), "stale").unwrap();
        dir
    }

    #[test]
    fn commit_writes_modes_and_removes() {
        let dir = seeded();
        commit(dir.path(), &plan()).unwrap();
        let names: Vec<_> = snapshot(dir.path()).into_iter().map(|(p, _)| p).collect();
        assert_eq!(names, ["a.yaml", "b.yaml", "deep/", "deep/er/", "deep/er/s.yaml"]);
        let mode = |p: &str| fs::metadata(dir.path().join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("a.yaml"), 0o644);
        assert_eq!(mode("deep/er/s.yaml"), 0o600);
        assert_eq!(fs::read(dir.path().join("a.yaml")).unwrap(), b"new a");
    }

    #[test]
    fn a_failure_at_any_rename_leaves_the_directory_unchanged() {
        // Renames: back up a.yaml, place a, place s, place b, back up old.yaml = 5 calls.
        for fail_at in 0..5 {
            let dir = seeded();
            let before = snapshot(dir.path());
            let mut calls = 0;
            let mut rename = |from: &Path, to: &Path| {
                calls += 1;
                if calls > fail_at {
                    return Err(std::io::Error::other("injected"));
                }
                fs::rename(from, to)
            };
            let err = commit_with(dir.path(), &plan(), &mut rename).unwrap_err();
            assert!(matches!(err, Error::Swap { .. }), "{err:?}");
            assert_eq!(snapshot(dir.path()), before, "rename #{} failed", fail_at + 1);
        }
    }

    #[test]
    fn a_failure_while_staging_leaves_the_directory_unchanged() {
        let dir = seeded();
        // A regular file where a directory is needed makes create_dir fail mid-plan.
        fs::write(dir.path().join("deep"), "in the way").unwrap();
        let before = snapshot(dir.path());
        let err = commit(dir.path(), &plan()).unwrap_err();
        assert!(matches!(err, Error::Stage { .. } | Error::CreateDir { .. }), "{err:?}");
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn a_symlink_inside_the_directory_that_leads_out_is_refused_before_anything_is_written() {
        let dir = seeded();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("deep")).unwrap();
        let before = snapshot(dir.path());
        let err = commit(dir.path(), &plan()).unwrap_err();
        let Error::Escapes { path, link, .. } = &err else { panic!("{err:?}") };
        assert_eq!((path.as_str(), link.as_str()), ("deep/er/s.yaml", "deep"));
        let text = err.to_string();
        assert!(
            text.starts_with("refusing to write deep/er/s.yaml: deep is a symbolic link to "),
            "{text}"
        );
        assert_eq!(snapshot(dir.path()), before);
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none(), "wrote outside");
    }

    #[test]
    fn a_symlinked_file_that_leads_out_is_refused_and_one_that_stays_inside_is_followed() {
        let dir = seeded();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("passwd"), "root").unwrap();
        fs::remove_file(dir.path().join("a.yaml")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("passwd"), dir.path().join("a.yaml"))
            .unwrap();
        let err = commit(dir.path(), &plan()).unwrap_err();
        assert!(matches!(err, Error::Escapes { .. }), "{err:?}");
        assert_eq!(fs::read_to_string(outside.path().join("passwd")).unwrap(), "root");

        let dir = seeded();
        fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("deep")).unwrap();
        commit(dir.path(), &plan()).unwrap();
        assert!(dir.path().join("real/er/s.yaml").exists());
    }
}
