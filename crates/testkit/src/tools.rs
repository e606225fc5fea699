//! The tools scripts/test-tools.sh installs under `CCM_TEST_TOOLS` (default `target/test-tools`).

use std::path::PathBuf;

/// The variable naming the tools directory.
pub const VAR: &str = "CCM_TEST_TOOLS";

/// The tools directory.
pub fn dir() -> PathBuf {
    std::env::var_os(VAR).map_or_else(|| crate::repo().join("target/test-tools"), PathBuf::from)
}

/// The file `rel` of the tools directory (`gcfg-oracle`, `venv/bin/kubernetes-validate`);
/// panics, never skips, when it is missing.
pub fn path(rel: &str) -> PathBuf {
    let path = dir().join(rel);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/test-tools.sh (scripts/test.sh does; set {VAR} if the \
         tools live elsewhere)",
        path.display()
    );
    path
}

/// An executable of the tools' Python venv (`kubernetes-validate`, `python`).
pub fn venv_bin(exe: &str) -> PathBuf {
    path(&format!("venv/bin/{exe}"))
}
