//! clouds.yaml lookup: the search order, the secure.yaml merge, and picking the named cloud.

use std::io;
use std::path::{Path, PathBuf};

use super::parse::{self, SyntaxError};
use ccm_formats::clouds_yaml::{self, CloudEntry, CloudsFile};

/// Where clouds.yaml may be; the CLI fills this from `$OS_CLIENT_CONFIG_FILE`, the working
/// directory and `$HOME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// `$OS_CLIENT_CONFIG_FILE`, searched first.
    pub client_config_file: Option<PathBuf>,
    /// The working directory (`./clouds.yaml`).
    pub cwd: PathBuf,
    /// `$HOME` (`~/.config/openstack/clouds.yaml`).
    pub home: Option<PathBuf>,
}

/// The cloud picked from a clouds.yaml, with any secure.yaml already merged in.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedCloud {
    /// The cloud's name in the file.
    pub name: String,
    /// The clouds.yaml it came from.
    pub file: PathBuf,
    /// The secure.yaml merged over it, if one was found.
    pub secure_file: Option<PathBuf>,
    /// The entry, unknown keys included.
    pub entry: CloudEntry,
}

/// An error finding or reading clouds.yaml.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// None of the search paths exists.
    #[error("no clouds.yaml found (searched: {})", joined(searched))]
    NotFound {
        /// Every path looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// The file exists but could not be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file is not valid YAML of the clouds.yaml shape.
    #[error("{}", located(file, *line, *column, message))]
    Syntax {
        /// The file.
        file: PathBuf,
        /// 1-based line (0 when unknown).
        line: u64,
        /// 1-based column (0 when unknown).
        column: u64,
        /// The parser's message.
        message: String,
    },
    /// secure.yaml could not be merged into clouds.yaml.
    #[error("could not merge {} into {}", secure.display(), file.display())]
    Merge {
        /// The clouds.yaml.
        file: PathBuf,
        /// The secure.yaml.
        secure: PathBuf,
        /// Why.
        #[source]
        source: clouds_yaml::Error,
    },
    /// The file has no cloud of that name.
    #[error("{}: cloud {cloud:?} does not exist in clouds.yaml ({})", file.display(), found_list(found))]
    NoSuchCloud {
        /// The name asked for.
        cloud: String,
        /// The clouds.yaml searched.
        file: PathBuf,
        /// The names it has, sorted.
        found: Vec<String>,
    },
}

impl Error {
    /// Whether the user's input is at fault (missing or malformed file, unknown cloud) rather
    /// than the machine; the CLI maps it to exit code 3.
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Self::Read { source, .. } => {
                matches!(source.kind(), io::ErrorKind::NotFound | io::ErrorKind::InvalidData)
            }
            Self::NotFound { .. }
            | Self::Syntax { .. }
            | Self::Merge { .. }
            | Self::NoSuchCloud { .. } => true,
        }
    }
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn joined(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|path| path.display().to_string()).collect();
    shown.join(", ")
}

fn found_list(found: &[String]) -> String {
    if found.is_empty() {
        "no clouds defined".to_owned()
    } else {
        format!("found: {}", found.join(", "))
    }
}

fn located(file: &Path, line: u64, column: u64, message: &str) -> String {
    if line == 0 {
        format!("{}: {message}", file.display())
    } else {
        format!("{}:{line}:{column}: {message}", file.display())
    }
}

/// The search order of openstacksdk and gophercloud: `$OS_CLIENT_CONFIG_FILE`,
/// `./clouds.yaml`, `~/.config/openstack/clouds.yaml`, `/etc/openstack/clouds.yaml`.
pub fn search_paths(env: &SearchEnv) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    paths.extend(env.client_config_file.clone());
    paths.push(env.cwd.join("clouds.yaml"));
    if let Some(home) = &env.home {
        paths.push(home.join(".config").join("openstack").join("clouds.yaml"));
    }
    paths.push(PathBuf::from("/etc/openstack/clouds.yaml"));
    paths
}

/// Reads the first of `paths` that exists, merges the secure.yaml of the first search
/// directory that has one (secure.yaml wins), and returns the cloud named `cloud`.
pub fn load(paths: &[PathBuf], cloud: &str) -> Result<SelectedCloud> {
    let Some(file) = paths.iter().find(|path| path.exists()) else {
        return Err(Error::NotFound { searched: paths.to_vec() });
    };
    let mut clouds = read(file)?;
    let mut dirs: Vec<&Path> = Vec::new();
    for dir in paths.iter().filter_map(|path| path.parent()) {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let secure_file = dirs.iter().map(|dir| dir.join("secure.yaml")).find(|path| path.exists());
    if let Some(secure) = &secure_file {
        let overlay = read(secure)?;
        clouds = clouds.merged_with(&overlay).map_err(|source| Error::Merge {
            file: file.clone(),
            secure: secure.clone(),
            source,
        })?;
    }
    let found = clouds.names();
    let Some(entry) = clouds.clouds.remove(cloud) else {
        return Err(Error::NoSuchCloud { cloud: cloud.to_owned(), file: file.clone(), found });
    };
    Ok(SelectedCloud { name: cloud.to_owned(), file: file.clone(), secure_file, entry })
}

fn read(path: &Path) -> Result<CloudsFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Read { path: path.to_owned(), source })?;
    let (file, _unknown) = parse::from_yaml::<Option<CloudsFile>>(&text).map_err(
        |SyntaxError { line, column, message }| Error::Syntax {
            file: path.to_owned(),
            line,
            column,
            message,
        },
    )?;
    Ok(file.unwrap_or_default())
}

#[cfg(test)]
mod tests;
