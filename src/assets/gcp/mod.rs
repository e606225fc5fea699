//! What GCP contributes: the gcfg cloud.conf, the ingress UID, the service account and the
//! Infrastructure.
//!
//! Pure functions: the CLI reads the service-account file (`GOOGLE_APPLICATION_CREDENTIALS` or
//! `~/.gcp/osServiceAccount.json`) and passes its text in.

mod access;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use md5::{Digest as _, Md5};
use serde_json::{Map, Value, json};

use super::platform_blocks::dns_type;
use crate::assets::cloud_access::{AccessRequest, CloudAccess, LoadedAccess, ServiceAccount};
use crate::assets::provider::{
    CcmSpec, CloudProviderConfig, Context, Provider, SecretData, Syntax,
};
use crate::graph::AssetError;
use crate::graph::File;
use crate::installconfig::{GcpPlatform, GcpService, InstallConfig, Secret};
use ccm_formats::yaml::to_yaml;

/// GCP's [`Provider`]: the gcfg cloud config and `kube-system/ingress-uid`, `gcp-credentials`,
/// the upstream GCE CCM, which uses the control-plane instances' service account.
#[derive(Debug)]
pub struct Gcp;

impl Provider for Gcp {
    fn load_access(&self, req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        access::load(req)
    }
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let config = cloud_config(ctx.config, ctx.infra_id);
        Ok(Some(CloudProviderConfig { config, ca_bundle: None }))
    }

    fn extra_manifests(&self, ctx: &Context<'_>) -> Result<Vec<File>, AssetError> {
        Ok(vec![File::new(INGRESS_UID_PATH, to_yaml(&ingress_uid_config_map(ctx.infra_id))?)])
    }

    fn syntax(&self) -> Syntax {
        Syntax::Gcfg
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(SECRET_NAME)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        match ctx.access {
            CloudAccess::Gcp(account) => Ok(secret_data(account)),
            _ => Err("no GCP service account was loaded".into()),
        }
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec::upstream(
            "gcp-cloud-controller-manager",
            "/bin/gcp-cloud-controller-manager",
            "gce",
        ))
    }

    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        config.platform.gcp.as_ref()?;
        Some(infrastructure(config))
    }
}

#[cfg(test)]
mod tests;

/// The kube-system Secret holding the service account.
pub const SECRET_NAME: &str = "gcp-credentials";

/// The file holding the `kube-system/ingress-uid` ConfigMap (the installer's name).
pub const INGRESS_UID_PATH: &str = "manifests/cloud-controller-uid-config.yml";

/// An error reading a service-account file. No message ever carries a value from it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not JSON.
    #[error("the service account file is not valid JSON")]
    Json(#[source] serde_json::Error),
    /// The JSON is not an object.
    #[error("the service account file must hold a JSON object")]
    NotAnObject,
    /// A required field is absent or empty.
    #[error(
        "the service account file has no {field}: a service-account key \
         (\"type\": \"service_account\") is required"
    )]
    MissingField {
        /// `type`, `project_id`, `private_key` or `client_email`.
        field: &'static str,
    },
    /// A required field holds something other than a string.
    #[error("the service account file's {field} must be a string")]
    NotAString {
        /// The field.
        field: &'static str,
    },
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that `text` is a JSON object with non-empty string `type`, `project_id`,
/// `private_key` and `client_email`, and keeps it whole.
pub fn from_file(text: &str) -> Result<ServiceAccount> {
    // Through `Value` so that a type error never echoes a value (the private key).
    let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
    let object = value.as_object().ok_or(Error::NotAnObject)?;
    let field = |field: &'static str| match object.get(field) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        None | Some(Value::Null | Value::String(_)) => Err(Error::MissingField { field }),
        Some(_) => Err(Error::NotAString { field }),
    };
    field("type")?;
    let project_id = field("project_id")?;
    field("private_key")?;
    let client_email = field("client_email")?;
    Ok(ServiceAccount { json: Secret::new(text), project_id, client_email })
}

/// The plaintext data of the kube-system `gcp-credentials` Secret.
pub fn secret_data(account: &ServiceAccount) -> BTreeMap<String, String> {
    BTreeMap::from([("service_account.json".to_owned(), account.json.expose().to_owned())])
}

fn platform(config: &InstallConfig) -> GcpPlatform {
    config.platform.gcp.clone().unwrap_or_default()
}

/// The override for `service` (matched ignoring case, see [`GcpService`]).
fn endpoint(gcp: &GcpPlatform, service: GcpService) -> Option<&str> {
    let found = gcp.service_endpoints.iter().find(|e| e.is_for(service.as_str()));
    found.map(|e| e.url.as_str()).filter(|url| !url.is_empty())
}

/// ConfigMap `openshift-config/cloud-provider-config` key `config`, in the installer's
/// template layout (values unquoted, aligned `=`), ending with an empty line.
/// `network-project-id`, `api-endpoint` (service endpoint `compute`) and
/// `container-api-endpoint` (service endpoint `container`) appear only when set.
pub fn cloud_config(config: &InstallConfig, infra_id: &str) -> String {
    let gcp = platform(config);
    let subnet = gcp.compute_subnet.clone().filter(|s| !s.is_empty());
    let subnet = subnet.unwrap_or_else(|| format!("{infra_id}-worker-subnet"));
    let mut text = format!(
        "[global]\nproject-id      = {}\nregional        = true\nmultizone       = true\n",
        gcp.project_id
    );
    for role in ["master", "control-plane", "worker"] {
        let _ = writeln!(text, "node-tags       = {infra_id}-{role}");
    }
    let _ = writeln!(text, "node-instance-prefix = {infra_id}");
    let _ = writeln!(text, "external-instance-groups-prefix = {infra_id}");
    let _ = writeln!(text, "subnetwork-name = {subnet}");
    let optional = [
        ("network-project-id", gcp.network_project_id.as_deref().filter(|p| !p.is_empty())),
        ("api-endpoint", endpoint(&gcp, GcpService::Compute)),
        ("container-api-endpoint", endpoint(&gcp, GcpService::Container)),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            let _ = writeln!(text, "{key} = {value}");
        }
    }
    text.push('\n');
    text
}

/// The UID the GCP cloud provider names load-balancer resources with: the first 16 hex
/// characters of md5(infraID), as the installer's `CloudControllerUID` computes it.
pub fn ingress_uid(infra_id: &str) -> String {
    let mut uid = hex::encode(Md5::digest(infra_id.as_bytes()));
    uid.truncate(16);
    uid
}

/// ConfigMap `kube-system/ingress-uid` ([`INGRESS_UID_PATH`]), keys `uid` and `provider-uid`.
pub fn ingress_uid_config_map(infra_id: &str) -> Value {
    let uid = ingress_uid(infra_id);
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ingress-uid", "namespace": "kube-system"},
        "data": {"uid": uid, "provider-uid": uid},
    })
}

/// `spec.platformSpec.gcp` (`Value::Null`: the installer writes no spec block, so the caller
/// leaves the key out) and `status.platformStatus.gcp`: project, region, `resourceLabels` from
/// `userLabels`, `resourceTags` from `userTags`, and the DNS type.
pub fn infrastructure(config: &InstallConfig) -> (Value, Value) {
    let gcp = platform(config);
    let mut status = json!({
        "projectID": gcp.project_id,
        "region": gcp.region,
        "cloudLoadBalancerConfig": {"dnsType": dns_type(gcp.user_provisioned_dns.as_deref())},
    });
    let labels = pick(gcp.user_labels.as_ref(), &["key", "value"]);
    if !labels.is_empty() {
        status["resourceLabels"] = Value::from(labels);
    }
    let tags = pick(gcp.user_tags.as_ref(), &["parentID", "key", "value"]);
    if !tags.is_empty() {
        status["resourceTags"] = Value::from(tags);
    }
    (Value::Null, status)
}

/// Each entry of a list of objects, reduced to `fields` (missing ones as `""`), in order.
fn pick(list: Option<&Value>, fields: &[&str]) -> Vec<Value> {
    let entries = list.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    entries
        .iter()
        .map(|entry| {
            let field = |name: &str| entry.get(name).cloned().unwrap_or_else(|| Value::from(""));
            Value::Object(fields.iter().map(|f| ((*f).to_owned(), field(f))).collect::<Map<_, _>>())
        })
        .collect()
}
