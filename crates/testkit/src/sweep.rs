//! A real-OpenStack test's guard against leaks: what the test made is deleted when it ends,
//! passed or failed half-way.
//!
//! [`Sweep::start`] gives the test a ledger ([`ledger`]): `openstack_scene.py` run with
//! [`LEDGER`] naming it (the tests' `scene` helpers pass it on) appends every server, port,
//! floating IP, load balancer, security group, network, region and RBAC policy it creates.
//! [`watch`] adds a token, the test's cluster name: everything its CCM makes carries it (load balancers by name, floating IPs and security groups by tag,
//! upstream's by description). On drop, `openstack_scene.py sweep` deletes what is still there,
//! in dependency order. After a panic it only reports what it deleted; after a test that passed,
//! anything it had to delete fails the test (a leak on the success path is a defect too).
//! A test killed outright (nextest's timeout) runs no drop: scripts/test.sh's final inventory
//! (scripts/openstack/inventory.py) lists what such a test left.

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::stack::StackEnv;

/// The variable naming the ledger to `openstack_scene.py`.
pub const LEDGER: &str = "CCM_SCENE_LEDGER";

thread_local! {
    /// The guard of the test running on this thread (a test's body runs on its own thread,
    /// also under `#[tokio::test]`).
    static ACTIVE: RefCell<Option<Arc<Marks>>> = const { RefCell::new(None) };
}

/// What the sweep deletes: what the ledger records, what carries a token.
struct Marks {
    ledger: PathBuf,
    tokens: Mutex<Vec<String>>,
    routes: Mutex<Vec<String>>,
}

/// Deletes on drop what the test's scene calls recorded and what carries its tokens.
pub struct Sweep {
    script: PathBuf,
    env_file: String,
    marks: Arc<Marks>,
    _dir: tempfile::TempDir,
}

impl Sweep {
    /// The guard of the test on this thread, with a fresh ledger; panics, saying how to start
    /// the stack, when `CCM_OPENSTACK_ENV` is not set.
    pub fn start() -> Sweep {
        let env = StackEnv::load();
        let dir = tempfile::tempdir().expect("a temporary directory for the ledger");
        let marks = Arc::new(Marks {
            ledger: dir.path().join("ledger.jsonl"),
            tokens: Mutex::default(),
            routes: Mutex::default(),
        });
        ACTIVE.with_borrow_mut(|active| {
            assert!(active.is_none(), "one Sweep per test");
            *active = Some(marks.clone());
        });
        let script = env
            .get("OPENSTACK_SCENE")
            .map(PathBuf::from)
            .unwrap_or_else(|| crate::repo().join("scripts/openstack_scene.py"));
        let env_file = std::env::var(crate::stack::VAR).expect("StackEnv::load checked it");
        Sweep { script, env_file, marks, _dir: dir }
    }

    /// Runs the sweep: what it deleted, or why it could not.
    fn run(&self) -> Result<Vec<String>, String> {
        let mut command = Command::new(&self.script);
        command.args(["--env", &self.env_file, "sweep", "--ledger"]).arg(&self.marks.ledger);
        for token in self.marks.tokens.lock().unwrap().iter() {
            command.args(["--match", token]);
        }
        for cidr in self.marks.routes.lock().unwrap().iter() {
            command.args(["--routes-in", cidr]);
        }
        let output = command.env_remove(LEDGER).output().map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned());
        }
        let result: serde_json::Value =
            serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
        let list = |key: &str| -> Vec<String> {
            let items = result[key].as_array().cloned().unwrap_or_default();
            items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
        };
        match list("failed") {
            failed if failed.is_empty() => Ok(list("deleted")),
            failed => Err(format!("could not delete {failed:?} (deleted {:?})", list("deleted"))),
        }
    }
}

/// The ledger of this thread's guard, for `openstack_scene.py` runs to record in ([`LEDGER`]).
pub fn ledger() -> Option<PathBuf> {
    ACTIVE.with_borrow(|active| active.as_ref().map(|marks| marks.ledger.clone()))
}

/// Makes this thread's guard also delete what carries `token` as a word of its name,
/// description or a tag: a cluster name unique to the test (it holds the process ID) is in
/// everything the test's CCM makes. Panics when the test has no guard.
pub fn watch(token: &str) {
    with_marks(|marks| marks.tokens.lock().unwrap().push(token.to_owned()));
}

/// Makes this thread's guard also remove the router's extra routes to destinations inside
/// `cidr` (a route controller test's cluster CIDR). Panics when the test has no guard.
pub fn watch_routes(cidr: &str) {
    with_marks(|marks| marks.routes.lock().unwrap().push(cidr.to_owned()));
}

fn with_marks(f: impl FnOnce(&Marks)) {
    ACTIVE.with_borrow(|active| {
        f(active.as_ref().expect(
            "this test makes OpenStack objects without a guard: begin it with \
             `let _sweep = testkit::sweep::Sweep::start();`",
        ))
    });
}

impl Drop for Sweep {
    fn drop(&mut self) {
        ACTIVE.with_borrow_mut(|active| *active = None);
        let outcome = self.run();
        if std::thread::panicking() {
            match outcome {
                Ok(deleted) if deleted.is_empty() => {}
                Ok(deleted) => eprintln!("sweep: deleted what the failed test left: {deleted:?}"),
                Err(e) => eprintln!("sweep: the failed test's objects are not all deleted: {e}"),
            }
            return;
        }
        match outcome {
            Ok(deleted) => assert!(
                deleted.is_empty(),
                "the test passed but left these behind (the sweep deleted them): {deleted:?}"
            ),
            Err(e) => panic!("sweep: the test's objects are not all deleted: {e}"),
        }
    }
}
