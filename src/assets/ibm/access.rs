//! The IBM Cloud API key and account for IBM Cloud and PowerVS: `IC_API_KEY`, and the account
//! from `--ibm-account-id` or asked of IAM (I/O, kept out of the pure IBM asset code).

use anyhow::Context as _;

use super::iam;
use crate::assets::cloud_access::{AccessRequest, CloudAccess, IbmAccess, LoadedAccess};
use crate::installconfig::ServiceEndpoint;

/// The IBM Cloud API key and account of IBM Cloud and PowerVS (`endpoints`: the platform's
/// service endpoints, which may name IAM).
pub(crate) fn load(
    req: &AccessRequest<'_>,
    endpoints: &[ServiceEndpoint],
) -> anyhow::Result<LoadedAccess> {
    let access = CloudAccess::Ibm(ibm_access(req, endpoints)?);
    Ok(LoadedAccess { access, inputs: Vec::new() })
}

/// `IC_API_KEY` and the account: `--ibm-account-id`, else the key's own account, asked of IAM
/// (the `IAM` service endpoint, else the public one).
fn ibm_access(req: &AccessRequest<'_>, endpoints: &[ServiceEndpoint]) -> anyhow::Result<IbmAccess> {
    let api_key = req.env.credentials.ic_api_key.clone();
    if let Some(account_id) = req.ibm_account_id {
        return Ok(IbmAccess { account_id: Some(account_id.to_owned()), api_key });
    }
    if req.offline {
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
    let trust = req.config.additional_trust_bundle.as_deref().filter(|b| !b.trim().is_empty());
    let account_id = iam::online::account_id(endpoint, key, trust).with_context(|| {
        format!(
            "could not look up the IBM Cloud account of IC_API_KEY at {endpoint} (give it with \
             --ibm-account-id to skip the lookup)"
        )
    })?;
    tracing::info!("IBM Cloud account {account_id} (the account of IC_API_KEY, from {endpoint})");
    Ok(IbmAccess { account_id: Some(account_id), api_key })
}
