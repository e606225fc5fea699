//! What AWS contributes: cloud.conf, the ISO-region CA bundle, static keys and the Infrastructure.
//!
//! Pure functions: the CLI reads `~/.aws/credentials` and the `AWS_*` variables and passes
//! their text in.

mod access;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::platform_blocks::dns_type;
use crate::assets::cloud_access::{AccessRequest, AwsKeys, CloudAccess, LoadedAccess};
use crate::assets::provider::{
    CcmSpec, CloudProviderConfig, Context, Provider, SecretData, Syntax,
};
use crate::graph::AssetError;
use crate::installconfig::{AwsPlatform, InstallConfig, IpFamily, Secret};

/// AWS's [`Provider`]: `[Global]` (+ dual stack), `aws-creds`, the upstream AWS CCM, which
/// uses the control-plane instances' IAM role (no in-cluster Secret).
#[derive(Debug)]
pub struct Aws;

impl Provider for Aws {
    fn load_access(&self, req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        access::load(req)
    }
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let config = cloud_config(ctx.config, ctx.infra_id);
        Ok(Some(CloudProviderConfig { config, ca_bundle: ca_bundle(ctx.config) }))
    }

    fn syntax(&self) -> Syntax {
        Syntax::Gcfg
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(SECRET_NAME)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        match ctx.access {
            CloudAccess::Aws(keys) => Ok(secret_data(keys)),
            _ => Err("no AWS credentials were loaded".into()),
        }
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec::upstream(
            "aws-cloud-controller-manager",
            "/bin/aws-cloud-controller-manager",
            "aws",
        ))
    }

    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        config.platform.aws.as_ref()?;
        Some(infrastructure(config))
    }
}

#[cfg(test)]
mod tests;

/// The kube-system Secret holding the cluster's AWS keys.
pub const SECRET_NAME: &str = "aws-creds";

/// The profile used when `AWS_PROFILE` is unset.
pub const DEFAULT_PROFILE: &str = "default";

/// An error reading AWS credentials. No message ever carries a key's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `AWS_SESSION_TOKEN` is set: the keys are temporary.
    #[error(
        "AWS_SESSION_TOKEN is set: the cluster needs long-lived keys, because the in-cluster \
         operators keep using them after a session token expires; unset AWS_SESSION_TOKEN and \
         set an IAM user's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )]
    SessionTokenInEnv,
    /// One of the two key variables is set without the other.
    #[error("{set} is set but {missing} is not: set both, or neither to use the credentials file")]
    IncompleteEnv {
        /// The variable that is set.
        set: &'static str,
        /// The variable that is missing.
        missing: &'static str,
    },
    /// The profile has `aws_session_token`: the keys are temporary.
    #[error(
        "profile {profile:?}: aws_session_token is set: the cluster needs long-lived keys, \
         because the in-cluster operators keep using them after a session token expires; use \
         an IAM user's aws_access_key_id and aws_secret_access_key without a session token"
    )]
    SessionTokenInProfile {
        /// The profile.
        profile: String,
    },
    /// The profile has no `[profile]` section.
    #[error("profile {profile:?} not found")]
    ProfileNotFound {
        /// The profile.
        profile: String,
    },
    /// The profile lacks a key (an SSO or `credential_process` profile, say).
    #[error(
        "profile {profile:?}: {key} is missing or empty: only static access keys \
         (aws_access_key_id and aws_secret_access_key) are supported"
    )]
    MissingKey {
        /// The profile.
        profile: String,
        /// `aws_access_key_id` or `aws_secret_access_key`.
        key: &'static str,
    },
    /// A line is neither a section, a `key = value` pair nor a comment.
    #[error("line {line}: expected a [profile] header, a key = value line or a comment")]
    Syntax {
        /// 1-based line number (the line itself may hold a secret, so it is not quoted).
        line: usize,
    },
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

const ACCESS_KEY_ID: &str = "aws_access_key_id";
const SECRET_ACCESS_KEY: &str = "aws_secret_access_key";
const SESSION_TOKEN: &str = "aws_session_token";

fn platform(config: &InstallConfig) -> AwsPlatform {
    config.platform.aws.clone().unwrap_or_default()
}

/// ConfigMap `openshift-config/cloud-provider-config` key `config`: `[Global]`, plus
/// `NodeIPFamilies` in primary-first order on dual stack. `infra_id` is unused on AWS; it is
/// taken so every platform's `cloud_config` has the same shape.
pub fn cloud_config(config: &InstallConfig, _infra_id: &str) -> String {
    let mut text = String::from("[Global]\n");
    let families: &[&str] = match platform(config).ip_family {
        Some(IpFamily::DualStackIpv4Primary) => &["ipv4", "ipv6"],
        Some(IpFamily::DualStackIpv6Primary) => &["ipv6", "ipv4"],
        _ => &[],
    };
    for family in families {
        text.push_str("NodeIPFamilies=");
        text.push_str(family);
        text.push('\n');
    }
    text
}

/// Key `ca-bundle.pem` of the same ConfigMap: `additionalTrustBundle`, only in the secret
/// (ISO) regions, whose endpoints use a private CA.
pub fn ca_bundle(config: &InstallConfig) -> Option<String> {
    let bundle = config.additional_trust_bundle.as_deref().filter(|b| !b.is_empty())?;
    is_secret_region(&platform(config).region).then(|| bundle.to_owned())
}

/// The installer's `IsSecretRegion`: the `aws-iso` (`us-iso-<word>-<n>`) and `aws-iso-b`
/// (`us-isob-<word>-<n>`) partitions.
pub fn is_secret_region(region: &str) -> bool {
    let Some(rest) = region.strip_prefix("us-iso-").or_else(|| region.strip_prefix("us-isob-"))
    else {
        return false;
    };
    let Some((word, number)) = rest.rsplit_once('-') else { return false };
    !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
}

/// Keys from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`; `None` when neither is set (empty
/// counts as unset), so the caller falls back to the credentials file.
pub fn keys_from_env(
    access_key_id: Option<&str>,
    secret: Option<&str>,
    session_token: Option<&str>,
) -> Result<Option<AwsKeys>> {
    if set(session_token).is_some() {
        return Err(Error::SessionTokenInEnv);
    }
    match (set(access_key_id), set(secret)) {
        (None, None) => Ok(None),
        (Some(id), Some(secret)) => Ok(Some(AwsKeys {
            access_key_id: id.to_owned(),
            secret_access_key: Secret::new(secret),
        })),
        (Some(_), None) => {
            Err(Error::IncompleteEnv { set: "AWS_ACCESS_KEY_ID", missing: "AWS_SECRET_ACCESS_KEY" })
        }
        (None, Some(_)) => {
            Err(Error::IncompleteEnv { set: "AWS_SECRET_ACCESS_KEY", missing: "AWS_ACCESS_KEY_ID" })
        }
    }
}

/// `None` and `""` both mean unset, as for the AWS SDKs.
fn set(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

/// Keys of `profile` in the text of a shared credentials file (`~/.aws/credentials`).
///
/// INI as the AWS CLI reads it: `[name]` sections, `key = value` (or `key: value`), whole-line
/// `#`/`;` comments, indented lines continuing a nested value (ignored here). Key names are
/// case-insensitive; a repeated key keeps its last value.
pub fn keys_from_shared_file(text: &str, profile: &str) -> Result<AwsKeys> {
    let entries = profile_entries(text, profile)?
        .ok_or_else(|| Error::ProfileNotFound { profile: profile.to_owned() })?;
    let get = |key: &str| entries.get(key).map(String::as_str).filter(|v| !v.is_empty());
    if get(SESSION_TOKEN).is_some() {
        return Err(Error::SessionTokenInProfile { profile: profile.to_owned() });
    }
    let missing = |key| Error::MissingKey { profile: profile.to_owned(), key };
    let id = get(ACCESS_KEY_ID).ok_or_else(|| missing(ACCESS_KEY_ID))?;
    let secret = get(SECRET_ACCESS_KEY).ok_or_else(|| missing(SECRET_ACCESS_KEY))?;
    Ok(AwsKeys { access_key_id: id.to_owned(), secret_access_key: Secret::new(secret) })
}

/// The lower-cased keys and values of `[profile]` (all its sections merged), or `None`.
fn profile_entries(text: &str, profile: &str) -> Result<Option<BTreeMap<String, String>>> {
    let mut found: Option<BTreeMap<String, String>> = None;
    let mut in_profile = false;
    let mut in_section = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) && in_section {
            continue; // A continuation line of a nested value (`s3 =` then indented pairs).
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            in_section = true;
            in_profile = name.trim() == profile;
            if in_profile {
                found.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(['=', ':']).filter(|_| in_section) else {
            return Err(Error::Syntax { line: index + 1 });
        };
        if in_profile && let Some(entries) = found.as_mut() {
            entries.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    Ok(found)
}

/// The plaintext data of the kube-system `aws-creds` Secret.
pub fn secret_data(keys: &AwsKeys) -> BTreeMap<String, String> {
    BTreeMap::from([
        (ACCESS_KEY_ID.to_owned(), keys.access_key_id.clone()),
        (SECRET_ACCESS_KEY.to_owned(), keys.secret_access_key.expose().to_owned()),
    ])
}

/// `spec.platformSpec.aws` and `status.platformStatus.aws`, as the installer writes them:
/// endpoints in input order in the spec and sorted by name in the status; `resourceTags`
/// (sorted by key) only with `propagateUserTags`; `ipFamily` defaulting to `IPv4`.
pub fn infrastructure(config: &InstallConfig) -> (Value, Value) {
    let aws = platform(config);
    let endpoints: Vec<Value> =
        aws.service_endpoints.iter().map(|e| json!({"name": e.name, "url": e.url})).collect();
    let mut spec = json!({});
    if !endpoints.is_empty() {
        spec["serviceEndpoints"] = Value::from(endpoints.clone());
    }
    let family = aws.ip_family.as_ref().map_or("IPv4", IpFamily::as_str);
    let family = if family.is_empty() { "IPv4" } else { family };
    let mut status = json!({
        "region": aws.region,
        "cloudLoadBalancerConfig": {"dnsType": dns_type(aws.user_provisioned_dns.as_deref())},
        "ipFamily": family,
    });
    if !endpoints.is_empty() {
        let mut sorted = aws.service_endpoints.clone();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        status["serviceEndpoints"] =
            sorted.iter().map(|e| json!({"name": e.name, "url": e.url})).collect();
    }
    if aws.propagate_user_tags == Some(true) && !aws.user_tags.is_empty() {
        // A BTreeMap, so sorted by key (the installer's order follows Go's map iteration).
        status["resourceTags"] =
            aws.user_tags.iter().map(|(k, v)| json!({"key": k, "value": v})).collect();
    }
    (spec, status)
}
