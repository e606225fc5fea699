//! The cloud config of a running CCM: cloud.conf (with the clouds.yaml of `use-clouds`) watched
//! where it lives, each change checked with exactly the rules used at start (`load`, the rules
//! of `--check-config`), and each good one handed on as one new immutable [`Settings`] that
//! every controller takes at the start of its next reconcile.
//!
//! A mounted ConfigMap is swapped whole by the kubelet (`cloud.conf` → `..data/cloud.conf`,
//! `..data` renamed to a new timestamped directory): a read through the path sees the old file
//! or the new one, never half. A file written in place by hand could be read half-written, so a
//! changed text is read again `SETTLE` later and taken only when both reads agree. A change
//! that does not parse or check is never applied: the last good settings stay, and the change
//! is reported once per distinct content (`Outcome::Rejected`); the next good one recovers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::{Checked, Config, Severity, Values, load};

/// How often the file is looked at: a read and a hash of a few kilobytes.
pub(crate) const POLL: Duration = Duration::from_secs(1);
/// How long after a changed read the file is read again to confirm it.
pub(crate) const SETTLE: Duration = Duration::from_millis(200);

/// One good configuration: its generation (1 at start, one more per applied change), the
/// checked values and the typed view.
#[derive(Debug)]
pub struct Settings {
    /// 1 at start, one more per applied change.
    pub generation: u64,
    pub(crate) checked: Checked,
    pub(crate) config: Config,
    /// A hash of the files `[Global]` names (`ca-file`, `cert-file`, `key-file`), read at
    /// each login: a CA bundle rotated in place is a change too.
    pub(crate) files: [u8; 32],
}

impl Settings {
    /// The settings of checked values from `origin`, or every error.
    pub fn new(checked: Checked, origin: &str, generation: u64) -> Result<Self, Vec<String>> {
        let config = checked.config(origin).map_err(|_| checked.errors())?;
        let files = named_files(&checked.values);
        Ok(Settings { generation, checked, config, files })
    }

    /// True when `other` is the same configuration (values and named files).
    pub(crate) fn same_as(&self, other: &Settings) -> bool {
        self.checked.values == other.checked.values && self.files == other.files
    }

    /// The values the credentials are made of (merged with the Secret's when one is named).
    pub(crate) fn values(&self) -> &Values {
        &self.checked.values
    }
}

/// The settings as they are now: `borrow().clone()` at the start of a reconcile, never held
/// across one.
pub type Current = watch::Receiver<Arc<Settings>>;

/// What one consumer takes of the settings, as a receiver of its own that changes only when
/// its share does (a `[LoadBalancer]` edit does not wake the node controller).
pub(crate) fn slice<T>(
    current: &Current,
    share: impl Fn(&Settings) -> T + Send + 'static,
) -> watch::Receiver<T>
where
    T: PartialEq + Send + Sync + 'static,
{
    let mut source = current.clone();
    let (tx, rx) = watch::channel(share(&source.borrow_and_update()));
    tokio::spawn(async move {
        while source.changed().await.is_ok() {
            let next = share(&source.borrow_and_update());
            tx.send_if_modified(|now| {
                let changed = *now != next;
                if changed {
                    *now = next;
                }
                changed
            });
        }
    });
    rx
}

/// What a look at a changed file came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Applied as generation `generation`; `warnings` are its findings short of errors.
    Applied { generation: u64, warnings: Vec<String> },
    /// Not applied (the last good settings stay): every reason, each naming the file, and the
    /// line, section and key where the checks know them.
    Rejected { file: String, errors: Vec<String> },
}

/// Reads and checks `path` once: the settings of generation `generation`, or every error.
pub(crate) fn read(
    path: &Path,
    search: &[PathBuf],
    generation: u64,
) -> Result<Settings, Vec<String>> {
    let checked = load(path, search).map_err(|e| vec![crate::cloud::session::chain(&e)])?;
    Settings::new(checked, &path.display().to_string(), generation)
}

/// The file's bytes, hashed (an unreadable file hashes its error).
fn fingerprint(path: &Path) -> [u8; 32] {
    let bytes = std::fs::read(path).unwrap_or_else(|e| e.to_string().into_bytes());
    Sha256::digest(bytes).into()
}

/// The files `[Global]` names, hashed together.
fn named_files(values: &Values) -> [u8; 32] {
    let mut hash = Sha256::new();
    for key in ["ca-file", "cert-file", "key-file"] {
        if let Some(path) = values.get("Global", key).filter(|p| !p.is_empty()) {
            hash.update(key);
            hash.update(fingerprint(Path::new(path)));
        }
    }
    hash.finalize().into()
}

/// Watches `path` every [`POLL`] from the settings `tx` holds (the start's), sends each good
/// change as the next generation and tells `report` every outcome once per distinct content.
/// clouds.yaml is read with each look at a changed cloud.conf, and its own changes are seen at
/// the next look: the checked values differ.
pub(crate) async fn watch_file(
    path: PathBuf,
    search: Vec<PathBuf>,
    tx: watch::Sender<Arc<Settings>>,
    report: impl Fn(&Outcome),
) {
    let mut seen = fingerprint(&path);
    // The last rejected content, and why: told once.
    let mut rejected: Option<([u8; 32], Vec<String>)> = None;
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let now = fingerprint(&path);
        if now != seen {
            tokio::time::sleep(SETTLE).await;
            if fingerprint(&path) != now {
                // Still being written: the next look reads it again.
                continue;
            }
            seen = now;
        }
        let current = tx.borrow().clone();
        let outcome = match read(&path, &search, current.generation + 1) {
            Ok(settings) if settings.same_as(&current) => {
                rejected = None;
                continue;
            }
            Ok(settings) => {
                rejected = None;
                let generation = settings.generation;
                let warnings = warnings(&settings.checked);
                tx.send_replace(Arc::new(settings));
                Outcome::Applied { generation, warnings }
            }
            Err(errors) if rejected.as_ref() == Some(&(now, errors.clone())) => continue,
            Err(errors) => {
                rejected = Some((now, errors.clone()));
                Outcome::Rejected { file: path.display().to_string(), errors }
            }
        };
        report(&outcome);
    }
}

fn warnings(checked: &Checked) -> Vec<String> {
    let warnings = checked.diagnostics.iter().filter(|d| d.severity == Severity::Warning);
    warnings.map(|d| d.message.clone()).collect()
}

#[cfg(test)]
mod tests;
