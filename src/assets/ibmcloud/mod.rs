//! What IBM Cloud VPC contributes: the g2 cloud config, the API key Secret and the Infrastructure.
//!
//! ```text
//! install-config ─┬─ cloud_config ◀─ account ID (ibm::iam: token, then API key details)
//!                 │                ◀─ the region's zones (ibm::regions), for generated subnet names
//!                 ├─ secret_data  ◀─ IC_API_KEY (read by the CLI)
//!                 └─ infrastructure
//! ```
//! What PowerVS runs too (the `cloud_conf` writer, the account, the regions, the CCM) is in
//! [`super::ibm`]. Everything here is pure but `endpoints`: the CLI checks the endpoint
//! overrides and asks IAM for the account before the graph runs.

mod endpoints;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::ibm::cloud_conf::{self, Vpc};
use super::ibm::{self, access, regions};
use crate::assets::cloud_access::{AccessRequest, CloudAccess, IbmAccess, LoadedAccess};
use crate::assets::provider::{
    CcmSpec, CloudProviderConfig, Context, Provider, SecretData, Syntax,
};
use crate::graph::AssetError;
use crate::installconfig::IbmService;
use crate::installconfig::{IbmCloudPlatform, InstallConfig, Secret};

/// The kube-system Secret the installer writes with the API key (only outside `Manual`
/// credentials mode, and IBM Cloud accepts only `Manual`: the caller decides).
pub const SECRET_NAME: &str = "ibmcloud-credentials";

/// The Secret's one key.
pub const SECRET_KEY: &str = "ibmcloud_api_key";

/// The environment variable the installer reads the API key from.
pub const API_KEY_ENV: &str = "IC_API_KEY";

/// `resourceGroupName`, else the infrastructure ID (the installer's `ClusterResourceGroupName`).
pub fn resource_group_name<'a>(ibm: &'a IbmCloudPlatform, infra_id: &'a str) -> &'a str {
    ibm.resource_group_name.as_deref().filter(|name| !name.is_empty()).unwrap_or(infra_id)
}

/// `vpcName`, else `<infraID>-vpc`.
pub fn vpc_name(ibm: &IbmCloudPlatform, infra_id: &str) -> String {
    match ibm.vpc_name.as_deref().filter(|name| !name.is_empty()) {
        Some(name) => name.to_owned(),
        None => format!("{infra_id}-vpc"),
    }
}

/// The subnets the CCM may use: the given control-plane then compute subnets, in input order;
/// with none given, the installer's names for the subnets it creates in each of `zones`
/// (`<infraID>-subnet-control-plane-<zone>` and `<infraID>-subnet-compute-<zone>`), sorted.
pub fn subnet_names(ibm: &IbmCloudPlatform, infra_id: &str, zones: &[&str]) -> Vec<String> {
    let given: Vec<String> =
        ibm.control_plane_subnets.iter().chain(&ibm.compute_subnets).cloned().collect();
    if !given.is_empty() {
        return given;
    }
    let mut generated: Vec<String> = zones
        .iter()
        .flat_map(|zone| {
            [
                format!("{infra_id}-subnet-control-plane-{zone}"),
                format!("{infra_id}-subnet-compute-{zone}"),
            ]
        })
        .collect();
    generated.sort_unstable();
    generated
}

/// The text of `openshift-config/cloud-provider-config` key `config`, as the installer's
/// `pkg/asset/manifests/ibmcloud/cloudproviderconfig.go` renders it: the shared head and VPC
/// keys, then the `IAM`, `VPC` and `ResourceManager` endpoint overrides that are set (the VPC
/// one without its `/v<N>` suffix, which the CCM appends), then two empty lines.
///
/// `resource_group` is [`resource_group_name`]; `zones` are the region's zones
/// ([`regions::zones`]), used only when no subnet is given.
pub fn cloud_config(
    ibm: &IbmCloudPlatform,
    infra_id: &str,
    account_id: &str,
    resource_group: &str,
    zones: &[&str],
) -> String {
    let vpc_name = vpc_name(ibm, infra_id);
    let vpc = Vpc {
        account_id,
        cluster_id: infra_id,
        region: &ibm.region,
        resource_group,
        vpc_name: &vpc_name,
        subnets: subnet_names(ibm, infra_id, zones),
    };
    let mut entries = vpc.entries();
    let endpoint =
        |name| cloud_conf::endpoint(&ibm.service_endpoints, name).filter(|u| !u.is_empty());
    for (key, name) in [
        ("iamEndpointOverride", IbmService::Iam),
        ("g2EndpointOverride", IbmService::Vpc),
        ("rmEndpointOverride", IbmService::ResourceManager),
    ] {
        if let Some(url) = endpoint(name) {
            let url = if name == IbmService::Vpc { strip_api_version(url) } else { url };
            entries.push((key, url.to_owned()));
        }
    }
    let mut text = cloud_conf::write(&entries);
    // The template's override line and the empty line after it.
    text.push_str("\n\n");
    text
}

/// The installer's `(^.*)/v\d+[/]{0,1}$` → `$1`: drops a trailing `/v1`, `/v21/`, ….
fn strip_api_version(url: &str) -> &str {
    let body = url.strip_suffix('/').unwrap_or(url);
    match body.rfind("/v") {
        Some(at) if body.len() > at + 2 && body[at + 2..].bytes().all(|b| b.is_ascii_digit()) => {
            &body[..at]
        }
        _ => url,
    }
}

/// The plaintext `data` of the [`SECRET_NAME`] Secret (the caller base64-encodes it).
pub fn secret_data(api_key: &Secret) -> BTreeMap<String, String> {
    BTreeMap::from([(SECRET_KEY.to_owned(), api_key.expose().to_owned())])
}

/// `spec.platformSpec.ibmcloud` and `status.platformStatus.ibmcloud` of the Infrastructure, as
/// the installer's `pkg/asset/manifests/infrastructure.go` writes them. The installer sets no
/// spec (`{}` here); the status has no `cisInstanceCRN`/`dnsInstanceCRN`, which only the cloud
/// knows. Both are `{}` when `config` is not on IBM Cloud.
pub fn infrastructure(config: &InstallConfig, infra_id: &str) -> (Value, Value) {
    let Some(ibm) = &config.platform.ibmcloud else {
        return (json!({}), json!({}));
    };
    let mut status = json!({
        "location": ibm.region,
        "resourceGroupName": resource_group_name(ibm, infra_id),
        "providerType": "VPC",
    });
    if !ibm.service_endpoints.is_empty() {
        status["serviceEndpoints"] = json!(ibm.service_endpoints);
    }
    (json!({}), status)
}

/// IBM Cloud's [`Provider`]: the `[global]/[kubernetes]/[provider]` config,
/// `ibmcloud-credentials`, the IBM CCM reading the API key from `/etc/vpc`.
#[derive(Debug)]
pub struct IbmCloud;

impl Provider for IbmCloud {
    fn load_access(&self, req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        let endpoints = (req.config.platform.ibmcloud.as_ref())
            .map(|p| p.service_endpoints.as_slice())
            .unwrap_or_default();
        if !req.offline {
            let trust =
                req.config.additional_trust_bundle.as_deref().filter(|b| !b.trim().is_empty());
            endpoints::check(endpoints, trust)?;
        }
        access::load(req, endpoints)
    }
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let ibm = ctx.config.platform.ibmcloud.as_ref().ok_or("not an IBM Cloud install-config")?;
        let zones = regions::zones(&ibm.region).ok_or_else(|| {
            format!("platform.ibmcloud.region: {:?} is not an IBM Cloud VPC region", ibm.region)
        })?;
        let group = resource_group_name(ibm, ctx.infra_id);
        let config = cloud_config(ibm, ctx.infra_id, ibm::account_id(ctx)?, group, zones);
        Ok(Some(CloudProviderConfig { config, ca_bundle: None }))
    }

    fn syntax(&self) -> Syntax {
        Syntax::Gcfg
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(SECRET_NAME)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        match ctx.access {
            CloudAccess::Ibm(IbmAccess { api_key: Some(key), .. }) => Ok(secret_data(key)),
            _ => Err(format!("{API_KEY_ENV} is not set").into()),
        }
    }

    fn in_cluster_secret(&self, data: &SecretData) -> SecretData {
        data.clone()
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(ibm::CCM)
    }

    fn infrastructure(&self, config: &InstallConfig, infra_id: &str) -> Option<(Value, Value)> {
        config.platform.ibmcloud.as_ref()?;
        Some(infrastructure(config, infra_id))
    }
}

#[cfg(test)]
mod tests;
