//! What the one-shot commands (`migrate-load-balancers`, `purge`) share: the cloud config read
//! and checked, the credentials (from the Secret `[Global] secret-name` names, when it does),
//! and one login to OpenStack within 60 s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use crate::cloud::OpenStack;
use crate::config::{Checked, Config};
use crate::metrics::Metrics;

/// How long the login may take.
const LOGIN: Duration = Duration::from_secs(60);

/// A checked cloud config: every error in it, naming the file, or the config.
pub(crate) fn read_config(path: &Path, search: &[PathBuf]) -> Result<(Checked, Config), String> {
    let shown = path.display().to_string();
    let checked = crate::config::load(path, search).map_err(|e| format!("{e:#}"))?;
    let errors = checked.errors();
    if !errors.is_empty() {
        return Err(format!("{shown}: {}", errors.join("; ")));
    }
    let config = checked.config(&shown).map_err(|e| format!("{e:#}"))?;
    Ok((checked, config))
}

/// A logged-in OpenStack client; its token renewal stops when it is dropped.
pub(crate) struct Connected {
    pub(crate) cloud: Arc<OpenStack>,
    connector: tokio::task::JoinHandle<()>,
}

impl Drop for Connected {
    fn drop(&mut self) {
        self.connector.abort();
    }
}

/// Logs in with the config's credentials, or the Secret's through `client` when the config
/// names one (no client then is an error saying so).
pub(crate) async fn login(
    checked: &Checked,
    config: &Config,
    client: Option<&kube::Client>,
) -> anyhow::Result<Connected> {
    let mut credentials = crate::config::credentials(&checked.values);
    if let (Some(name), Some(namespace)) =
        (&config.global.secret_name, &config.global.secret_namespace)
    {
        let Some(client) = client else {
            bail!(
                "[Global] secret-name names the credentials Secret {namespace}/{name}: reading it \
                 needs --kubeconfig"
            );
        };
        let secret = Api::<Secret>::namespaced(client.clone(), namespace)
            .get(name)
            .await
            .with_context(|| format!("reading the credentials Secret {namespace}/{name}"))?;
        let origin = format!("secret {namespace}/{name}");
        credentials = crate::kube::secret::credentials(&checked.values, &secret, &origin)
            .map_err(anyhow::Error::msg)?
            .1;
    }
    let cloud = OpenStack::new(Metrics::shared(), config.metadata.request_timeout);
    cloud.set_credentials(credentials);
    let connected = Connected { connector: tokio::spawn(cloud.clone().keep_connected()), cloud };
    let mut ready = connected.cloud.subscribe_ready();
    let login = tokio::time::timeout(LOGIN, ready.wait_for(|r| *r)).await;
    if !matches!(login, Ok(Ok(_))) {
        let reason = connected.cloud.readiness().err().unwrap_or_default();
        bail!("cannot log in to OpenStack within {} s: {reason}", LOGIN.as_secs());
    }
    Ok(connected)
}
