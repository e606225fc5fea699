//! What Azure contributes: the cloud.conf JSON, the service principal and the Infrastructure.
//!
//! Pure functions: the CLI reads `~/.azure/osServicePrincipal.json` or the `AZURE_*` variables
//! and passes their text in.

mod access;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::go_json::go_json_indented;
use super::platform_blocks::dns_type;
use crate::assets::cloud_access::{AccessRequest, CloudAccess, LoadedAccess, ServicePrincipal};
use crate::assets::provider::{
    CcmSpec, CloudProviderConfig, Context, Provider, SecretData, SecretMount, Syntax,
};
use crate::graph::AssetError;
use crate::installconfig::{AzureCloudName, AzurePlatform, InstallConfig, Secret};

pub mod inject;
fn principal<'a>(ctx: &Context<'a>) -> Result<&'a ServicePrincipal, AssetError> {
    match ctx.access {
        CloudAccess::Azure(principal) => Ok(principal),
        _ => Err("no Azure service principal was loaded".into()),
    }
}

/// Azure's [`Provider`]: the JSON cloud config, `azure-credentials`, the upstream Azure CCM
/// with its `azure-cloud-node-manager` DaemonSet.
#[derive(Debug)]
pub struct Azure;

impl Provider for Azure {
    fn load_access(&self, req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        access::load(req)
    }
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let config = cloud_config(ctx.config, ctx.infra_id, principal(ctx)?);
        Ok(Some(CloudProviderConfig { config, ca_bundle: None }))
    }

    fn syntax(&self) -> Syntax {
        Syntax::Json
    }

    fn config_with_credentials(
        &self,
        config: &str,
        credentials: &SecretData,
    ) -> Result<String, AssetError> {
        Ok(inject::inject(config, credentials)?)
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(SECRET_NAME)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        Ok(secret_data(principal(ctx)?, ctx.config, ctx.infra_id)?)
    }

    /// Only what the CCM's init container merges into its config: the client ID and secret.
    fn in_cluster_secret(&self, data: &SecretData) -> SecretData {
        let keys = [inject::CLIENT_ID_KEY, inject::CLIENT_SECRET_KEY];
        data.iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec {
            secret: Some(SecretMount {
                name: "azure-cloud-credentials",
                dir: Some("/etc/azure/credentials"),
                keys: &[inject::CLIENT_ID_KEY, inject::CLIENT_SECRET_KEY],
            }),
            inject_credentials: true,
            node_manager: Some(("azure-cloud-node-manager", "/bin/azure-cloud-node-manager")),
            ..CcmSpec::upstream(
                "azure-cloud-controller-manager",
                "/bin/azure-cloud-controller-manager",
                "azure",
            )
        })
    }

    fn infrastructure(&self, config: &InstallConfig, infra_id: &str) -> Option<(Value, Value)> {
        config.platform.azure.as_ref()?;
        Some(infrastructure(config, infra_id))
    }
}

#[cfg(test)]
mod tests;

/// The kube-system Secret holding the cluster's Azure credentials.
pub const SECRET_NAME: &str = "azure-credentials";

/// An error reading the service principal. No message ever carries a value from the file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not JSON.
    #[error("the service principal file is not valid JSON")]
    Json(#[source] serde_json::Error),
    /// The JSON is not an object.
    #[error("the service principal file must hold a JSON object")]
    NotAnObject,
    /// A required field is absent or empty.
    #[error("the service principal file has no {field}")]
    MissingField {
        /// `subscriptionId` or `tenantId`.
        field: &'static str,
    },
    /// A field holds something other than a string.
    #[error("the service principal file's {field} must be a string")]
    NotAString {
        /// The field.
        field: &'static str,
    },
    /// Some `AZURE_*` variables are set, but not one that the others need.
    #[error("{set} is set but {missing} is not")]
    IncompleteEnv {
        /// A variable that is set.
        set: &'static str,
        /// The variable that is missing.
        missing: &'static str,
    },
    /// The client ID or secret is missing where the credentials Secret is written.
    #[error(
        "the service principal has no {field}: the {SECRET_NAME} Secret needs a client ID and \
         secret unless credentialsMode is Manual"
    )]
    MissingClient {
        /// `clientId (AZURE_CLIENT_ID)` or `clientSecret (AZURE_CLIENT_SECRET)`.
        field: &'static str,
    },
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Parses `osServicePrincipal.json`: `subscriptionId` and `tenantId` are required,
/// `clientId` and `clientSecret` optional; other keys are ignored.
pub fn from_file(text: &str) -> Result<ServicePrincipal> {
    // Through `Value` so that a type error never echoes a value (serde's "invalid type: string
    // \"...\"" would): only the field name is reported.
    let value: Value = serde_json::from_str(text).map_err(Error::Json)?;
    let object = value.as_object().ok_or(Error::NotAnObject)?;
    let field = |field: &'static str| match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone()).filter(|t| !t.is_empty())),
        Some(_) => Err(Error::NotAString { field }),
    };
    let required = |name| field(name)?.ok_or(Error::MissingField { field: name });
    Ok(ServicePrincipal {
        subscription_id: required("subscriptionId")?,
        tenant_id: required("tenantId")?,
        client_id: field("clientId")?,
        client_secret: field("clientSecret")?.map(Secret::new),
    })
}

/// From `AZURE_SUBSCRIPTION_ID`, `AZURE_TENANT_ID`, `AZURE_CLIENT_ID` and
/// `AZURE_CLIENT_SECRET`; `None` when none is set (empty counts as unset).
pub fn from_env(
    subscription_id: Option<&str>,
    tenant_id: Option<&str>,
    client_id: Option<&str>,
    client_secret: Option<&str>,
) -> Result<Option<ServicePrincipal>> {
    let vars = [
        ("AZURE_SUBSCRIPTION_ID", subscription_id),
        ("AZURE_TENANT_ID", tenant_id),
        ("AZURE_CLIENT_ID", client_id),
        ("AZURE_CLIENT_SECRET", client_secret),
    ]
    .map(|(name, value)| (name, value.filter(|v| !v.is_empty())));
    let Some(&(first_set, _)) = vars.iter().find(|(_, value)| value.is_some()) else {
        return Ok(None);
    };
    let [subscription, tenant, client_id, client_secret] = vars;
    for (missing, value) in [subscription, tenant] {
        if value.is_none() {
            return Err(Error::IncompleteEnv { set: first_set, missing });
        }
    }
    // The client ID and secret come together or not at all (Manual mode needs neither).
    match (client_id, client_secret) {
        ((set, Some(_)), (missing, None)) | ((missing, None), (set, Some(_))) => {
            return Err(Error::IncompleteEnv { set, missing });
        }
        _ => {}
    }
    Ok(Some(ServicePrincipal {
        subscription_id: subscription.1.unwrap_or_default().to_owned(),
        tenant_id: tenant.1.unwrap_or_default().to_owned(),
        client_id: client_id.1.map(str::to_owned),
        client_secret: client_secret.1.map(Secret::new),
    }))
}

impl ServicePrincipal {
    /// The client ID and secret, required unless `credentialsMode` is `Manual`.
    pub fn client(&self) -> Result<(&str, &Secret)> {
        let id = self.client_id.as_deref().filter(|id| !id.is_empty());
        let id = id.ok_or(Error::MissingClient { field: "clientId (AZURE_CLIENT_ID)" })?;
        let secret = self.client_secret.as_ref().filter(|s| !s.is_empty());
        let secret =
            secret.ok_or(Error::MissingClient { field: "clientSecret (AZURE_CLIENT_SECRET)" })?;
        Ok((id, secret))
    }
}

/// The plaintext data of the kube-system `azure-credentials` Secret; fails without a client
/// ID and secret.
pub fn secret_data(
    principal: &ServicePrincipal,
    config: &InstallConfig,
    infra_id: &str,
) -> Result<BTreeMap<String, String>> {
    let (client_id, client_secret) = principal.client()?;
    let azure = platform(config);
    Ok(BTreeMap::from([
        ("azure_subscription_id".to_owned(), principal.subscription_id.clone()),
        ("azure_client_id".to_owned(), client_id.to_owned()),
        ("azure_client_secret".to_owned(), client_secret.expose().to_owned()),
        ("azure_tenant_id".to_owned(), principal.tenant_id.clone()),
        ("azure_resource_prefix".to_owned(), infra_id.to_owned()),
        ("azure_resourcegroup".to_owned(), resource_group(&azure, infra_id)),
        ("azure_region".to_owned(), azure.region.clone()),
    ]))
}

fn platform(config: &InstallConfig) -> AzurePlatform {
    config.platform.azure.clone().unwrap_or_default()
}

/// `value` unless unset or empty, else `default`.
fn or(value: Option<&String>, default: impl FnOnce() -> String) -> String {
    value.filter(|v| !v.is_empty()).cloned().unwrap_or_else(default)
}

/// The cluster resource group: `resourceGroupName`, else `<infraID>-rg`.
fn resource_group(azure: &AzurePlatform, infra_id: &str) -> String {
    or(azure.resource_group_name.as_ref(), || format!("{infra_id}-rg"))
}

fn is_stack(azure: &AzurePlatform) -> bool {
    azure.cloud_name == Some(AzureCloudName::Stack)
}

/// The cloud provider config, field for field in the order the installer writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CloudConfig {
    cloud: String,
    tenant_id: String,
    aad_client_id: String,
    aad_client_secret: String,
    aad_client_cert_path: String,
    aad_client_cert_password: String,
    use_managed_identity_extension: bool,
    #[serde(rename = "userAssignedIdentityID")]
    user_assigned_identity_id: String,
    subscription_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_manager_endpoint: Option<String>,
    resource_group: String,
    location: String,
    vnet_name: String,
    vnet_resource_group: String,
    subnet_name: String,
    security_group_name: String,
    route_table_name: String,
    vm_type: &'static str,
    load_balancer_sku: &'static str,
    cloud_provider_backoff: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    use_instance_metadata: Option<bool>,
    #[serde(rename = "excludeMasterFromStandardLB")]
    exclude_master_from_standard_lb: bool,
    cloud_provider_backoff_duration: u32,
    #[serde(rename = "putVMSSVMBatchSize")]
    put_vmss_vm_batch_size: u32,
    #[serde(rename = "enableMigrateToIPBasedBackendPoolAPI")]
    enable_migrate_to_ip_based_backend_pool_api: bool,
}

/// ConfigMap `openshift-config/cloud-provider-config` key `config`: tab-indented JSON with a
/// trailing newline, as Go's `json.Encoder` with `SetIndent("", "\t")` writes it. Azure Stack
/// adds `resourceManagerEndpoint` and drops `useInstanceMetadata` (it has no IMDS).
pub fn cloud_config(
    config: &InstallConfig,
    infra_id: &str,
    principal: &ServicePrincipal,
) -> String {
    let azure = platform(config);
    let stack = is_stack(&azure);
    let resource_group = resource_group(&azure, infra_id);
    let cloud = azure.cloud_name.as_ref().map_or("", AzureCloudName::as_str);
    let cloud_config = CloudConfig {
        cloud: if cloud.is_empty() { AzureCloudName::Public.as_str() } else { cloud }.to_owned(),
        tenant_id: principal.tenant_id.clone(),
        aad_client_id: String::new(),
        aad_client_secret: String::new(),
        aad_client_cert_path: String::new(),
        aad_client_cert_password: String::new(),
        use_managed_identity_extension: false,
        user_assigned_identity_id: String::new(),
        subscription_id: principal.subscription_id.clone(),
        resource_manager_endpoint: stack.then(|| azure.arm_endpoint.clone().unwrap_or_default()),
        vnet_resource_group: or(azure.network_resource_group_name.as_ref(), || {
            resource_group.clone()
        }),
        resource_group,
        location: azure.region.clone(),
        vnet_name: or(azure.virtual_network.as_ref(), || format!("{infra_id}-vnet")),
        subnet_name: or(azure.compute_subnet.as_ref(), || format!("{infra_id}-worker-subnet")),
        security_group_name: format!("{infra_id}-nsg"),
        route_table_name: format!("{infra_id}-node-routetable"),
        vm_type: "standard",
        load_balancer_sku: "standard",
        cloud_provider_backoff: true,
        use_instance_metadata: (!stack).then_some(true),
        exclude_master_from_standard_lb: false,
        cloud_provider_backoff_duration: 6,
        put_vmss_vm_batch_size: 0,
        enable_migrate_to_ip_based_backend_pool_api: false,
    };
    go_json_indented(&cloud_config)
}

/// `spec.platformSpec.azure` (`Value::Null`: the installer writes no spec block, so the caller
/// leaves the key out) and `status.platformStatus.azure`.
pub fn infrastructure(config: &InstallConfig, infra_id: &str) -> (Value, Value) {
    let azure = platform(config);
    let resource_group = resource_group(&azure, infra_id);
    let cloud = azure.cloud_name.as_ref().map_or("", AzureCloudName::as_str);
    let mut status = json!({
        "networkResourceGroupName": or(azure.network_resource_group_name.as_ref(), || {
            resource_group.clone()
        }),
        "resourceGroupName": resource_group,
        "ipFamily": "IPv4",
        "cloudLoadBalancerConfig": {"dnsType": dns_type(azure.user_provisioned_dns.as_deref())},
    });
    if !cloud.is_empty() {
        status["cloudName"] = Value::from(cloud);
    }
    if is_stack(&azure) {
        status["armEndpoint"] = Value::from(azure.arm_endpoint.clone().unwrap_or_default());
    }
    if !azure.user_tags.is_empty() {
        status["resourceTags"] =
            azure.user_tags.iter().map(|(k, v)| json!({"key": k, "value": v})).collect();
    }
    (Value::Null, status)
}
