//! `--check-config`: validate cloud.conf (and the clouds.yaml it names) with no network call.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::config::{self, Severity};

/// What `--check-config` prints and whether the config is usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The effective cloud.conf, secrets redacted.
    pub stdout: String,
    /// Warnings and errors, one per line.
    pub stderr: String,
    /// No errors.
    pub ok: bool,
}

/// Runs the check.
pub fn run(path: Option<&Path>, search: &[PathBuf]) -> Report {
    let Some(path) = path else {
        return Report {
            stdout: String::new(),
            stderr: "error: no OpenStack cloud provider config file given (--cloud-config)\n"
                .into(),
            ok: false,
        };
    };
    let checked = match config::load(path, search) {
        Ok(checked) => checked,
        Err(error) => {
            return Report {
                stdout: String::new(),
                stderr: format!("error: {}\n", crate::cloud::session::chain(&error)),
                ok: false,
            };
        }
    };
    let mut stderr = String::new();
    for diagnostic in &checked.diagnostics {
        let _ = writeln!(stderr, "{}: {diagnostic}", path.display());
    }
    if let (Some(ns), Some(name)) = (
        checked.values.get("Global", "secret-namespace"),
        checked.values.get("Global", "secret-name"),
    ) {
        let _ = writeln!(
            stderr,
            "note: credentials are read at run time from secret {ns}/{name} (not checked here)"
        );
    }
    let ok = !checked.diagnostics.iter().any(|d| d.severity == Severity::Error);
    Report { stdout: config::render::effective(&checked.values), stderr, ok }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_config_prints_redacted_effective_config_and_passes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cloud.conf");
        std::fs::write(&path, "[Global]\nauth-url = http://k:5000/v3\nusername = admin\npassword = hunter2\ntenant-name = admin\nunknown-thing = 1\n").unwrap();
        let report = run(Some(&path), &[]);
        assert!(report.ok, "{report:?}");
        assert!(
            report.stdout.contains("password = <redacted>") && !report.stdout.contains("hunter2")
        );
        assert!(
            report
                .stderr
                .contains("warning: line 6: [Global] unknown-thing: unknown key is ignored"),
            "{}",
            report.stderr
        );
    }

    #[test]
    fn errors_fail_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cloud.conf");
        std::fs::write(&path, "[Global]\nsecret-name = s\nsecret-namespace = kube-system\n[LoadBalancer]\nmonitor-delay = 5\n").unwrap();
        let report = run(Some(&path), &[]);
        assert!(!report.ok);
        assert!(
            report.stderr.contains("[LoadBalancer] monitor-delay: \"5\" is not a duration"),
            "{}",
            report.stderr
        );
        assert!(report.stderr.contains("secret kube-system/s"));
        let report = run(Some(&dir.path().join("missing.conf")), &[]);
        assert!(!report.ok && report.stderr.contains("cannot read"), "{report:?}");
    }
}
