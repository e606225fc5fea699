//! The `Test` builder: one temp directory and one `ccm-assets` invocation per test.
//!
//! Every test runs with a clean environment: `HOME` and the working directory point inside the
//! test's own temp dir, and `OS_CLOUD`/`OS_CLIENT_CONFIG_FILE` are unset unless the test sets
//! them, so nothing on the developer's machine leaks in.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use testkit::create::CreateManifests;
pub(crate) use testkit::repo;

/// The longest a single ccm-assets run may take (a debug build; the slowest run is ~1 s).
const RUN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A test in its own directory.
pub(crate) struct Test {
    tmp: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// What a run produced.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Test {
    pub(crate) fn new() -> Test {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        std::fs::create_dir_all(tmp.path().join("cwd")).unwrap();
        Test { tmp, args: Vec::new(), env: Vec::new() }
    }

    /// The asset directory, `<root>/cluster`.
    pub(crate) fn dir(&self) -> PathBuf {
        self.tmp.path().join("cluster")
    }

    /// Copies `assets/examples/<name>` into the asset directory and points
    /// `OS_CLIENT_CONFIG_FILE` at its clouds.yaml when it has one.
    pub(crate) fn example(self, name: &str) -> Test {
        self.copy_dir(&repo().join("assets/examples").join(name))
    }

    /// Copies `tests/fixtures/<case>` into the asset directory (as `example` does); a
    /// relative `cacert` in its clouds.yaml is made absolute, since it is read from the cwd.
    pub(crate) fn fixture(self, case: &str) -> Test {
        let t = self.copy_dir(&repo().join("tests/fixtures").join(case));
        let clouds = t.dir().join("clouds.yaml");
        if let Ok(text) = std::fs::read_to_string(&clouds) {
            let ca = t.dir().join("ca.pem").display().to_string();
            std::fs::write(&clouds, text.replace("cacert: ca.pem", &format!("cacert: {ca}")))
                .unwrap();
        }
        t
    }

    fn copy_dir(mut self, from: &Path) -> Test {
        let to = self.dir();
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
        if to.join("clouds.yaml").exists() {
            let clouds = to.join("clouds.yaml").display().to_string();
            self = self.env("OS_CLIENT_CONFIG_FILE", &clouds);
        }
        self
    }

    /// Writes `contents` to `rel` inside the asset directory.
    pub(crate) fn file(self, rel: &str, contents: &str) -> Test {
        let path = self.dir().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
        self
    }

    /// Writes `contents` to `rel` inside the run's `$HOME` (credential files).
    pub(crate) fn home_file(self, rel: &str, contents: &str) -> Test {
        let path = self.tmp.path().join("home").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
        self
    }

    /// Sets the arguments (`{dir}` is replaced by the asset directory).
    pub(crate) fn args(mut self, args: &[&str]) -> Test {
        let dir = self.dir().display().to_string();
        self.args = args.iter().map(|a| a.replace("{dir}", &dir)).collect();
        self
    }

    /// Sets the arguments to the `create manifests` command line `run` spells.
    pub(crate) fn create(mut self, run: &CreateManifests) -> Test {
        self.args = run.args(&self.dir().display().to_string());
        self
    }

    /// Sets an environment variable for the run.
    pub(crate) fn env(mut self, key: &str, value: &str) -> Test {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Runs ccm-assets; the test keeps its directory for further runs.
    pub(crate) fn run(&self) -> Run {
        let mut cmd = Command::cargo_bin("ccm-assets").expect("binary built");
        cmd.args(&self.args)
            .current_dir(self.tmp.path().join("cwd"))
            .env_remove("OS_CLOUD")
            .env_remove("OS_CLIENT_CONFIG_FILE")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .env_remove("AZURE_SUBSCRIPTION_ID")
            .env_remove("AZURE_TENANT_ID")
            .env_remove("AZURE_CLIENT_ID")
            .env_remove("AZURE_CLIENT_SECRET")
            .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
            .env_remove("IC_API_KEY")
            .env("HOME", self.tmp.path().join("home"));
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        // Bounded: a hung run fails the test instead of stalling the suite.
        cmd.timeout(RUN_TIMEOUT);
        let Output { status, stdout, stderr } = cmd.output().expect("ran ccm-assets");
        Run {
            code: status.code().expect("exited"),
            stdout: String::from_utf8(stdout).expect("utf-8 stdout"),
            stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
        }
    }

    /// Runs and expects exit code `code`, printing both streams otherwise.
    pub(crate) fn expect(&self, code: i32) -> Run {
        let run = self.run();
        assert_eq!(
            run.code, code,
            "exit code {} (wanted {code})\n--- stdout\n{}\n--- stderr\n{}",
            run.code, run.stdout, run.stderr
        );
        run
    }

    /// Reads a file of the asset directory.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

/// Every regular file under `dir`, relative, sorted, with its bytes.
pub(crate) fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Every file ccm-assets wrote (inputs and state left out), each under a `--- path (mode)`
/// header, for one golden file per case.
pub(crate) fn outputs(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let inputs = ["install-config.yaml", "clouds.yaml", "ca.pem", ".ccm-assets-state.json"];
    let mut out = String::new();
    for (path, bytes) in tree(dir) {
        if inputs.contains(&path.as_str()) {
            continue;
        }
        let mode = std::fs::metadata(dir.join(&path)).unwrap().permissions().mode() & 0o777;
        let text = String::from_utf8(bytes).expect("generated files are UTF-8");
        // Some cloud configs end with blank lines by format (GCP, IBM); manifests never do.
        let manifest = path.ends_with(".yaml") || path.ends_with(".yml");
        assert!(
            text.ends_with('\n') && !(manifest && text.ends_with("\n\n")),
            "{path} must end with one newline"
        );
        out.push_str(&format!("--- {path} ({mode:o})\n{}", redact_minted(&path, &text)));
    }
    out
}

/// Keys and certificates are minted once per directory (random by nature): golden files show
/// their place, not their bytes. tests/it/bootstrap.rs checks the material itself.
fn redact_minted(path: &str, text: &str) -> String {
    if path.ends_with(".crt") {
        return "<PEM certificate minted for this directory>\n".to_owned();
    }
    if !path.starts_with("bootstrap/secrets/") {
        return text.to_owned();
    }
    text.lines()
        .map(|line| match line.split_once(": ") {
            Some((key, _)) if key.trim_end().ends_with("-data") && key.contains("client-") => {
                format!("{key}: <minted>\n")
            }
            _ => format!("{line}\n"),
        })
        .collect()
}

/// Golden-file check on exact bytes: insta trims trailing whitespace when it compares, so the
/// ending is asserted here (exactly one final newline for our YAML).
#[macro_export]
macro_rules! assert_golden {
    ($name:expr, $text:expr) => {{
        let text: &str = &$text;
        assert!(text.ends_with('\n') && !text.ends_with("\n\n"), "{} must end with one newline", $name);
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!($name, text);
        });
    }};
}
