//! Where `create manifests` finds the GCP service account: `GOOGLE_APPLICATION_CREDENTIALS`,
//! else `~/.gcp/osServiceAccount.json` (I/O, kept out of the pure GCP asset code).

use anyhow::Context as _;

use crate::assets::cloud_access::{
    AccessRequest, CloudAccess, LoadedAccess, ServiceAccount, home_file, read_optional,
};
use crate::assets::env::Env;

/// The GCP service-account key the cluster gets.
pub(crate) fn load(req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
    let access = gcp_account(req.env, req.manual())?.map_or(CloudAccess::None, CloudAccess::Gcp);
    Ok(LoadedAccess { access, inputs: Vec::new() })
}

/// `GOOGLE_APPLICATION_CREDENTIALS`, else `~/.gcp/osServiceAccount.json`.
fn gcp_account(env: &Env, manual: bool) -> anyhow::Result<Option<ServiceAccount>> {
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
            let account = super::from_file(&text).with_context(|| path.display().to_string())?;
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
