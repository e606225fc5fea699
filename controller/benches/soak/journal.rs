//! The soak's report file: every line the run prints, and the detail too long for a terminal,
//! appended to `target/soak/report-<seed>-<unix time>.txt` as it is written, so that a run that
//! failed, panicked or was killed can still be read after the fact (issue 35).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    start: Instant,
}

static JOURNAL: OnceLock<Journal> = OnceLock::new();

/// Where reports go: `CCM_SOAK_REPORT_DIR` (scripts/soak.sh sets it), else the workspace's
/// `target/soak`.
pub(crate) fn default_dir() -> PathBuf {
    std::env::var_os("CCM_SOAK_REPORT_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/soak"), PathBuf::from)
}

/// Opens this run's report in `dir` (made if missing) and adds the panic message to it when a
/// panic happens; returns its path. The clock of [`note`] starts here.
pub(crate) fn open(dir: &Path, seed: u64) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let path = dir.join(format!("report-{seed}-{unix}.txt"));
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let journal = Journal { path: path.clone(), file: Mutex::new(file), start: Instant::now() };
    assert!(JOURNAL.set(journal).is_ok(), "the report is opened once");
    let default = std::panic::take_hook();
    let shown = path.clone();
    std::panic::set_hook(Box::new(move |info| {
        // try_lock: a panic while this thread writes must not wait for itself.
        if let Some(journal) = JOURNAL.get()
            && let Ok(mut file) = journal.file.try_lock()
        {
            let _ = writeln!(file, "PANIC: {info}");
            let _ = file.flush();
        }
        default(info);
        eprintln!("soak: the report: {}", shown.display());
    }));
    path
}

/// The report's path, once open.
pub(crate) fn path() -> Option<&'static Path> {
    JOURNAL.get().map(|j| j.path.as_path())
}

/// Seconds since the report was opened.
pub(crate) fn clock() -> f64 {
    JOURNAL.get().map_or(0.0, |j| j.start.elapsed().as_secs_f64())
}

/// The offset of `at` on the report's clock, as the notes show it (`+12.3s`).
pub(crate) fn stamp(at: Instant) -> String {
    match JOURNAL.get() {
        Some(j) if at >= j.start => format!("+{:.1}s", at.duration_since(j.start).as_secs_f64()),
        Some(j) => format!("-{:.1}s", j.start.duration_since(at).as_secs_f64()),
        None => "+?s".to_owned(),
    }
}

/// A progress note, timed: stderr and the report.
pub(crate) fn note(what: &str) {
    let line = format!("[soak +{:6.1}s] {what}", clock());
    eprintln!("{line}");
    write(&line);
}

/// A result line: stdout and the report.
pub(crate) fn out(line: &str) {
    println!("{line}");
    write(line);
}

/// Detail for the report only (the full lists behind a note).
pub(crate) fn detail(line: &str) {
    write(line);
}

/// Appends one line; written through at once (a `File` has no buffer of its own).
fn write(line: &str) {
    if let Some(journal) = JOURNAL.get() {
        let mut file = journal.file.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(file, "{line}");
        let _ = file.flush();
    }
}
