//! Watches the credentials Secret (`[Global] secret-name`/`secret-namespace`) and hands every
//! changed version, merged over cloud.conf, to a callback: rotation without a restart.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};

use crate::config::live::Current;
use crate::config::{Config, Credentials, Values, secret};

/// What a Secret gives: the merged `[Global]` values and its `cacert` bundle (compared to see
/// a change).
type Loaded = (Values, Option<String>);

/// Turns one Secret into credentials (cloud.conf values winning); its `cacert` key, the CA
/// bundle the generator writes there, is trusted beside any `ca-file`.
pub(crate) fn credentials(
    base: &Values,
    secret: &Secret,
    origin: &str,
) -> Result<(Loaded, Credentials), String> {
    let data: BTreeMap<String, Vec<u8>> =
        secret.data.clone().unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
    let values = secret::merge(base, &data, origin)?;
    // Compared to see a change: `[Global]` alone, so that another section's edit is no new login.
    let global = values.section("Global");
    let ca_bundle = match data.get(secret::CA_KEY) {
        Some(bytes) => Some(
            String::from_utf8(bytes.clone())
                .map_err(|_| format!("{origin} key {}: not UTF-8", secret::CA_KEY))?,
        ),
        None => None,
    };
    let credentials =
        Credentials { ca_bundle: ca_bundle.clone(), ..crate::config::credentials(&values) };
    Ok(((global, ca_bundle), credentials))
}

/// What the Secret last gave, kept across restarts of [`watch`] (a new config generation): the
/// credentials are applied again only when they changed.
pub(crate) type Last = Option<(Loaded, [u8; 32])>;

/// Watches `namespace/name` (with backoff on API errors) and calls `apply` whenever the
/// credentials merged from it over the cloud config `current` holds change: a rotated Secret,
/// or a new config generation. Returns when a new generation names another Secret, or none,
/// or when the config's sender is gone. A bad or deleted Secret keeps the last good credentials.
pub(crate) async fn watch(
    client: kube::Client,
    (namespace, name): (String, String),
    mut current: Current,
    apply: &impl Fn(Credentials),
    last: &mut Last,
) {
    let origin = format!("secret {namespace}/{name}");
    let api: Api<Secret> = Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    let settings = current.borrow_and_update().clone();
    let (mut base, mut files) = (settings.values().clone(), settings.files);
    let mut secret: Option<Secret> = None;
    let mut seen_in_init = false;
    loop {
        let event = tokio::select! {
            event = events.try_next() => event,
            changed = current.changed() => {
                if changed.is_err() {
                    return;
                }
                let settings = current.borrow_and_update().clone();
                if secret_of(&settings.config) != Some((namespace.clone(), name.clone())) {
                    return;
                }
                (base, files) = (settings.values().clone(), settings.files);
                if let Some(secret) = &secret {
                    take((&base, files), secret, &origin, apply, last);
                }
                continue;
            }
        };
        let event = match event {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(secret = %origin, error = %crate::cloud::session::chain(&error), "watch failed; retrying");
                continue;
            }
        };
        let applied = match event {
            watcher::Event::Init => {
                seen_in_init = false;
                continue;
            }
            watcher::Event::InitDone => {
                if !seen_in_init && last.is_none() {
                    tracing::error!(secret = %origin, "credentials Secret not found; waiting for it to be created");
                }
                continue;
            }
            watcher::Event::Delete(_) => {
                tracing::warn!(secret = %origin, "credentials Secret deleted; keeping the last credentials");
                continue;
            }
            watcher::Event::InitApply(applied) => {
                seen_in_init = true;
                applied
            }
            watcher::Event::Apply(applied) => applied,
        };
        take((&base, files), &applied, &origin, apply, last);
        secret = Some(applied);
    }
}

/// The Secret the config names (`[Global] secret-namespace`, `secret-name`), if any.
pub(crate) fn secret_of(config: &Config) -> Option<(String, String)> {
    config.global.secret_namespace.clone().zip(config.global.secret_name.clone())
}

/// Applies the credentials of `secret` over `base` when they (or the files the config names,
/// `files`) differ from `last`.
fn take(
    (base, files): (&Values, [u8; 32]),
    secret: &Secret,
    origin: &str,
    apply: &impl Fn(Credentials),
    last: &mut Last,
) {
    match credentials(base, secret, origin) {
        Ok((loaded, _)) if last.as_ref() == Some(&(loaded.clone(), files)) => {}
        Ok((loaded, credentials)) => {
            let rotated = last.is_some();
            *last = Some((loaded, files));
            tracing::info!(secret = %origin, rotated, "credentials loaded from Secret");
            apply(credentials);
        }
        Err(error) => {
            tracing::error!(secret = %origin, %error, "credentials Secret unusable; keeping the last credentials")
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use secrecy::ExposeSecret;
    use serde_json::json;
    use tokio::sync::mpsc;

    use std::sync::Arc;

    use super::*;
    use crate::config::check_text;
    use crate::config::live::Settings;
    use fake_kube_apiserver::FakeApiServer;

    fn clouds_yaml(password: &str) -> String {
        let yaml = format!(
            "clouds:\n  openstack:\n    auth:\n      auth_url: http://k/v3\n      username: u\n      password: {password}\n      project_name: p\n"
        );
        base64_encode(yaml.as_bytes())
    }

    fn base64_encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[tokio::test]
    async fn a_rotated_secret_is_applied_without_restart_and_a_broken_one_is_ignored() {
        let fake = FakeApiServer::start().await.unwrap();
        let fake_client = fake.client();
        let secret = |pw: &str| json!({"metadata": {"name": "openstack-credentials"}, "data": {"clouds.yaml": clouds_yaml(pw)}});
        fake.create("v1", "secrets", "kube-system", secret("first"));
        let conf = |extra: &str| {
            let text = format!(
                "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n{extra}"
            );
            Arc::new(Settings::new(check_text(&text, "x").unwrap(), "x", 1).unwrap())
        };
        let (settings, current) = tokio::sync::watch::channel(conf(""));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let secret_ref = ("kube-system".to_owned(), "openstack-credentials".to_owned());
        let watched = tokio::spawn(async move {
            let apply = move |c: Credentials| {
                let _ = tx.send((c.password.map(|p| p.expose_secret().to_owned()), c.region));
            };
            watch(fake_client, secret_ref, current, &apply, &mut None).await;
        });
        type Seen = (Option<String>, Option<String>);
        let next = async |rx: &mut mpsc::UnboundedReceiver<Seen>| {
            tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("credentials applied within 10 s")
                .unwrap()
        };
        assert_eq!(next(&mut rx).await, (Some("first".into()), None));
        fake.patch(
            "v1",
            "secrets",
            "kube-system",
            "openstack-credentials",
            json!({"data": {"clouds.yaml": base64_encode(b"not: [valid")}}),
        );
        fake.patch(
            "v1",
            "secrets",
            "kube-system",
            "openstack-credentials",
            json!({"data": {"clouds.yaml": clouds_yaml("second")}}),
        );
        assert_eq!(next(&mut rx).await, (Some("second".into()), None));
        // A new config generation: merged again (cloud.conf values win), applied once.
        settings.send_replace(conf("region = RegionTwo\n"));
        assert_eq!(next(&mut rx).await, (Some("second".into()), Some("RegionTwo".into())));
        settings.send_replace(conf("region = RegionTwo\n[LoadBalancer]\nlb-method = SOURCE_IP\n"));
        // One naming another Secret ends this watch (the caller starts the other's).
        settings.send_replace(Arc::new(
            Settings::new(
                check_text("[Global]\nsecret-name = other\nsecret-namespace = kube-system\n", "x")
                    .unwrap(),
                "x",
                2,
            )
            .unwrap(),
        ));
        tokio::time::timeout(Duration::from_secs(10), watched).await.unwrap().unwrap();
        assert!(rx.try_recv().is_err(), "the same credentials are not applied again");
    }
}
