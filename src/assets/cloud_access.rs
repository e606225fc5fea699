//! `cloud-access`: what the command loaded to reach the cloud, for the platform in use.
//!
//! The command line reads clouds.yaml, credential files and the environment
//! (`cli::resolve`); this asset only carries the result into the graph, so a change of
//! credentials regenerates everything that depends on them. Its content holds secrets, which
//! is why the state file is written with mode 0600.
//!
//! What each platform loads (the clouds.yaml entry, AWS keys, the Azure service principal, the
//! GCP service account, the IBM Cloud account) is defined here, beside [`CloudAccess`], and so
//! are the loaders' request and result: the provider contract and the platforms build on this
//! module, and it names no platform module.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::assets::env::Env;
use crate::graph::{Asset, AssetError, AssetId, Key, Output, Parents};
use crate::installconfig::{CredentialsMode, InstallConfig, Secret};
use ccm_formats::clouds_yaml::CloudEntry;

/// Asset id.
pub const ID: AssetId = "cloud-access";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<CloudAccess> = Key::new(ID);

/// The loaded access, one variant per platform that needs one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "platform", content = "access", rename_all = "lowercase")]
pub enum CloudAccess {
    /// No platform input (the platform needs none, or `graph` only describes the structure).
    #[default]
    None,
    /// The clouds.yaml entry named by `platform.openstack.cloud`, with its CA.
    OpenStack(Box<Cloud>),
    /// Long-lived AWS keys.
    Aws(AwsKeys),
    /// The Azure service principal (subscription and tenant at least).
    Azure(ServicePrincipal),
    /// A GCP service-account key.
    Gcp(ServiceAccount),
    /// The IBM Cloud account and API key (IBM Cloud and PowerVS).
    Ibm(IbmAccess),
}

/// The selected clouds.yaml entry, as the command loaded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cloud {
    /// The cloud's name in clouds.yaml.
    pub name: String,
    /// The entry, every key kept.
    pub entry: CloudEntry,
    /// The bytes of the `cacert` file, when the entry has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// The install-config's `additionalTrustBundle`, trusted by the lookups too (public
    /// certificates; the install-config is where it is written to the cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_bundle: Option<String>,
}

/// A long-lived access key pair: the only kind the in-cluster operators can keep using.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AwsKeys {
    /// `aws_access_key_id`; an identifier, not a secret.
    pub access_key_id: String,
    /// `aws_secret_access_key`; redacted in `Debug`.
    pub secret_access_key: Secret,
}

/// `~/.azure/osServicePrincipal.json` or the `AZURE_*` variables. The client ID and secret are
/// optional because `credentialsMode: Manual` needs only the subscription and tenant (for the
/// cloud config); [`ServicePrincipal::client`] requires them where the Secret is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePrincipal {
    /// The subscription the cluster lives in.
    pub subscription_id: String,
    /// The Entra ID tenant.
    pub tenant_id: String,
    /// The application (client) ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The client secret; redacted in `Debug`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
}

/// A service-account key file, kept whole (it is the Secret's content) and redacted in `Debug`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccount {
    /// The file's text, as read.
    pub json: Secret,
    /// `project_id`.
    pub project_id: String,
    /// `client_email`: the account's identity, not a secret.
    pub client_email: String,
}

/// What IBM Cloud and PowerVS need: the account the cloud config names, and the API key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IbmAccess {
    /// The account ID (`--ibm-account-id`, or the API key's account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// `IC_API_KEY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
}

impl CloudAccess {
    /// The OpenStack cloud, when that is the platform.
    pub fn openstack(&self) -> Option<&Cloud> {
        match self {
            CloudAccess::OpenStack(cloud) => Some(cloud),
            _ => None,
        }
    }
}

/// Carries the command's [`CloudAccess`] into the graph.
#[derive(Debug)]
pub struct CloudAccessAsset {
    access: CloudAccess,
}

impl CloudAccessAsset {
    /// Wraps what the command loaded.
    pub fn new(access: CloudAccess) -> CloudAccessAsset {
        CloudAccessAsset { access }
    }
}

impl Asset for CloudAccessAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Access"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        Output::new(&self.access)
    }
}

/// What a platform's loader may read to reach its cloud (each platform's `access` module).
#[derive(Debug, Clone, Copy)]
pub struct AccessRequest<'a> {
    /// The validated install-config.
    pub config: &'a InstallConfig,
    /// The environment of the run.
    pub env: &'a Env,
    /// `--ibm-account-id`.
    pub ibm_account_id: Option<&'a str>,
    /// `--offline`: no cloud call (the IBM account cannot be looked up).
    pub offline: bool,
}

impl AccessRequest<'_> {
    /// `credentialsMode: Manual`: the credentials the cluster would get are optional.
    pub(crate) fn manual(&self) -> bool {
        self.config.credentials_mode == Some(CredentialsMode::Manual)
    }
}

/// What a platform loaded, and the input files (clouds.yaml) no asset may overwrite.
#[derive(Debug, Default)]
pub struct LoadedAccess {
    /// The access, as the `cloud-access` asset carries it.
    pub access: CloudAccess,
    /// Input files that may lie inside the asset directory.
    pub inputs: Vec<PathBuf>,
}

/// Reads `path`, or `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    crate::files::if_exists(std::fs::read_to_string(path))
        .with_context(|| format!("could not read {}", path.display()))
}

/// `rel` under `$HOME`, when HOME is set.
pub(crate) fn home_file(env: &Env, rel: &str) -> Option<PathBuf> {
    env.home.as_ref().map(|home| home.join(rel))
}
