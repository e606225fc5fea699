//! Engine semantics, one test per rule of DESIGN.md §3, on small synthetic graphs.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{Value, json};

use super::store::{self, Note};
use super::*;

type GenFn = dyn Fn(&Parents<'_>) -> Result<Output, AssetError> + Send + Sync;
type LoadFn = dyn Fn(&[File]) -> Result<Value, AssetError> + Send + Sync;
type Calls = Vec<(AssetId, Arc<AtomicUsize>)>;
type Built = (Graph, Arc<Mutex<Value>>, Arc<Mutex<Vec<AssetId>>>, Calls);

struct TestAsset {
    id: AssetId,
    deps: &'static [AssetId],
    generate: Box<GenFn>,
    load: Option<Box<LoadFn>>,
    calls: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<AssetId>>>,
}

impl Asset for TestAsset {
    fn id(&self) -> AssetId {
        self.id
    }
    fn name(&self) -> &'static str {
        self.id
    }
    fn dependencies(&self) -> &'static [AssetId] {
        self.deps
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push(self.id);
        (self.generate)(parents)
    }
    fn load(&self, files: &[File]) -> Option<Result<Value, AssetError>> {
        self.load.as_ref().map(|l| l(files))
    }
}

/// Builds graphs whose assets concatenate their parents' strings; `input` is the one source.
struct Fixture {
    input: Arc<Mutex<Value>>,
    log: Arc<Mutex<Vec<AssetId>>>,
    calls: Calls,
    assets: Vec<Box<dyn Asset>>,
}

impl Fixture {
    fn new() -> Fixture {
        let mut f = Fixture {
            input: Arc::new(Mutex::new(json!("v1"))),
            log: Arc::default(),
            calls: Vec::new(),
            assets: Vec::new(),
        };
        let input = f.input.clone();
        f.push("input", &[], move |_| Output::new(&*input.lock().unwrap()), None);
        f
    }

    fn push(
        &mut self,
        id: AssetId,
        deps: &'static [AssetId],
        generate: impl Fn(&Parents<'_>) -> Result<Output, AssetError> + Send + Sync + 'static,
        load: Option<Box<LoadFn>>,
    ) {
        let calls = Arc::new(AtomicUsize::new(0));
        self.calls.push((id, calls.clone()));
        let log = self.log.clone();
        self.assets.push(Box::new(TestAsset {
            id,
            deps,
            generate: Box::new(generate),
            load,
            calls,
            log,
        }));
    }

    /// An asset whose content is `id(parent+parent)` and which writes it to `id.txt`.
    fn derived(&mut self, id: AssetId, deps: &'static [AssetId]) {
        self.push(
            id,
            deps,
            move |p| joined(id, deps, p),
            Some(Box::new(|files| Ok(json!(text(&files[0]))))),
        );
    }

    fn graph(self) -> Built {
        (Graph::new(self.assets).unwrap(), self.input, self.log, self.calls)
    }
}

fn joined(id: AssetId, deps: &[AssetId], p: &Parents<'_>) -> Result<Output, AssetError> {
    let mut parts = Vec::new();
    for d in deps {
        parts.push(p.get(&Key::<String>::new(d))?);
    }
    let content = format!("{id}({})", parts.join("+"));
    Ok(Output::new(&content)?.with_file(File::new(format!("out/{id}.txt"), content.clone())))
}

fn text(f: &File) -> String {
    String::from_utf8(f.bytes.clone()).unwrap()
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

fn mtime(dir: &Path, rel: &str) -> SystemTime {
    std::fs::metadata(dir.join(rel)).unwrap().modified().unwrap()
}

fn diamond() -> Fixture {
    let mut f = Fixture::new();
    f.derived("left", &["input"]);
    f.derived("right", &["input"]);
    f.derived("bottom", &["left", "right"]);
    f
}

#[test]
fn diamond_generates_dependencies_first_and_each_asset_once() {
    let (graph, _, log, calls) = diamond().graph();
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph, dir.path(), &["bottom", "left"], &[]).unwrap();
    assert_eq!(*log.lock().unwrap(), ["input", "left", "right", "bottom"]);
    for (id, n) in calls {
        assert_eq!(n.load(Ordering::SeqCst), 1, "{id} generated more than once");
    }
    assert_eq!(read(dir.path(), "out/bottom.txt"), "bottom(left(v1)+right(v1))");
}

#[test]
fn chain_generates_in_dependency_order() {
    let mut f = Fixture::new();
    f.derived("c", &["b"]);
    f.derived("b", &["a"]);
    f.derived("a", &["input"]);
    let (graph, _, log, _) = f.graph();
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph, dir.path(), &["c"], &[]).unwrap();
    assert_eq!(*log.lock().unwrap(), ["input", "a", "b", "c"]);
    assert_eq!(read(dir.path(), "out/c.txt"), "c(b(a(v1)))");
}

#[test]
fn unchanged_inputs_rewrite_nothing_and_keep_mtimes() {
    let (graph, _, _, _) = diamond().graph();
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    let files = ["out/left.txt", "out/right.txt", "out/bottom.txt", state::FILE_NAME];
    let before: Vec<_> = files.iter().map(|f| mtime(dir.path(), f)).collect();
    std::thread::sleep(std::time::Duration::from_millis(20)); // mtime granularity, not timing
    let second = store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    assert!(second.plan.is_empty(), "{:?}", second.plan);
    assert!(second.notes.is_empty(), "{:?}", second.notes);
    let after: Vec<_> = files.iter().map(|f| mtime(dir.path(), f)).collect();
    assert_eq!(before, after);
}

#[test]
fn user_edit_is_kept_and_dependents_follow_it_when_inputs_are_unchanged() {
    let (graph, _, _, _) = diamond().graph();
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    std::fs::write(dir.path().join("out/left.txt"), "EDITED").unwrap();
    let run = store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    assert!(run.notes.contains(&Note::KeptEdit("out/left.txt".into())), "{:?}", run.notes);
    assert_eq!(read(dir.path(), "out/left.txt"), "EDITED");
    assert_eq!(read(dir.path(), "out/bottom.txt"), "bottom(EDITED+right(v1))");
    // A third run keeps the edit again and changes nothing else.
    let third = store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    assert_eq!(third.notes, [Note::KeptEdit("out/left.txt".into())]);
    assert!(third.plan.is_empty(), "{:?}", third.plan);
}

#[test]
fn changed_input_regenerates_dependents_and_names_discarded_edits() {
    let (graph, input, _, _) = diamond().graph();
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    std::fs::write(dir.path().join("out/left.txt"), "EDITED").unwrap();
    *input.lock().unwrap() = json!("v2");
    let run = store::create(&graph, dir.path(), &["bottom"], &[]).unwrap();
    assert_eq!(
        run.notes,
        [
            Note::DiscardedEdit("out/left.txt".into()),
            Note::Wrote("out/right.txt".into()),
            Note::Wrote("out/bottom.txt".into()),
        ]
    );
    assert_eq!(read(dir.path(), "out/bottom.txt"), "bottom(left(v2)+right(v2))");
}

#[test]
fn a_failing_asset_leaves_the_directory_unchanged() {
    let mut f = diamond();
    let fail = Arc::new(Mutex::new(false));
    let flag = fail.clone();
    f.push(
        "last",
        &["bottom"],
        move |p| {
            let _: String = p.get(&Key::new("bottom"))?;
            if *flag.lock().unwrap() { Err("boom".into()) } else { Ok(Output::default()) }
        },
        None,
    );
    let (graph, input, _, _) = f.graph();
    let dir = tempfile::tempdir().unwrap();
    *fail.lock().unwrap() = true;
    let err = store::create(&graph, dir.path(), &["last"], &[]).unwrap_err();
    assert_eq!(err.to_string(), "failed to generate last");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a fresh dir stays empty");

    *fail.lock().unwrap() = false;
    store::create(&graph, dir.path(), &["last"], &[]).unwrap();
    let state_before = read(dir.path(), state::FILE_NAME);
    *input.lock().unwrap() = json!("v2");
    *fail.lock().unwrap() = true;
    store::create(&graph, dir.path(), &["last"], &[]).unwrap_err();
    assert_eq!(read(dir.path(), "out/left.txt"), "left(v1)");
    assert_eq!(read(dir.path(), state::FILE_NAME), state_before);
}

#[test]
fn deleted_output_is_restored_and_stale_output_is_removed_unless_edited() {
    let mut f = Fixture::new();
    let wanted = Arc::new(Mutex::new(true));
    let w = wanted.clone();
    f.push(
        "optional",
        &["input"],
        move |p| {
            let v: String = p.get(&Key::new("input"))?;
            let mut out = Output::new(&v)?;
            if *w.lock().unwrap() {
                out = out
                    .with_file(File::new("opt/a.txt", "a"))
                    .with_file(File::new("opt/b.txt", "b"));
            }
            Ok(out)
        },
        None,
    );
    let (graph, _, _, _) = f.graph();
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph, dir.path(), &["optional"], &[]).unwrap();
    std::fs::remove_file(dir.path().join("opt/a.txt")).unwrap();
    let run = store::create(&graph, dir.path(), &["optional"], &[]).unwrap();
    assert_eq!(run.notes, [Note::Restored("opt/a.txt".into())]);

    std::fs::write(dir.path().join("opt/b.txt"), "edited").unwrap();
    *wanted.lock().unwrap() = false;
    let run = store::create(&graph, dir.path(), &["optional"], &[]).unwrap();
    assert_eq!(run.notes, [Note::Removed("opt/a.txt".into()), Note::KeptStale("opt/b.txt".into())]);
    assert!(!dir.path().join("opt/a.txt").exists());
    assert_eq!(read(dir.path(), "opt/b.txt"), "edited");
}

#[test]
fn previous_content_is_offered_back_to_its_asset() {
    let mut f = Fixture::new();
    let counter = Arc::new(AtomicUsize::new(0));
    let c = counter.clone();
    f.push(
        "random",
        &[],
        move |p| {
            let value =
                p.previous::<usize>().unwrap_or_else(|| c.fetch_add(1, Ordering::SeqCst) + 100);
            Output::new(&value)
        },
        None,
    );
    let (graph, _, _, _) = f.graph();
    let dir = tempfile::tempdir().unwrap();
    let first = store::create(&graph, dir.path(), &["random"], &[]).unwrap();
    let second = store::create(&graph, dir.path(), &["random"], &[]).unwrap();
    assert_eq!(first.contents["random"], json!(100));
    assert_eq!(second.contents["random"], json!(100));
}

#[test]
fn files_not_written_by_ccm_assets_are_replaced_with_a_warning() {
    let (graph, _, _, _) = diamond().graph();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("out/left.txt"), "hand-made").unwrap();
    let run = store::create(&graph, dir.path(), &["left"], &[]).unwrap();
    assert_eq!(run.notes, [Note::Replaced("out/left.txt".into())]);
}

#[test]
fn an_unreadable_state_is_ignored_with_a_note() {
    let (graph, _, _, _) = diamond().graph();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(state::FILE_NAME), "garbage").unwrap();
    let run = store::create(&graph, dir.path(), &["left"], &[]).unwrap();
    assert!(matches!(&run.notes[0], Note::IgnoredState(_)), "{:?}", run.notes);
    assert!(state::load(dir.path()).is_ok_and(|l| matches!(l, state::Loaded::Found(_))));
}

#[test]
fn graph_construction_rejects_cycles_unknown_dependencies_and_duplicates() {
    let mut f = Fixture::new();
    f.derived("a", &["b"]);
    f.derived("b", &["a"]);
    assert_eq!(Graph::new(f.assets).err().unwrap().to_string(), "dependency cycle: a -> b -> a");
    let mut f = Fixture::new();
    f.derived("a", &["nope"]);
    assert_eq!(
        Graph::new(f.assets).err().unwrap().to_string(),
        r#"asset "a" depends on unknown asset "nope""#
    );
    let mut f = Fixture::new();
    f.derived("a", &["input"]);
    f.derived("a", &["input"]);
    assert!(matches!(Graph::new(f.assets), Err(Error::DuplicateAsset("a"))));
}

#[test]
fn bad_and_conflicting_paths_are_rejected_before_anything_is_written() {
    for (path, reason) in [
        ("/abs", "it must be a relative path"),
        ("a/../b", "it must not contain empty, `.` or `..` components"),
        ("install-config.yaml", "it is an input or the state file"),
        (state::FILE_NAME, "it is an input or the state file"),
    ] {
        let mut f = Fixture::new();
        f.push("bad", &[], move |_| Ok(Output::default().with_file(File::new(path, "x"))), None);
        let (graph, _, _, _) = f.graph();
        let dir = tempfile::tempdir().unwrap();
        let err =
            store::create(&graph, dir.path(), &["bad"], &["install-config.yaml"]).unwrap_err();
        assert!(err.to_string().ends_with(reason), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    let mut f = Fixture::new();
    f.push("one", &[], |_| Ok(Output::default().with_file(File::new("same", "1"))), None);
    f.push("two", &[], |_| Ok(Output::default().with_file(File::new("same", "2"))), None);
    let (graph, _, _, _) = f.graph();
    let dir = tempfile::tempdir().unwrap();
    let err = store::create(&graph, dir.path(), &["one", "two"], &[]).unwrap_err();
    assert_eq!(err.to_string(), r#"assets "one" and "two" both write "same""#);
}
