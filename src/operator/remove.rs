//! `ccm-assets operator remove`: deletes everything the operator applies, and nothing else, and
//! waits until it is gone (the downgrade step that hands the cluster back).
//!
//! What the operator applies is rendered again from the live cluster, as the operator renders
//! it; of those objects only the ones carrying the operator's mark ([`APPLIED`]) are deleted, so
//! an object another tool made under the same name stays.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::Value;

use super::apply::{self, APPLIED};
use super::render::{self, Cluster};
use super::world::Key;
use crate::assets::ccm::NAMESPACE;
use crate::assets::images::Images;

/// Runs the removal; `Err` names what is left.
pub fn run(
    kubeconfig: Option<&std::path::Path>,
    images: &Images,
    timeout: Duration,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let client = kube_support::client::client_failing_fast(kubeconfig).await?;
        remove(&client, images, timeout).await
    })
}

async fn get(client: &kube::Client, key: &Key) -> anyhow::Result<Option<Value>> {
    let api = key.api(client).expect("a known kind");
    let object = api.get_opt(&key.name).await.with_context(|| format!("cannot read {key}"))?;
    Ok(object.map(|o| serde_json::to_value(o).expect("an API object is JSON")))
}

/// The objects the operator applies on this cluster, in the order they are applied.
pub async fn applied_keys(client: &kube::Client, images: &Images) -> anyhow::Result<Vec<Key>> {
    let infra_key = super::controllers::infrastructure_key();
    let Some(infrastructure) = get(client, &infra_key).await? else {
        return Ok(Vec::new());
    };
    let cloud_config = match render::cloud_config_ref(&infrastructure) {
        Some((name, _)) => {
            get(client, &Key::config_map(render::CLOUD_CONFIG_NAMESPACE, name)).await?
        }
        None => None,
    };
    let credentials = match render::credentials_secret(&infrastructure) {
        Some(name) => get(client, &Key::secret(render::CREDENTIALS_NAMESPACE, name)).await?,
        None => None,
    };
    let network = get(client, &Key::openshift_config("Network", "cluster")).await?;
    let proxy = get(client, &Key::openshift_config("Proxy", "cluster")).await?;
    let has_ccm = render::has_ccm(&infrastructure);
    let cluster = Cluster { infrastructure, cloud_config, credentials, network, proxy };
    let objects = render::objects(&cluster, images)
        .context("cannot tell what the operator applies on this cluster")?;
    let mut keys: Vec<Key> = objects.iter().map(|o| Key::of(&o.value)).collect();
    if has_ccm {
        keys.push(Key::config_map(NAMESPACE, super::trusted_ca::NAME));
    }
    Ok(keys)
}

async fn remove(client: &kube::Client, images: &Images, timeout: Duration) -> anyhow::Result<()> {
    let keys = applied_keys(client, images).await?;
    // The Deployment first (its pods stop while their config is still there), namespaces last.
    let mut order = keys.clone();
    order.sort_by_key(super::controllers::removal_rank);
    for key in &order {
        let Some(live) = get(client, key).await? else {
            println!("{key}: already gone");
            continue;
        };
        if live["metadata"]["annotations"][APPLIED].is_null() {
            println!("{key}: not applied by the operator; left alone");
            continue;
        }
        apply::delete(client, key).await.with_context(|| format!("cannot delete {key}"))?;
        println!("{key}: deleted");
    }
    let deadline = Instant::now() + timeout;
    loop {
        let mut left = Vec::new();
        for key in &order {
            if let Some(live) = get(client, key).await?
                && !live["metadata"]["annotations"][APPLIED].is_null()
            {
                left.push(key.to_string());
            }
        }
        let pods = ccm_pods(client).await?;
        left.extend(pods.into_iter().map(|name| format!("Pod {NAMESPACE}/{name}")));
        if left.is_empty() {
            println!("everything the operator applies is gone");
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!("still there after {}s: {}", timeout.as_secs(), left.join(", "));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The CCM's pods still running (any pod of its namespace: the operator runs only the CCM there).
async fn ccm_pods(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), NAMESPACE);
    let pods = match api.list(&Default::default()).await {
        Ok(pods) => pods,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Vec::new()),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot list the pods of {NAMESPACE}"));
        }
    };
    Ok(pods.items.into_iter().filter_map(|p| p.metadata.name).collect())
}
