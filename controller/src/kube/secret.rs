//! Watches the credentials Secret (`[Global] secret-name`/`secret-namespace`) and hands every
//! changed version, merged over cloud.conf, to a callback: rotation without a restart.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};

use crate::config::{Credentials, Values, secret};

/// What a Secret gives: the merged values and its `cacert` bundle (compared to see a change).
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
    let ca_bundle = match data.get(secret::CA_KEY) {
        Some(bytes) => Some(
            String::from_utf8(bytes.clone())
                .map_err(|_| format!("{origin} key {}: not UTF-8", secret::CA_KEY))?,
        ),
        None => None,
    };
    let credentials =
        Credentials { ca_bundle: ca_bundle.clone(), ..crate::config::credentials(&values) };
    Ok(((values, ca_bundle), credentials))
}

/// Watches `namespace/name` forever (with backoff on API errors) and calls `apply` whenever
/// the merged credentials change. A bad or deleted Secret keeps the last good credentials.
pub async fn watch(
    client: kube::Client,
    namespace: String,
    name: String,
    base: Values,
    apply: impl Fn(Credentials),
) {
    let origin = format!("secret {namespace}/{name}");
    let api: Api<Secret> = Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    let mut last: Option<Loaded> = None;
    let mut seen_in_init = false;
    loop {
        let event = match events.try_next().await {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(secret = %origin, error = %crate::cloud::session::chain(&error), "watch failed; retrying");
                continue;
            }
        };
        let secret = match event {
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
            watcher::Event::InitApply(secret) => {
                seen_in_init = true;
                secret
            }
            watcher::Event::Apply(secret) => secret,
        };
        match credentials(&base, &secret, &origin) {
            Ok((loaded, _)) if last.as_ref() == Some(&loaded) => {}
            Ok((loaded, credentials)) => {
                let rotated = last.is_some();
                last = Some(loaded);
                tracing::info!(secret = %origin, rotated, "credentials loaded from Secret");
                apply(credentials);
            }
            Err(error) => {
                tracing::error!(secret = %origin, %error, "credentials Secret unusable; keeping the last credentials")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use secrecy::ExposeSecret;
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::config::check_text;
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
        let secret = |pw: &str| json!({"metadata": {"name": "openstack-credentials"}, "data": {"clouds.yaml": clouds_yaml(pw)}});
        fake.create("v1", "secrets", "kube-system", secret("first"));
        let base = check_text(
            "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n",
            "x",
        )
        .unwrap()
        .values;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let watch = watch(
            fake.client(),
            "kube-system".into(),
            "openstack-credentials".into(),
            base,
            move |c| {
                let _ = tx.send(c.password.map(|p| p.expose_secret().to_owned()));
            },
        );
        tokio::spawn(watch);
        let next = async |rx: &mut mpsc::UnboundedReceiver<Option<String>>| {
            tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("credentials applied within 10 s")
                .unwrap()
        };
        assert_eq!(next(&mut rx).await.as_deref(), Some("first"));
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
        assert_eq!(next(&mut rx).await.as_deref(), Some("second"));
    }
}
