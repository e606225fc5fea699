//! Re-reads cloud.conf and the clouds.yaml of `use-clouds` (mounted ConfigMap/Secret files that
//! kubelet updates in place) and applies changed credentials without a restart.

use std::path::PathBuf;
use std::time::Duration;

use super::{Credentials, Severity, Values, load};

/// Loads every `period` (the first load at once) and calls `apply` when the merged values
/// changed. A file that became unreadable or invalid keeps the last good credentials.
pub(crate) async fn watch(
    path: PathBuf,
    search: Vec<PathBuf>,
    period: Duration,
    apply: impl Fn(Credentials),
) {
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last: Option<Values> = None;
    loop {
        ticker.tick().await;
        let checked = match load(&path, &search) {
            Ok(checked) => checked,
            Err(error) => {
                tracing::error!(error = %crate::cloud::session::chain(&error), "cannot reload the cloud config; keeping the last credentials");
                continue;
            }
        };
        if checked.diagnostics.iter().any(|d| d.severity == Severity::Error) {
            if last.is_some() {
                tracing::error!(errors = ?checked.errors(), "reloaded cloud config is invalid; keeping the last credentials");
            }
            continue;
        }
        if last.as_ref() == Some(&checked.values) {
            continue;
        }
        if last.is_some() {
            tracing::info!(file = %path.display(), "cloud config or clouds.yaml changed; using the new credentials");
        }
        let credentials = super::credentials(&checked.values);
        last = Some(checked.values);
        apply(credentials);
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;
    use tokio::sync::mpsc;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_rewritten_clouds_yaml_is_applied_without_restart() {
        let dir = tempfile::tempdir().unwrap();
        let clouds = dir.path().join("clouds.yaml");
        let write = |pw: &str| {
            let text = format!(
                "clouds:\n  openstack:\n    auth:\n      auth_url: http://k/v3\n      username: u\n      password: {pw}\n"
            );
            std::fs::write(&clouds, text).unwrap();
        };
        write("one");
        let conf = dir.path().join("cloud.conf");
        std::fs::write(
            &conf,
            format!("[Global]\nuse-clouds = true\nclouds-file = {}\n", clouds.display()),
        )
        .unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(watch(conf, vec![], Duration::from_secs(30), move |c| {
            let _ = tx.send(c.password.map(|p| p.expose_secret().to_owned()));
        }));
        let next = async |rx: &mut mpsc::UnboundedReceiver<Option<String>>| {
            tokio::time::timeout(Duration::from_secs(300), rx.recv())
                .await
                .expect("credentials applied within 300 s (virtual time)")
                .unwrap()
        };
        assert_eq!(next(&mut rx).await.as_deref(), Some("one"));
        std::fs::write(&clouds, "clouds: [broken").unwrap();
        write("two");
        assert_eq!(next(&mut rx).await.as_deref(), Some("two"));
    }
}
