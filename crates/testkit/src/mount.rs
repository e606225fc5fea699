//! A directory laid out as the kubelet mounts a ConfigMap or Secret volume, and updated as the
//! kubelet updates it: each file a link `name` → `..data/name`, `..data` a link to the current
//! version's timestamped directory, an update a new directory whose link is renamed over
//! `..data` in one atomic step (so a reader through `name` sees the old file or the new one,
//! never half).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A mounted volume in a temporary directory (removed on drop).
#[derive(Debug)]
pub struct KubeletMount {
    dir: tempfile::TempDir,
    versions: u32,
}

impl KubeletMount {
    /// The volume with `files` (name, text) as its first version.
    pub fn new(files: &[(&str, &str)]) -> KubeletMount {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut mount = KubeletMount { dir, versions: 0 };
        mount.swap(files);
        for (name, _) in files {
            symlink(format!("..data/{name}"), mount.path(name)).expect("the file's link");
        }
        mount
    }

    /// Where a reader finds file `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The volume's directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// An update as the kubelet makes it: the new version's directory with `files`, a
    /// temporary link to it, renamed over `..data`. (A file of the first version that `files`
    /// lacks dangles, as a key removed from the ConfigMap does.)
    pub fn swap(&mut self, files: &[(&str, &str)]) {
        self.versions += 1;
        let version = format!("..2026_11_28_00_00_{:02}.{}", self.versions % 60, self.versions);
        let at = self.dir.path().join(&version);
        std::fs::create_dir(&at).expect("the version's directory");
        for (name, text) in files {
            std::fs::write(at.join(name), text).expect("the version's file");
        }
        let tmp = self.dir.path().join("..data_tmp");
        symlink(&version, &tmp).expect("the temporary link");
        std::fs::rename(&tmp, self.dir.path().join("..data")).expect("the atomic swap");
    }
}
