//! What Nutanix contributes: the cloud.conf JSON, the Prism Central credentials and the
//! Infrastructure, all from `platform.nutanix`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::go_json::{go_html_escape, go_json_indented};
use crate::assets::provider::{
    CcmSpec, CloudProviderConfig, Context, Provider, SecretData, SecretMount, Syntax,
};
use crate::graph::AssetError;
use crate::installconfig::{InstallConfig, LoadBalancerType, NutanixPlatform, PrismEndpoint};

/// Nutanix's [`Provider`]: the JSON config naming `nutanix-credentials`, the upstream Nutanix
/// CCM reading that Secret through the API in its own namespace.
#[derive(Debug)]
pub struct Nutanix;

impl Provider for Nutanix {
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let config = cloud_config(ctx.config, ctx.infra_id);
        Ok(Some(CloudProviderConfig { config, ca_bundle: None }))
    }

    fn syntax(&self) -> Syntax {
        Syntax::Json
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(SECRET_NAME)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        Ok(secret_data(ctx.config))
    }

    fn in_cluster_secret(&self, data: &SecretData) -> SecretData {
        data.clone()
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec {
            secret: Some(SecretMount { name: SECRET_NAME, dir: None, keys: &["credentials"] }),
            ..CcmSpec::upstream(
                "nutanix-cloud-controller-manager",
                "/bin/nutanix-cloud-controller-manager",
                "nutanix",
            )
        })
    }

    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        config.platform.nutanix.as_ref()?;
        Some(infrastructure(config))
    }
}

#[cfg(test)]
mod tests;

/// The Secret holding the Prism Central credentials (the cloud config's `credentialRef`).
pub const SECRET_NAME: &str = "nutanix-credentials";

/// The namespace the cloud config's `credentialRef` points at.
pub const CREDENTIALS_REF_NAMESPACE: &str = "openshift-cloud-controller-manager";

fn platform(config: &InstallConfig) -> NutanixPlatform {
    config.platform.nutanix.clone().unwrap_or_default()
}

/// The cloud provider config, field for field as the installer's `CloudConfig` struct.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CloudConfig<'a> {
    prism_central: CentralEndpoint<'a>,
    topology_discovery: TopologyDiscovery,
    enable_custom_labeling: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CentralEndpoint<'a> {
    address: &'a str,
    port: i32,
    credential_ref: CredentialRef,
}

#[derive(Serialize)]
struct CredentialRef {
    kind: &'static str,
    name: &'static str,
    namespace: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopologyDiscovery {
    #[serde(rename = "type")]
    kind: &'static str,
    /// Always `null`: discovery goes through Prism, not categories.
    topology_categories: Option<()>,
}

/// ConfigMap `openshift-config/cloud-provider-config` key `config`: tab-indented JSON with a
/// trailing newline, as the installer's `json.Encoder` writes it. An unset port is written as
/// Go's zero value, 0. `infra_id` is unused on Nutanix; it is taken so every platform's
/// `cloud_config` has the same shape.
pub fn cloud_config(config: &InstallConfig, _infra_id: &str) -> String {
    let nutanix = platform(config);
    let endpoint = &nutanix.prism_central.endpoint;
    go_json_indented(&CloudConfig {
        prism_central: CentralEndpoint {
            address: &endpoint.address,
            port: endpoint.port.unwrap_or(0),
            credential_ref: CredentialRef {
                kind: "Secret",
                name: SECRET_NAME,
                namespace: CREDENTIALS_REF_NAMESPACE,
            },
        },
        topology_discovery: TopologyDiscovery { kind: "Prism", topology_categories: None },
        enable_custom_labeling: true,
    })
}

/// One entry of the credentials list, as prism-go-client's `Credential` type.
#[derive(Serialize)]
struct Credential<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    data: BasicAuth<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BasicAuth<'a> {
    prism_central: UserPassword<'a>,
    /// Always `null`: Prism Elements are reached through Prism Central.
    prism_elements: Option<()>,
}

#[derive(Serialize)]
struct UserPassword<'a> {
    username: &'a str,
    password: &'a str,
}

/// The installer's credentials JSON: one `basic_auth` entry with the Prism Central user and
/// password and no Prism Element credentials, compact, as Go's `json.Marshal` writes it.
pub fn credentials_json(config: &InstallConfig) -> String {
    let central = platform(config).prism_central;
    let credentials = [Credential {
        kind: "basic_auth",
        data: BasicAuth {
            prism_central: UserPassword {
                username: &central.username,
                password: central.password.expose(),
            },
            prism_elements: None,
        },
    }];
    let text = serde_json::to_string(&credentials).expect("structs of strings serialize");
    go_html_escape(&text)
}

/// The plaintext data of the `nutanix-credentials` Secret: key `credentials`.
pub fn secret_data(config: &InstallConfig) -> BTreeMap<String, String> {
    BTreeMap::from([("credentials".to_owned(), credentials_json(config))])
}

fn endpoint(endpoint: &PrismEndpoint) -> Value {
    json!({"address": endpoint.address, "port": endpoint.port.unwrap_or(0)})
}

/// `spec.platformSpec.nutanix` and `status.platformStatus.nutanix`, as the installer writes
/// them. The status is `Value::Null` (leave the key out) without API VIPs.
///
/// The spec names the first Prism Element by its `name`. When it is unset the installer asks
/// Prism Central for it; this function has no I/O, so it writes `""` and the caller must look
/// the name up (or require it) first.
pub fn infrastructure(config: &InstallConfig) -> (Value, Value) {
    let nutanix = platform(config);
    let elements: Vec<Value> = nutanix
        .prism_elements
        .first()
        .map(|pe| json!({"endpoint": endpoint(&pe.endpoint), "name": pe.name.clone().unwrap_or_default()}))
        .into_iter()
        .collect();
    let spec = json!({
        "prismCentral": endpoint(&nutanix.prism_central.endpoint),
        "prismElements": elements,
        "failureDomains": failure_domains(nutanix.failure_domains.as_ref()),
    });
    let (Some(api), Some(ingress)) = (nutanix.api_vips.first(), nutanix.ingress_vips.first())
    else {
        return (spec, Value::Null);
    };
    let load_balancer = nutanix.load_balancer.as_ref().and_then(|lb| lb.kind.clone());
    let load_balancer = load_balancer.unwrap_or(LoadBalancerType::OpenShiftManagedDefault);
    let status = json!({
        "apiServerInternalIP": api,
        "apiServerInternalIPs": nutanix.api_vips,
        "ingressIP": ingress,
        "ingressIPs": nutanix.ingress_vips,
        "loadBalancer": {"type": load_balancer.as_str()},
    });
    (spec, status)
}

/// `platform.nutanix.failureDomains` as Infrastructure failure domains: the Prism Element and
/// the subnets, each identified by UUID.
fn failure_domains(domains: Option<&Value>) -> Vec<Value> {
    let domains = domains.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let uuid = |uuid: Option<&Value>| json!({"type": "UUID", "uuid": uuid.cloned().unwrap_or_else(|| Value::from(""))});
    domains
        .iter()
        .map(|domain| {
            let subnets = domain.get("subnetUUIDs").and_then(Value::as_array);
            let subnets: Vec<Value> =
                subnets.into_iter().flatten().map(|s| uuid(Some(s))).collect();
            json!({
                "name": domain.get("name").cloned().unwrap_or_else(|| Value::from("")),
                "cluster": uuid(domain.get("prismElement").and_then(|pe| pe.get("uuid"))),
                "subnets": subnets,
            })
        })
        .collect()
}
