//! The soak's Python helpers against the real stack: scripts/openstack/soak_state.py (state,
//! decoys) and scripts/openstack/inventory.py (the project before and after).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub(crate) struct Scripts {
    repo: PathBuf,
    env_file: String,
}

impl Scripts {
    pub(crate) fn new(env_file: String) -> Scripts {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        Scripts { repo, env_file }
    }

    /// `soak_state.py ARGS`, its JSON answer; panics with its stderr when it fails. The reads
    /// (`state`, `decoys-show`) are tried three times: the stack's services on SQLite answer a
    /// 500 now and then, and one must not end an hour's run.
    pub(crate) fn state(&self, args: &[&str]) -> Value {
        let script = self.repo.join("scripts/openstack/soak_state.py");
        let tries = if matches!(args.first(), Some(&"state" | &"decoys-show")) { 3 } else { 1 };
        for attempt in 1..=tries {
            let out = Command::new(&script)
                .args(["--env", &self.env_file])
                .args(args)
                .output()
                .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
            if out.status.success() {
                return serde_json::from_slice(&out.stdout).expect("soak_state.py prints JSON");
            }
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(attempt < tries, "soak_state.py {args:?}: {err}");
            crate::journal::note(&format!(
                "soak_state.py {args:?} failed (tried again): {}",
                err.trim().lines().last().unwrap_or_default()
            ));
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        unreachable!("the last attempt returned or panicked")
    }

    /// `inventory.py save FILE`.
    pub(crate) fn inventory_save(&self, file: &Path) {
        let out = self.inventory("save", file);
        assert!(
            out.status.success(),
            "inventory.py save: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `inventory.py check FILE`: the objects new since FILE, one line each.
    pub(crate) fn inventory_new(&self, file: &Path) -> Vec<String> {
        let out = self.inventory("check", file);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let new: Vec<String> =
            stdout.lines().filter(|l| l.starts_with("  ")).map(|l| l.trim().to_owned()).collect();
        assert!(
            out.status.success() || !new.is_empty(),
            "inventory.py check: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        new
    }

    fn inventory(&self, action: &str, file: &Path) -> std::process::Output {
        let script = self.repo.join("scripts/openstack/inventory.py");
        Command::new(&script)
            .arg(action)
            .arg(file)
            .args(["--env", &self.env_file])
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", script.display()))
    }

    /// Stops Octavia's API, keeps it down `down` seconds and starts it again, in the
    /// background (`openstack-up.sh --restart octavia-api`).
    pub(crate) fn restart_octavia(&self, dir: &str, down: u64) -> std::process::Child {
        Command::new(self.repo.join("scripts/openstack-up.sh"))
            .args(["--restart", "octavia-api", &down.to_string()])
            .env("OPENSTACK_DIR", dir)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("run openstack-up.sh --restart octavia-api")
    }
}
