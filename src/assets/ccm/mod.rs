//! `manifests/ccm/`: the in-cluster CCM that takes over after bootstrap, on every platform.
//!
//! The namespace, service account and RBAC (`rbac.rs`) have one shape named after the
//! platform's CCM; the `cloud-conf` ConfigMap is the provider's derivation of the cloud-provider
//! config, the credentials Secret the provider's derivation of the `kube-system` one, and the
//! Deployment ([`deployment`]) runs the provider's
//! [`CcmSpec`](crate::assets::provider::CcmSpec). The Deployment carries a hash of what its
//! CCM reads only at start (`config_hash.rs`): for an upstream CCM its config, credentials and
//! CA, so an edit rolls the pods; for ours, which takes those live, the leader-migration
//! config alone, so an edit never restarts it. With `--leader-migration`
//! ([`leader_migration`]) it also takes part in the hand-over from the in-tree provider.
//!
//! The objects are one pure function of their [`Inputs`] ([`objects`]): this asset gathers
//! them from install-config and its parents, and `ccm-assets operator` from the live cluster
//! (`crate::operator::render`), so both render the same objects from the same facts.

mod config_hash;
pub mod deployment;
pub mod leader_migration;
mod rbac;

use serde_json::{Map, Value, json};

use super::cloud_provider_config::{self as cloud_conf};
use super::credentials::{self, Credentials};
use super::images::Images;
use super::platform::{self, Platform};
use super::provider::{CloudProviderConfig, SecretData};
use super::{cluster_id, install_config};
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;
use leader_migration::LeaderMigration;

pub use deployment::tolerations;
pub use rbac::management_namespace;

/// Asset id.
pub const ID: AssetId = "ccm";

/// The CCM's namespace.
pub const NAMESPACE: &str = "openshift-cloud-controller-manager";

const CLOUD_CONF_PATH: &str = "manifests/ccm/10-cloud-conf.yaml";
const CREDENTIALS_PATH: &str = "manifests/ccm/11-cloud-credentials.yaml";
const DEPLOYMENT_PATH: &str = "manifests/ccm/20-deployment.yaml";
const NODE_MANAGER_PATH: &str = "manifests/ccm/21-node-manager.yaml";

/// Writes the in-cluster CCM manifests where the platform has a cloud config and a CCM.
#[derive(Debug)]
pub struct CcmAsset {
    images: Images,
}

impl CcmAsset {
    /// `images` are the CCM images (`--ccm-image` overrides the platform's).
    pub fn new(images: Images) -> CcmAsset {
        CcmAsset { images }
    }
}

impl Asset for CcmAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Controller Manager"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_conf::ID, credentials::ID, leader_migration::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let id: cluster_id::ClusterId = parents.get(&cluster_id::KEY)?;
        let provider_config: Option<CloudProviderConfig> = parents.get(&cloud_conf::KEY)?;
        // `null` where the platform has no credentials Secret.
        let creds: Option<Credentials> = parents.get(&credentials::KEY)?;
        let creds = creds.and_then(|c| c.data);
        let migration = parents.get(&leader_migration::KEY)?;
        let Some(provider_config) = provider_config else {
            return Ok(Output::default());
        };
        let cluster_networks: Vec<String> =
            config.networking.cluster_network.iter().map(|e| e.cidr.clone()).collect();
        let proxy = config.proxy.as_ref().map(|p| ProxyEnv {
            http_proxy: p.http_proxy.clone(),
            https_proxy: p.https_proxy.clone(),
            no_proxy: p.no_proxy.clone(),
        });
        let inputs = Inputs {
            platform: platform::of(&config)?,
            provider_config: &provider_config,
            credentials: creds.as_ref(),
            infra_id: &id.infra_id,
            replicas: if config.control_plane_replicas() == 1 { 1 } else { 2 },
            images: &self.images,
            cluster_networks: &cluster_networks,
            leader_migration: migration.as_ref(),
            proxy: proxy.as_ref(),
        };
        let objects =
            objects(&inputs).map_err(|e| format!("{}: data.config: {e}", cloud_conf::PATH))?;
        let mut output = Output::default();
        for Object { path, value, secret } in objects {
            let bytes = to_yaml(&value)?;
            let file = if secret { File::secret(path, bytes) } else { File::new(path, bytes) };
            output = output.with_file(file);
        }
        Ok(output)
    }
}

/// One object of the in-cluster CCM, as [`objects`] renders it.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The file `create manifests` writes it to, relative to the asset directory
    /// (`manifests/ccm/20-deployment.yaml`).
    pub path: String,
    /// The object itself (`apiVersion`, `kind`, `metadata`, …).
    pub value: Value,
    /// Whether it holds credentials (a Secret: written with mode 0600, never logged).
    pub secret: bool,
}

/// The cluster-wide egress proxy the CCM's container is given, each variable only when set
/// (non-empty).
///
/// `create manifests` takes it from install-config's `proxy` as written; the cluster's
/// `Proxy/cluster` status, which `ccm-assets operator` reads, also adds the cluster's own
/// networks and domains to `noProxy`. Generation keeps to what install-config gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    /// `HTTP_PROXY`.
    pub http_proxy: Option<String>,
    /// `HTTPS_PROXY`.
    pub https_proxy: Option<String>,
    /// `NO_PROXY`.
    pub no_proxy: Option<String>,
}

impl ProxyEnv {
    /// The container env entries, `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, only those set.
    pub fn env(&self) -> Vec<Value> {
        [
            ("HTTP_PROXY", &self.http_proxy),
            ("HTTPS_PROXY", &self.https_proxy),
            ("NO_PROXY", &self.no_proxy),
        ]
        .into_iter()
        .filter_map(|(name, value)| {
            let value = value.as_deref().filter(|v| !v.is_empty())?;
            Some(json!({"name": name, "value": value}))
        })
        .collect()
    }
}

/// What the in-cluster CCM objects are made of: what `create manifests` reads from
/// install-config and its parents, and `ccm-assets operator` from the live cluster
/// (`crate::operator::render`).
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The platform.
    pub platform: &'static Platform,
    /// The cloud-provider ConfigMap's content (`openshift-config/cloud-provider-config`):
    /// the cloud config before the in-cluster transform, and its CA bundle.
    pub provider_config: &'a CloudProviderConfig,
    /// The `kube-system` credentials Secret's plaintext data, when there is one.
    pub credentials: Option<&'a SecretData>,
    /// The infrastructure ID (`--cluster-name`).
    pub infra_id: &'a str,
    /// The Deployment's replicas.
    pub replicas: u32,
    /// The images.
    pub images: &'a Images,
    /// The cluster networks' CIDRs, for the platform's flags ([`Provider::ccm_args`]).
    ///
    /// [`Provider::ccm_args`]: crate::assets::provider::Provider::ccm_args
    pub cluster_networks: &'a [String],
    /// The leader-migration configuration, with `--leader-migration`.
    pub leader_migration: Option<&'a LeaderMigration>,
    /// The egress proxy of the CCM's container.
    pub proxy: Option<&'a ProxyEnv>,
}

/// The cloud config cannot be turned into the in-cluster CCM's ([`Provider::in_cluster_config`]);
/// says what the platform's transform says.
///
/// [`Provider::in_cluster_config`]: crate::assets::provider::Provider::in_cluster_config
#[derive(Debug)]
pub struct TransformError(AssetError);

impl std::fmt::Display for TransformError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The transform's own words (section and key), as they always were.
        self.0.fmt(f)
    }
}

impl std::error::Error for TransformError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// The `cloud-conf` ConfigMap alone (one of [`objects`]): the platform's in-cluster transform
/// of the cloud config, and its CA bundle. `None` where the platform has no CCM of ours.
pub fn cloud_conf_object(
    platform: &Platform,
    provider_config: &CloudProviderConfig,
) -> Result<Option<Object>, TransformError> {
    if platform.provider.ccm().is_none() {
        return Ok(None);
    }
    let cloud_conf =
        platform.provider.in_cluster_config(&provider_config.config).map_err(TransformError)?;
    Ok(Some(cloud_conf_map(&cloud_conf, provider_config.ca_bundle.as_deref())))
}

fn cloud_conf_map(cloud_conf: &str, ca_bundle: Option<&str>) -> Object {
    let mut data = json!({"cloud.conf": cloud_conf});
    if let Some(ca) = ca_bundle {
        data["ca-bundle.pem"] = Value::from(ca);
    }
    let value = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cloud-conf", "namespace": NAMESPACE},
        "data": data,
    });
    Object { path: CLOUD_CONF_PATH.to_owned(), value, secret: false }
}

/// The in-cluster CCM's objects, in apply order: namespace and RBAC, the `cloud-conf`
/// ConfigMap, the credentials Secret, the Deployment and (Azure) the node-manager DaemonSet.
/// None where the platform has no CCM of ours.
pub fn objects(inputs: &Inputs<'_>) -> Result<Vec<Object>, TransformError> {
    let Inputs {
        platform: row,
        provider_config,
        credentials,
        infra_id,
        replicas,
        images,
        cluster_networks,
        leader_migration: migration,
        proxy,
    } = *inputs;
    let Some(spec) = row.provider.ccm() else {
        return Ok(Vec::new());
    };
    let cloud_conf =
        row.provider.in_cluster_config(&provider_config.config).map_err(TransformError)?;
    let names = rbac::Names {
        app: spec.app,
        secret: row.provider.secret_name(),
        platform: row.name,
        in_cluster_secret: spec.secret.map(|s| s.name),
        reads_credentials_secret: spec.reads_credentials_secret,
        own_ccm: spec.binary == super::provider::Binary::OwnImage,
    };
    let object = |path: &str, value| Object { path: path.to_owned(), value, secret: false };
    let mut out: Vec<Object> = rbac::objects(&names)
        .into_iter()
        .map(|(name, value)| object(&format!("manifests/ccm/{name}"), value))
        .collect();
    out.push(cloud_conf_map(&cloud_conf, provider_config.ca_bundle.as_deref()));
    let secret_data = match (spec.secret, credentials) {
        (Some(mount), Some(data)) => {
            let data = row.provider.in_cluster_secret(data);
            let secret = json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": mount.name, "namespace": NAMESPACE},
                "type": "Opaque",
                "stringData": data.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect::<Map<_, _>>(),
            });
            out.push(Object { secret: true, ..object(CREDENTIALS_PATH, secret) });
            data.into_values().collect::<Vec<_>>().join("\0")
        }
        _ => String::new(),
    };
    let hash = config_hash::hash(
        &spec,
        &config_hash::Inputs {
            cloud_conf: &cloud_conf,
            credentials: &secret_data,
            ca_bundle: provider_config.ca_bundle.as_deref().unwrap_or(""),
            leader_migration: migration.map(|m| m.config.as_str()),
        },
    );
    let extra_args = row.provider.ccm_args(&cloud_conf, cluster_networks);
    let run = deployment::Run {
        spec: &spec,
        image: images.ccm_for(row.name),
        assets_image: &images.assets,
        infra_id,
        hash: &hash,
        leader_migration: migration.is_some(),
        extra_args: &extra_args,
        proxy,
    };
    out.push(object(DEPLOYMENT_PATH, run.deployment(replicas)));
    if let Some(daemon_set) = run.node_manager(images.node_manager_for(row.name)) {
        out.push(object(NODE_MANAGER_PATH, daemon_set));
    }
    Ok(out)
}
