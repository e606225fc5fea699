//! The three controllers' reconciles, each one pass over the latest [`Snapshot`]: the cloud
//! config sync (`cloud-conf`), the trusted CA bundle (`ccm-trusted-ca`) and the CCM's own
//! objects. They render through `render` (the same platform modules as `create manifests`)
//! and write through `apply` (only what differs).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::render::{self, Cluster};
use super::status::Failure;
use super::trusted_ca::{self, Source};
use super::world::{Key, Seen, Snapshot, World};
use super::{apply, kubelet_sync};
use crate::assets::ccm::{NAMESPACE, Object};
use crate::assets::images::Images;

/// What a pass came to when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Everything is as rendered.
    Done,
    /// An input is not known yet (its watch has not listed it): the next snapshot brings it.
    Waiting(String),
}

/// A pass's result.
pub type Outcome = Result<Step, Failure>;

/// What every controller shares.
#[derive(Clone)]
pub struct Context {
    /// The API client.
    pub client: kube::Client,
    /// The watches.
    pub world: World,
    /// The images the CCM runs (`data/images.json`, or `--images`).
    pub images: Images,
    /// The system CA bundle merged into `ccm-trusted-ca`.
    pub system_bundle: PathBuf,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("system_bundle", &self.system_bundle)
            .finish_non_exhaustive()
    }
}

/// The annotation on `ClusterOperator/cloud-controller-manager` that switches the operator off
/// (value [`REMOVED`]): it deletes what it applied and then only reports. Any other value, or
/// none, switches it on again, and everything is applied again.
pub const MANAGEMENT_STATE: &str = "operator.ccm-assets.io/management-state";

/// [`MANAGEMENT_STATE`]'s value that switches the operator off.
pub const REMOVED: &str = "Removed";

/// The ClusterOperator the operator reports on (and is switched off by).
pub fn cluster_operator_key() -> Key {
    Key::openshift_config("ClusterOperator", super::status::NAME)
}

/// Whether the operator is switched off; a wait until the ClusterOperator is listed.
fn switched_off(ctx: &Context, snapshot: &Snapshot) -> Result<bool, Step> {
    let key = cluster_operator_key();
    ctx.world.watch([key.clone()]);
    let operator = known(snapshot, &key)?;
    Ok(operator.is_some_and(|o| o["metadata"]["annotations"][MANAGEMENT_STATE] == REMOVED))
}

/// The Infrastructure every controller starts from.
pub fn infrastructure_key() -> Key {
    Key::openshift_config("Infrastructure", "cluster")
}

fn proxy_key() -> Key {
    Key::openshift_config("Proxy", "cluster")
}

fn network_key() -> Key {
    Key::openshift_config("Network", "cluster")
}

/// The cloud config ConfigMap's key of the target.
fn cloud_conf_key() -> Key {
    Key::config_map(NAMESPACE, "cloud-conf")
}

/// A failed API call: may pass.
pub fn api_failure(what: &str, error: &kube::Error) -> Failure {
    Failure {
        reason: "APIError".to_owned(),
        message: format!("{what}: {}", ccm_tls_explain::chain(error)),
        terminal: false,
    }
}

fn render_failure(error: &render::Error) -> Failure {
    Failure { reason: error.reason().to_owned(), message: error.to_string(), terminal: true }
}

/// The value at `key`, or a wait.
fn known<'a>(snapshot: &'a Snapshot, key: &Key) -> Result<Option<&'a Value>, Step> {
    match snapshot.get(key) {
        Seen::Known(object) => Ok(object),
        Seen::Unknown => Err(Step::Waiting(format!("{key} not listed yet"))),
    }
}

/// A watch that keeps failing is a failure of its own (the view may be stale).
fn watches_failing(snapshot: &Snapshot, keys: &[&Key]) -> Result<(), Failure> {
    match snapshot.failing(keys) {
        Some((key, _, error)) => Err(Failure {
            reason: "APIError".to_owned(),
            message: format!("watching {key}: {error}"),
            terminal: false,
        }),
        None => Ok(()),
    }
}

/// The live cluster's inputs of the render, watching each; `Ok(None)` when there is no
/// Infrastructure (nothing to do), `Err(Ok(step))` while one is not known yet.
fn cluster(ctx: &Context, snapshot: &Snapshot) -> Result<Option<Cluster>, Outcome> {
    let infra_key = infrastructure_key();
    ctx.world.watch([infra_key.clone(), proxy_key(), network_key()]);
    let wait = |step: Step| Err(Ok(step));
    let infrastructure = match known(snapshot, &infra_key) {
        Ok(Some(infra)) => infra.clone(),
        Ok(None) => return Ok(None),
        Err(step) => return wait(step),
    };
    let mut keys = vec![infra_key, proxy_key(), network_key()];
    if let Some((name, _)) = render::cloud_config_ref(&infrastructure) {
        keys.push(Key::config_map(render::CLOUD_CONFIG_NAMESPACE, name));
    }
    if let Some(secret) = render::credentials_secret(&infrastructure) {
        keys.push(Key::secret(render::CREDENTIALS_NAMESPACE, secret));
    }
    ctx.world.watch(keys.iter().cloned());
    watches_failing(snapshot, &keys.iter().collect::<Vec<_>>()).map_err(Err)?;
    let mut found = Vec::new();
    for key in &keys[1..] {
        match known(snapshot, key) {
            Ok(object) => found.push(object.cloned()),
            Err(step) => return wait(step),
        }
    }
    let mut found = found.into_iter();
    let (proxy, network) = (found.next().flatten(), found.next().flatten());
    let (cloud_config, credentials) = (found.next().flatten(), found.next().flatten());
    Ok(Some(Cluster { infrastructure, cloud_config, credentials, network, proxy }))
}

/// Applies `objects` where the live ones differ, watching each; how many were written.
async fn converge(ctx: &Context, snapshot: &Snapshot, objects: &[Value]) -> Result<usize, Outcome> {
    let keys: Vec<Key> = objects.iter().map(Key::of).collect();
    ctx.world.watch(keys.iter().cloned());
    let mut written = 0;
    for (object, key) in objects.iter().zip(&keys) {
        let live = match known(snapshot, key) {
            Ok(live) => live,
            Err(step) => return Err(Ok(step)),
        };
        let prepared = apply::prepared(object);
        if !apply::needed(&prepared, live) {
            continue;
        }
        let applied = apply::apply(&ctx.client, &prepared)
            .await
            .map_err(|e| Err(api_failure(&format!("applying {key}"), &e)))?;
        kubelet_sync::tell_pods(&ctx.client, &applied).await;
        ctx.world.saw(applied);
        let why = match live {
            None => "absent".to_owned(),
            Some(live) => apply::difference(&prepared, live).unwrap_or_default(),
        };
        tracing::info!(object = %key, differed = %why, "applied");
        written += 1;
    }
    Ok(written)
}

fn flatten(result: Result<Step, Outcome>) -> Outcome {
    result.or_else(|outcome| outcome)
}

/// Controller 1: `openshift-cloud-controller-manager/cloud-conf` from the cloud-provider config,
/// through the platform's in-cluster transform. A config that cannot be transformed leaves
/// `cloud-conf` as it was.
pub async fn cloud_config(ctx: &Context, snapshot: &Snapshot) -> Outcome {
    flatten(
        async {
            if switched_off(ctx, snapshot).map_err(Ok)? {
                return Ok(Step::Done);
            }
            let Some(cluster) = cluster(ctx, snapshot)? else {
                return Ok(Step::Done);
            };
            let objects =
                render::cloud_conf(&cluster, &ctx.images).map_err(|e| Err(render_failure(&e)))?;
            let targets: Vec<Value> = objects.into_iter().map(|o| o.value).collect();
            converge(ctx, snapshot, &targets).await?;
            Ok(Step::Done)
        }
        .await,
    )
}

/// Controller 3's memory: the last cloud-provider config that rendered, so that a bad edit
/// does not stop the CCM's image and flags from rolling forward.
#[derive(Debug, Default)]
pub struct CcmMemory {
    last_good_config: Option<Value>,
    /// What was applied: `relatedObjects`.
    pub related: BTreeSet<Key>,
    /// Whether the operator is switched off ([`MANAGEMENT_STATE`]).
    pub removed: bool,
}

/// Controller 3: the CCM's namespace, RBAC, credentials Secret, Deployment, PDB and Service;
/// switched off, the deletion of everything the operator applies. Returns, besides the
/// outcome, the Deployment's rollout while it is not done.
pub async fn ccm(
    ctx: &Context,
    snapshot: &Snapshot,
    memory: &mut CcmMemory,
) -> (Outcome, Option<String>) {
    let result = async {
        let off = switched_off(ctx, snapshot).map_err(Ok)?;
        memory.removed = off;
        let Some(mut cluster) = cluster(ctx, snapshot)? else {
            return Ok((Step::Done, None));
        };
        let objects = match render::objects(&cluster, &ctx.images) {
            Ok(objects) => {
                memory.last_good_config = cluster.cloud_config.clone();
                objects
            }
            Err(error) if error.is_cloud_config() && memory.last_good_config.is_some() => {
                cluster.cloud_config = memory.last_good_config.clone();
                render::objects(&cluster, &ctx.images).map_err(|e| Err(render_failure(&e)))?
            }
            Err(error) => return Err(Err(render_failure(&error))),
        };
        let values = objects.into_iter().map(|Object { value, .. }| value);
        if off {
            let mut keys: Vec<Key> = values.map(|v| Key::of(&v)).collect();
            keys.push(Key::config_map(NAMESPACE, trusted_ca::NAME));
            remove(ctx, snapshot, &keys).await?;
            memory.related.clear();
            return Ok((Step::Done, None));
        }
        let ours: Vec<Value> = values.filter(|value| Key::of(value) != cloud_conf_key()).collect();
        memory.related = ours.iter().map(Key::of).collect();
        converge(ctx, snapshot, &ours).await?;
        let rolling = ours.iter().filter(|o| o["kind"] == "Deployment").find_map(|o| {
            match known(snapshot, &Key::of(o)) {
                Ok(Some(live)) => rollout(live),
                _ => None,
            }
        });
        Ok((Step::Done, rolling))
    }
    .await;
    match result {
        Ok((step, rolling)) => (Ok(step), rolling),
        Err(outcome) => (outcome, None),
    }
}

/// Deletes each of `keys` that exists and carries the operator's mark, the Deployments first
/// and the namespaces last (`ccm-assets operator remove` uses the same order).
async fn remove(ctx: &Context, snapshot: &Snapshot, keys: &[Key]) -> Result<(), Outcome> {
    ctx.world.watch(keys.iter().cloned());
    let mut order = keys.to_vec();
    order.sort_by_key(removal_rank);
    for key in &order {
        let live = known(snapshot, key).map_err(Ok)?;
        if live.is_some_and(|l| !l["metadata"]["annotations"][apply::APPLIED].is_null()) {
            apply::delete(&ctx.client, key)
                .await
                .map_err(|e| Err(api_failure(&format!("deleting {key}"), &e)))?;
            tracing::info!(object = %key, "deleted: the operator is switched off");
        }
    }
    Ok(())
}

/// The order of deletion: workloads, then the rest, then namespaces.
pub fn removal_rank(key: &Key) -> u8 {
    match key.kind.as_str() {
        "Deployment" | "DaemonSet" => 0,
        "Namespace" => 2,
        _ => 1,
    }
}

/// "N of M replicas updated and available" while `deployment` rolls out; `None` when done.
pub fn rollout(deployment: &Value) -> Option<String> {
    let number = |v: &Value| v.as_i64().unwrap_or(0);
    let (status, metadata) = (&deployment["status"], &deployment["metadata"]);
    let wanted = deployment["spec"]["replicas"].as_i64().unwrap_or(1);
    let observed = number(&status["observedGeneration"]) >= number(&metadata["generation"]);
    let updated = number(&status["updatedReplicas"]);
    let available = number(&status["availableReplicas"]);
    let old = number(&status["replicas"]) - updated;
    let done = observed && updated >= wanted && available >= wanted && old <= 0;
    let name = metadata["name"].as_str().unwrap_or_default();
    (!done).then(|| {
        format!("Deployment {NAMESPACE}/{name}: {updated} of {wanted} replicas updated, {available} available")
    })
}

/// Controller 2: `openshift-cloud-controller-manager/ccm-trusted-ca` from the proxy's trusted CA,
/// the cloud config's `ca-bundle.pem` and the system bundle. A broken certificate is left out
/// and returned, to be told once.
pub async fn trusted_ca(ctx: &Context, snapshot: &Snapshot) -> (Outcome, Vec<trusted_ca::Broken>) {
    let result = async {
        if switched_off(ctx, snapshot).map_err(Ok)? {
            return Ok((Step::Done, Vec::new()));
        }
        let Some(cluster) = cluster(ctx, snapshot)? else {
            return Ok((Step::Done, Vec::new()));
        };
        if !render::has_ccm(&cluster.infrastructure) {
            return Ok((Step::Done, Vec::new()));
        }
        let mut sources = Vec::new();
        let trusted = cluster.proxy.as_ref().and_then(|p| p["spec"]["trustedCA"]["name"].as_str());
        if let Some(name) = trusted.filter(|n| !n.is_empty()) {
            let key = Key::config_map(render::CLOUD_CONFIG_NAMESPACE, name);
            ctx.world.watch([key.clone()]);
            watches_failing(snapshot, &[&key]).map_err(Err)?;
            let map = known(snapshot, &key).map_err(Ok)?;
            if let Some(pem) = map.and_then(|m| m["data"][trusted_ca::PROXY_KEY].as_str()) {
                let origin = format!("{key} key {}", trusted_ca::PROXY_KEY);
                sources.push(Source { origin, pem: pem.to_owned() });
            } else {
                tracing::warn!(config_map = %key, "the proxy's trusted CA ConfigMap has no {} key; left out", trusted_ca::PROXY_KEY);
            }
        }
        if let Some(map) = &cluster.cloud_config
            && let Some(pem) = map["data"]["ca-bundle.pem"].as_str()
        {
            let origin = format!("{} key ca-bundle.pem", Key::of(map));
            sources.push(Source { origin, pem: pem.to_owned() });
        }
        match std::fs::read_to_string(&ctx.system_bundle) {
            Ok(pem) => sources.push(Source { origin: ctx.system_bundle.display().to_string(), pem }),
            Err(error) => tracing::debug!(path = %ctx.system_bundle.display(), %error, "no system CA bundle"),
        }
        let merged = trusted_ca::merge(&sources);
        let target = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": trusted_ca::NAME,
                "namespace": NAMESPACE,
                "annotations": {"openshift.io/owning-component": "Cloud Compute / Cloud Controller Manager"},
            },
            "data": {trusted_ca::KEY: merged.pem},
        });
        converge(ctx, snapshot, &[target]).await?;
        Ok((Step::Done, merged.broken))
    }
    .await;
    match result {
        Ok((step, broken)) => (Ok(step), broken),
        Err(outcome) => (outcome, Vec::new()),
    }
}
