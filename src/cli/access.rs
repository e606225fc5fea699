//! What `create manifests` loads to reach the cloud, per platform: the OpenStack cloud from
//! clouds.yaml, AWS keys, the Azure service principal, the GCP service account, the IBM Cloud
//! API key and account.
//!
//! Each source is tried in the order the installer uses; with `credentialsMode: Manual` the
//! credentials the cluster would receive are optional (only what the cloud config itself names
//! is still required: Azure's subscription and tenant, the IBM account).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::resolve::{self, Env};
use crate::assets::cloud_access::{CloudAccess, IbmAccess};
use crate::assets::ibmcloud::iam;
use crate::assets::{aws, azure, gcp};
use crate::installconfig::{CredentialsMode, InstallConfig, ServiceEndpoint, clouds};

/// What the command line adds to the environment for the IBM clouds.
#[derive(Debug, Clone, Default)]
pub(super) struct IbmOptions {
    /// `--ibm-account-id`.
    pub(super) account_id: Option<String>,
    /// `--offline`: no IAM call to find the account.
    pub(super) offline: bool,
}

/// The loaded access, and the input files an asset must never overwrite (clouds.yaml).
pub(super) fn load(
    config: &InstallConfig,
    env: &Env,
    ibm: &IbmOptions,
) -> anyhow::Result<(CloudAccess, Vec<PathBuf>)> {
    let manual = config.credentials_mode == Some(CredentialsMode::Manual);
    let p = &config.platform;
    let access = if let Some(openstack) = &p.openstack {
        let selected = clouds::load(&clouds::search_paths(&env.clouds_search()), &openstack.cloud)?;
        tracing::info!("Loaded cloud {:?} from {}", selected.name, selected.file.display());
        let file = selected.file.clone();
        return Ok((CloudAccess::OpenStack(Box::new(resolve::cloud(selected)?)), vec![file]));
    } else if p.aws.is_some() {
        aws_keys(env, manual)?.map_or(CloudAccess::None, CloudAccess::Aws)
    } else if p.azure.is_some() {
        CloudAccess::Azure(azure_principal(env, manual)?)
    } else if p.gcp.is_some() {
        gcp_account(env, manual)?.map_or(CloudAccess::None, CloudAccess::Gcp)
    } else if let Some(ibmcloud) = &p.ibmcloud {
        CloudAccess::Ibm(ibm_access(env, ibm, &ibmcloud.service_endpoints)?)
    } else if let Some(powervs) = &p.powervs {
        CloudAccess::Ibm(ibm_access(env, ibm, &powervs.service_endpoints)?)
    } else {
        CloudAccess::None
    };
    Ok((access, Vec::new()))
}

/// Reads `path`, or `None` when it does not exist.
fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    crate::files::if_exists(std::fs::read_to_string(path))
        .with_context(|| format!("could not read {}", path.display()))
}

fn home_file(env: &Env, rel: &str) -> Option<PathBuf> {
    env.home.as_ref().map(|home| home.join(rel))
}

/// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, else the profile (`AWS_PROFILE`, `default`) of
/// `AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`.
fn aws_keys(env: &Env, manual: bool) -> anyhow::Result<Option<aws::AwsKeys>> {
    let vars = &env.credentials;
    let from_env = aws::keys_from_env(
        vars.aws_access_key_id.as_deref(),
        vars.aws_secret_access_key.as_ref().map(|s| s.expose()),
        vars.aws_session_token.as_ref().map(|s| s.expose()),
    )?;
    if let Some(keys) = from_env {
        tracing::info!("Loaded AWS credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
        return Ok(Some(keys));
    }
    let profile = vars.aws_profile.as_deref().unwrap_or(aws::DEFAULT_PROFILE);
    let file =
        vars.aws_shared_credentials_file.clone().or_else(|| home_file(env, ".aws/credentials"));
    let text = match &file {
        Some(path) => read_optional(path)?,
        None => None,
    };
    match (text, file) {
        (Some(text), Some(path)) => {
            let keys = aws::keys_from_shared_file(&text, profile)
                .with_context(|| path.display().to_string())?;
            tracing::info!("Loaded AWS credentials (profile {profile:?}) from {}", path.display());
            Ok(Some(keys))
        }
        _ if manual => Ok(None),
        (_, path) => anyhow::bail!(
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or write \
             profile {profile:?} to {} (or set credentialsMode: Manual and provide them to the \
             cluster yourself)",
            path.map_or_else(|| "~/.aws/credentials".to_owned(), |p| p.display().to_string())
        ),
    }
}

/// `AZURE_*`, else `~/.azure/osServicePrincipal.json`. The subscription and tenant are always
/// needed (the cloud config names them); the client only when the cluster gets credentials.
fn azure_principal(env: &Env, manual: bool) -> anyhow::Result<azure::ServicePrincipal> {
    let vars = &env.credentials;
    let from_env = azure::from_env(
        vars.azure_subscription_id.as_deref(),
        vars.azure_tenant_id.as_deref(),
        vars.azure_client_id.as_deref(),
        vars.azure_client_secret.as_ref().map(|s| s.expose()),
    )?;
    let (principal, source) = match from_env {
        Some(principal) => (principal, "the AZURE_* variables".to_owned()),
        None => {
            let path = home_file(env, ".azure/osServicePrincipal.json")
                .context("no Azure credentials: HOME is unset and no AZURE_* variable is set")?;
            let text = read_optional(&path)?.with_context(|| {
                format!(
                    "no Azure credentials: set AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID, \
                     AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or write {}",
                    path.display()
                )
            })?;
            let principal = azure::from_file(&text).with_context(|| path.display().to_string())?;
            (principal, path.display().to_string())
        }
    };
    if !manual {
        principal.client().with_context(|| source.clone())?;
    }
    tracing::info!("Loaded Azure credentials from {source}");
    Ok(principal)
}

/// `GOOGLE_APPLICATION_CREDENTIALS`, else `~/.gcp/osServiceAccount.json`.
fn gcp_account(env: &Env, manual: bool) -> anyhow::Result<Option<gcp::ServiceAccount>> {
    let path = env
        .credentials
        .google_application_credentials
        .clone()
        .or_else(|| home_file(env, ".gcp/osServiceAccount.json"));
    let text = match &path {
        Some(path) => read_optional(path)?,
        None => None,
    };
    match (text, path) {
        (Some(text), Some(path)) => {
            let account = gcp::from_file(&text).with_context(|| path.display().to_string())?;
            tracing::info!("Loaded GCP service account from {}", path.display());
            Ok(Some(account))
        }
        _ if manual => Ok(None),
        (_, path) => anyhow::bail!(
            "no GCP credentials: set GOOGLE_APPLICATION_CREDENTIALS to a service-account key \
             file, or write one to {} (or set credentialsMode: Manual)",
            path.map_or_else(
                || "~/.gcp/osServiceAccount.json".to_owned(),
                |p| p.display().to_string()
            )
        ),
    }
}

/// `IC_API_KEY` and the account: `--ibm-account-id`, else the key's own account, asked of IAM
/// (the `IAM` service endpoint, else the public one).
fn ibm_access(
    env: &Env,
    ibm: &IbmOptions,
    endpoints: &[ServiceEndpoint],
) -> anyhow::Result<IbmAccess> {
    let api_key = env.credentials.ic_api_key.clone();
    if let Some(account_id) = &ibm.account_id {
        return Ok(IbmAccess { account_id: Some(account_id.clone()), api_key });
    }
    if ibm.offline {
        anyhow::bail!(
            "--offline: the IBM Cloud account cannot be looked up from the API key; give it with \
             --ibm-account-id"
        );
    }
    let Some(key) = &api_key else {
        anyhow::bail!(
            "IC_API_KEY is not set: it is needed to look up the IBM Cloud account (or give the \
             account with --ibm-account-id)"
        );
    };
    let endpoint = iam::endpoint(endpoints);
    let account_id = iam::online::account_id(endpoint, key).with_context(|| {
        format!(
            "could not look up the IBM Cloud account of IC_API_KEY at {endpoint} (give it with \
             --ibm-account-id to skip the lookup)"
        )
    })?;
    tracing::info!("IBM Cloud account {account_id} (the account of IC_API_KEY, from {endpoint})");
    Ok(IbmAccess { account_id: Some(account_id), api_key })
}
