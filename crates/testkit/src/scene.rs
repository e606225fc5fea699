//! scripts/openstack_scene.py run against the stack of [`StackEnv`], recording what it makes in
//! the running test's [`sweep`] ledger.

use std::process::Command;

use crate::stack::StackEnv;
use crate::sweep;

impl StackEnv {
    /// scripts/openstack_scene.py against this stack, run by its shebang (the Python that has
    /// openstacksdk, not whatever python3 is first in PATH); what it creates goes in the
    /// running test's ledger, when it has one, for its sweep to delete.
    pub fn scene_command(&self) -> Command {
        let mut command =
            Command::new(self.get("OPENSTACK_SCENE").unwrap_or("scripts/openstack_scene.py"));
        if let Some(ledger) = sweep::ledger() {
            command.env(sweep::LEDGER, ledger);
        }
        command
    }

    /// `openstack_scene.py ARGS`, waited for: its JSON output (null when it prints none);
    /// panics with its output when it fails.
    pub fn scene(&self, args: &[&str]) -> serde_json::Value {
        let out = self.scene_command().args(args).output().expect("openstack_scene.py runs");
        assert!(
            out.status.success(),
            "openstack_scene.py {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let json = text.lines().find(|l| l.starts_with('{')).unwrap_or("null");
        serde_json::from_str(json).unwrap_or(serde_json::Value::Null)
    }
}
