//! The CCM's objects on a running cluster: what `create manifests` renders from
//! install-config, rendered from the live objects instead (pure, no I/O).
//!
//! The operator reads the cluster ([`Cluster`]) and hands it here; the objects come out of
//! the one function `create manifests` uses too ([`ccm::objects`]), so the two never differ
//! for the same facts. How each fact is read follows the cluster-cloud-controller-manager
//! operator (CCCMO):
//!
//! * the platform is `Infrastructure/cluster` `status.platformStatus.type`, the infrastructure
//!   ID its `status.infrastructureName`, and the CCM runs 1 replica when
//!   `status.controlPlaneTopology` is `SingleReplica`, else 2 (as generation does from the
//!   install-config's control-plane replicas, from which the installer derives that topology);
//! * the cloud config is the ConfigMap `openshift-config/<spec.cloudConfig.name>`: its
//!   `cloud.conf` key when it has one, else `data[spec.cloudConfig.key]`; `ca-bundle.pem` is
//!   taken along (CCCMO copies every other key too; the CCM reads only these);
//! * the credentials are the `kube-system` Secret the platform names
//!   ([`Provider::secret_name`]), base64 `data` as the API returns it; none (`Manual`
//!   credentials) renders no in-cluster Secret, as generation does;
//! * the cluster networks are `Network/cluster` `spec.clusterNetwork[].cidr` (none without it);
//! * the proxy is `Proxy/cluster` `status.{httpProxy,httpsProxy,noProxy}` (none without it);
//! * leader migration is never rendered: it is a one-time hand-over that
//!   `create manifests --leader-migration` sets up, and nothing on the cluster asks for it.
//!
//! [`Provider::secret_name`]: crate::assets::provider::Provider::secret_name

use std::error::Error as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use crate::assets::ccm::{self, Inputs, Object, ProxyEnv};
use crate::assets::credentials;
use crate::assets::images::Images;
use crate::assets::platform::{self, Platform};
use crate::assets::provider::{CloudProviderConfig, SecretData};

/// Where the cloud-config ConfigMap lives (its name is in the Infrastructure).
pub const CLOUD_CONFIG_NAMESPACE: &str = "openshift-config";

/// Where the credentials Secret lives (its name is the platform's, [`credentials_secret`]).
pub const CREDENTIALS_NAMESPACE: &str = credentials::NAMESPACE;

/// The cloud-config key CCCMO prefers over `spec.cloudConfig.key`.
pub const CLOUD_CONF_KEY: &str = "cloud.conf";

/// The cloud config's CA bundle key, taken along.
pub const CA_BUNDLE_KEY: &str = "ca-bundle.pem";

const INFRASTRUCTURE: &str = "Infrastructure/cluster";

/// The live objects the CCM's objects are rendered from, as the API returns them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    /// `Infrastructure/cluster` (`config.openshift.io/v1`).
    pub infrastructure: Value,
    /// The ConfigMap `openshift-config/<spec.cloudConfig.name>`, when it exists.
    pub cloud_config: Option<Value>,
    /// The credentials Secret in [`CREDENTIALS_NAMESPACE`] ([`credentials_secret`] names it),
    /// with base64 `data` as the API returns it, when it exists.
    pub credentials: Option<Value>,
    /// `Network/cluster` (`config.openshift.io/v1`), when it exists.
    pub network: Option<Value>,
    /// `Proxy/cluster` (`config.openshift.io/v1`), when it exists.
    pub proxy: Option<Value>,
}

/// Why the CCM's objects cannot be rendered. Each message names the object and field it is
/// about, and says all there is (no separate cause): it is the ClusterOperator condition's
/// message as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A field of `Infrastructure/cluster` is missing or unusable.
    #[error("{INFRASTRUCTURE}: {field}: {detail}")]
    InfrastructureInvalid {
        /// The field's path (`status.infrastructureName`).
        field: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// `status.platformStatus.type` names no platform ccm-assets knows.
    #[error("{INFRASTRUCTURE}: status.platformStatus.type: unknown platform {kind:?}")]
    UnknownPlatform {
        /// The type found.
        kind: String,
    },
    /// The cloud-config ConfigMap the Infrastructure names does not exist.
    #[error(
        "{CLOUD_CONFIG_NAMESPACE}/{name}: not found ({INFRASTRUCTURE} spec.cloudConfig.name \
         names it as the cloud config)"
    )]
    CloudConfigMissing {
        /// Its name.
        name: String,
    },
    /// The cloud-config ConfigMap has neither `cloud.conf` nor the Infrastructure's key.
    #[error(
        "{CLOUD_CONFIG_NAMESPACE}/{name}: key {key:?} specified in {INFRASTRUCTURE} \
         spec.cloudConfig.key does not exist (nor does key \"cloud.conf\")"
    )]
    CloudConfigKeyMissing {
        /// The ConfigMap's name.
        name: String,
        /// The key looked for.
        key: String,
    },
    /// The cloud config cannot be turned into the in-cluster CCM's: the platform's transform's
    /// own words (section and key).
    #[error("{CLOUD_CONFIG_NAMESPACE}/{name}: data.{key}: {detail}")]
    CloudConfigInvalid {
        /// The ConfigMap's name.
        name: String,
        /// The key the config was read from.
        key: String,
        /// What the transform said, causes included.
        detail: String,
    },
    /// The credentials Secret's data cannot be read.
    #[error("{CREDENTIALS_NAMESPACE}/{name}: {field}: {detail}")]
    CredentialsInvalid {
        /// The Secret's name.
        name: &'static str,
        /// The field (`data.clouds.yaml`); never a value.
        field: String,
        /// What is wrong with it.
        detail: &'static str,
    },
}

impl Error {
    /// The ClusterOperator condition reason (CamelCase) for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InfrastructureInvalid { .. } => "InfrastructureInvalid",
            Error::UnknownPlatform { .. } => "UnsupportedPlatform",
            Error::CloudConfigMissing { .. } => "CloudConfigMissing",
            Error::CloudConfigKeyMissing { .. } => "CloudConfigKeyMissing",
            Error::CloudConfigInvalid { .. } => "CloudConfigInvalid",
            Error::CredentialsInvalid { .. } => "CredentialsInvalid",
        }
    }

    /// Whether it is the cloud-config ConfigMap's fault (missing, without its key, or not
    /// transformable): what an earlier good cloud config could stand in for.
    pub fn is_cloud_config(&self) -> bool {
        matches!(
            self,
            Error::CloudConfigMissing { .. }
                | Error::CloudConfigKeyMissing { .. }
                | Error::CloudConfigInvalid { .. }
        )
    }
}

/// The platform `infrastructure` names (`status.platformStatus.type`).
pub fn platform(infrastructure: &Value) -> Result<&'static Platform, Error> {
    let kind = text(infrastructure, "/status/platformStatus/type").ok_or_else(|| {
        Error::InfrastructureInvalid {
            field: "status.platformStatus.type",
            detail: "missing".to_owned(),
        }
    })?;
    platform::find_by_infrastructure_type(kind)
        .ok_or_else(|| Error::UnknownPlatform { kind: kind.to_owned() })
}

/// Whether `infrastructure`'s platform is one ccm-assets runs a CCM for (when not, there is
/// nothing to render, and nothing else to read).
pub fn has_ccm(infrastructure: &Value) -> bool {
    platform(infrastructure).is_ok_and(|p| p.provider.ccm().is_some())
}

/// The cloud-config ConfigMap's name in [`CLOUD_CONFIG_NAMESPACE`] and the key the
/// Infrastructure names (`spec.cloudConfig.{name,key}`; the key `""` when unset). `None` when
/// no name is set.
pub fn cloud_config_ref(infrastructure: &Value) -> Option<(&str, &str)> {
    let name = text(infrastructure, "/spec/cloudConfig/name").filter(|n| !n.is_empty())?;
    Some((name, text(infrastructure, "/spec/cloudConfig/key").unwrap_or_default()))
}

/// The name of the credentials Secret to read in [`CREDENTIALS_NAMESPACE`], when the platform
/// has a CCM and a Secret.
pub fn credentials_secret(infrastructure: &Value) -> Option<&'static str> {
    let platform = platform(infrastructure).ok()?;
    platform.provider.ccm()?;
    platform.provider.secret_name()
}

/// The CCM's objects for `cluster`, in apply order; none when its platform has no CCM of ours.
pub fn objects(cluster: &Cluster, images: &Images) -> Result<Vec<Object>, Error> {
    let infrastructure = &cluster.infrastructure;
    let platform = platform(infrastructure)?;
    if platform.provider.ccm().is_none() {
        return Ok(Vec::new());
    }
    let infra_id = text(infrastructure, "/status/infrastructureName")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Error::InfrastructureInvalid {
        field: "status.infrastructureName",
        detail: "missing".to_owned(),
    })?;
    let single = text(infrastructure, "/status/controlPlaneTopology") == Some("SingleReplica");
    let source = source(cluster, platform)?;
    let credentials = credentials(cluster, platform)?;
    let cluster_networks = cluster_networks(cluster.network.as_ref());
    let proxy = cluster.proxy.as_ref().map(proxy_env);
    let inputs = Inputs {
        platform,
        provider_config: &source.config,
        credentials: credentials.as_ref(),
        infra_id,
        replicas: if single { 1 } else { 2 },
        images,
        cluster_networks: &cluster_networks,
        leader_migration: None,
        proxy: proxy.as_ref(),
    };
    ccm::objects(&inputs).map_err(|e| source.invalid(&e))
}

/// The `cloud-conf` ConfigMap alone (one of [`objects`], what CCCMO's cloud-config sync
/// writes), which needs nothing but the Infrastructure and the cloud config; none when the
/// platform has no CCM of ours. `images` are not read: it is called as [`objects`] is.
pub fn cloud_conf(cluster: &Cluster, _images: &Images) -> Result<Vec<Object>, Error> {
    let platform = platform(&cluster.infrastructure)?;
    if platform.provider.ccm().is_none() {
        return Ok(Vec::new());
    }
    let source = source(cluster, platform)?;
    let object =
        ccm::cloud_conf_object(platform, &source.config).map_err(|e| source.invalid(&e))?;
    Ok(object.into_iter().collect())
}

/// The cloud config as read, and where from.
struct Source<'a> {
    name: &'a str,
    key: &'a str,
    config: CloudProviderConfig,
}

impl Source<'_> {
    fn invalid(&self, error: &ccm::TransformError) -> Error {
        let mut detail = error.to_string();
        let mut cause = error.source();
        while let Some(inner) = cause {
            detail = format!("{detail}: {inner}");
            cause = inner.source();
        }
        Error::CloudConfigInvalid { name: self.name.to_owned(), key: self.key.to_owned(), detail }
    }
}

/// CCCMO's `prepareSourceConfigMap`: `cloud.conf` when present, else the Infrastructure's key.
fn source<'a>(cluster: &'a Cluster, platform: &Platform) -> Result<Source<'a>, Error> {
    let (name, key) =
        cloud_config_ref(&cluster.infrastructure).ok_or_else(|| Error::InfrastructureInvalid {
            field: "spec.cloudConfig.name",
            detail: format!("empty, but the {} CCM needs a cloud config", platform.name),
        })?;
    let map = cluster
        .cloud_config
        .as_ref()
        .ok_or_else(|| Error::CloudConfigMissing { name: name.to_owned() })?;
    let empty = Map::new();
    let data = map.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let key = if data.contains_key(CLOUD_CONF_KEY) { CLOUD_CONF_KEY } else { key };
    let value = data.get(key).ok_or_else(|| Error::CloudConfigKeyMissing {
        name: name.to_owned(),
        key: key.to_owned(),
    })?;
    let config = value.as_str().ok_or_else(|| Error::CloudConfigInvalid {
        name: name.to_owned(),
        key: key.to_owned(),
        detail: "not a string".to_owned(),
    })?;
    let ca_bundle = data.get(CA_BUNDLE_KEY).and_then(Value::as_str).map(str::to_owned);
    Ok(Source { name, key, config: CloudProviderConfig { config: config.to_owned(), ca_bundle } })
}

/// The credentials Secret's plaintext data, when the platform names one and it exists.
fn credentials(cluster: &Cluster, platform: &Platform) -> Result<Option<SecretData>, Error> {
    let (Some(name), Some(secret)) = (platform.provider.secret_name(), &cluster.credentials) else {
        return Ok(None);
    };
    let invalid = |key: &str, detail| Error::CredentialsInvalid {
        name,
        field: format!("data.{key}"),
        detail,
    };
    let mut out = SecretData::new();
    for (key, encoded) in secret.get("data").and_then(Value::as_object).into_iter().flatten() {
        let encoded = encoded.as_str().ok_or_else(|| invalid(key, "not a string"))?;
        let bytes = STANDARD.decode(encoded).map_err(|_| invalid(key, "not base64"))?;
        let text = String::from_utf8(bytes).map_err(|_| invalid(key, "not UTF-8"))?;
        out.insert(key.clone(), text);
    }
    Ok(Some(out))
}

/// `Network/cluster` `spec.clusterNetwork[].cidr`.
fn cluster_networks(network: Option<&Value>) -> Vec<String> {
    let entries = network.and_then(|n| n.pointer("/spec/clusterNetwork")).and_then(Value::as_array);
    entries.into_iter().flatten().filter_map(|e| e["cidr"].as_str()).map(str::to_owned).collect()
}

/// `Proxy/cluster` `status.{httpProxy,httpsProxy,noProxy}` (the status: what the cluster
/// resolved, `noProxy` with its own networks added).
fn proxy_env(proxy: &Value) -> ProxyEnv {
    let field =
        |name: &str| proxy["status"][name].as_str().filter(|v| !v.is_empty()).map(str::to_owned);
    ProxyEnv {
        http_proxy: field("httpProxy"),
        https_proxy: field("httpsProxy"),
        no_proxy: field("noProxy"),
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
