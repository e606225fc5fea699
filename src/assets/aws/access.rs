//! Where `create manifests` finds the AWS keys: the environment, else the shared credentials
//! file (I/O, kept out of the pure AWS asset code).

use anyhow::Context as _;

use crate::assets::cloud_access::{
    AccessRequest, AwsKeys, CloudAccess, LoadedAccess, home_file, read_optional,
};
use crate::assets::env::Env;

/// The AWS keys the cluster gets (none with `credentialsMode: Manual` and no keys found).
pub(crate) fn load(req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
    let access = aws_keys(req.env, req.manual())?.map_or(CloudAccess::None, CloudAccess::Aws);
    Ok(LoadedAccess { access, inputs: Vec::new() })
}

/// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, else the profile (`AWS_PROFILE`, `default`) of
/// `AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`.
fn aws_keys(env: &Env, manual: bool) -> anyhow::Result<Option<AwsKeys>> {
    let vars = &env.credentials;
    let from_env = super::keys_from_env(
        vars.aws_access_key_id.as_deref(),
        vars.aws_secret_access_key.as_ref().map(|s| s.expose()),
        vars.aws_session_token.as_ref().map(|s| s.expose()),
    )?;
    if let Some(keys) = from_env {
        tracing::info!("Loaded AWS credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY");
        return Ok(Some(keys));
    }
    let profile = vars.aws_profile.as_deref().unwrap_or(super::DEFAULT_PROFILE);
    let file =
        vars.aws_shared_credentials_file.clone().or_else(|| home_file(env, ".aws/credentials"));
    let text = match &file {
        Some(path) => read_optional(path)?,
        None => None,
    };
    match (text, file) {
        (Some(text), Some(path)) => {
            let keys = super::keys_from_shared_file(&text, profile)
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
