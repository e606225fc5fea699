//! Where `create manifests` finds the Azure service principal: the `AZURE_*` variables, else
//! `~/.azure/osServicePrincipal.json` (I/O, kept out of the pure Azure asset code).

use anyhow::Context as _;

use crate::assets::cloud_access::{
    AccessRequest, CloudAccess, LoadedAccess, ServicePrincipal, home_file, read_optional,
};
use crate::assets::env::Env;

/// The Azure service principal (the subscription and tenant are always needed).
pub(crate) fn load(req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
    let access = CloudAccess::Azure(azure_principal(req.env, req.manual())?);
    Ok(LoadedAccess { access, inputs: Vec::new() })
}

/// `AZURE_*`, else `~/.azure/osServicePrincipal.json`. The subscription and tenant are always
/// needed (the cloud config names them); the client only when the cluster gets credentials.
fn azure_principal(env: &Env, manual: bool) -> anyhow::Result<ServicePrincipal> {
    let vars = &env.credentials;
    let from_env = super::from_env(
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
            let principal = super::from_file(&text).with_context(|| path.display().to_string())?;
            (principal, path.display().to_string())
        }
    };
    if !manual {
        principal.client().with_context(|| source.clone())?;
    }
    tracing::info!("Loaded Azure credentials from {source}");
    Ok(principal)
}
