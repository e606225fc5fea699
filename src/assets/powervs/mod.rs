//! What IBM Power Virtual Server contributes: the g2 cloud config and the Infrastructure.
//!
//! The config is the IBM one (the `cloud_conf` writer of [`super::ibm`], which IBM Cloud uses
//! too) plus the PowerVS workspace keys, every key always present, as
//! `pkg/asset/manifests/powervs/cloudproviderconfig.go` writes it. The account ID comes from
//! [`super::ibm::iam`]; PowerVS has no kube-system credentials Secret (it accepts only
//! `Manual` credentials mode).

use crate::assets::cloud_access::{AccessRequest, LoadedAccess};
use serde_json::{Value, json};

use super::ibm::cloud_conf::{self, Vpc};
use super::ibm::{self, regions};
use crate::assets::provider::{CcmSpec, CloudProviderConfig, Context, Provider, Syntax};
use crate::graph::AssetError;
use crate::installconfig::IbmService;
use crate::installconfig::{InstallConfig, PowerVsPlatform};

/// PowerVS regions and the IBM Cloud VPC region each pairs with: the installer's
/// `pkg/types/powervs/powervs_regions.go` (`VPCRegion`; "there is no API to query these").
/// The VPC zones come from [`regions::zones`], one table for both platforms.
pub const REGIONS: &[(&str, &str)] = &[
    ("dal", "us-south"),
    ("eu-de", "eu-de"),
    ("lon", "eu-gb"),
    ("mad", "eu-es"),
    ("osa", "jp-osa"),
    ("sao", "br-sao"),
    ("syd", "au-syd"),
    ("tok", "jp-tok"),
    ("tor", "ca-tor"),
    ("us-east", "us-east"),
    ("us-south", "us-south"),
    ("wdc", "us-east"),
];

/// The VPC region: `vpcRegion`, else the one paired with the PowerVS region; `None` when
/// neither is known (the installer fails there; the caller should too).
pub fn vpc_region(pvs: &PowerVsPlatform) -> Option<&str> {
    match pvs.vpc_region.as_deref().filter(|region| !region.is_empty()) {
        Some(region) => Some(region),
        None => REGIONS.iter().find(|(name, _)| *name == pvs.region).map(|(_, vpc)| *vpc),
    }
}

/// `vpcName`, else `vpc-<infraID>`.
pub fn vpc_name(pvs: &PowerVsPlatform, infra_id: &str) -> String {
    match pvs.vpc_name.as_deref().filter(|name| !name.is_empty()) {
        Some(name) => name.to_owned(),
        None => format!("vpc-{infra_id}"),
    }
}

/// `vpcSubnets`, else the names cluster-api-provider-ibm gives the subnets it creates, one
/// per zone of the VPC region: `<infraID>-vpcsubnet-<zone>`. (With an existing VPC the
/// installer also asks the cloud for its subnets; offline only `vpcSubnets` is known.)
pub fn subnet_names(pvs: &PowerVsPlatform, infra_id: &str) -> Vec<String> {
    if !pvs.vpc_subnets.is_empty() {
        return pvs.vpc_subnets.clone();
    }
    let zones = vpc_region(pvs).and_then(regions::zones).unwrap_or_default();
    zones.iter().map(|zone| format!("{infra_id}-vpcsubnet-{zone}")).collect()
}

/// The text of `openshift-config/cloud-provider-config` key `config`: the shared head and
/// VPC keys, the workspace (`powerVSCloudInstanceID` when `serviceInstanceGUID` is given,
/// else `powerVSCloudInstanceName` `<infraID>-power-iaas`, the one the installer creates),
/// region and zone, then the five endpoint overrides, each present even when empty. The VPC
/// override keeps its URL as given (the installer strips `/v<N>` only on IBM Cloud).
pub fn cloud_config(pvs: &PowerVsPlatform, infra_id: &str, account_id: &str) -> String {
    let vpc_name = vpc_name(pvs, infra_id);
    let guid = pvs.service_instance_guid.as_deref().unwrap_or_default();
    let instance_name =
        if guid.is_empty() { format!("{infra_id}-power-iaas") } else { String::new() };
    let vpc = Vpc {
        account_id,
        cluster_id: infra_id,
        region: vpc_region(pvs).unwrap_or_default(),
        resource_group: pvs.powervs_resource_group.as_deref().unwrap_or_default(),
        vpc_name: &vpc_name,
        subnets: subnet_names(pvs, infra_id),
    };
    let mut entries = vpc.entries();
    entries.extend([
        ("powerVSCloudInstanceID", guid.to_owned()),
        ("powerVSCloudInstanceName", instance_name),
        ("powerVSRegion", pvs.region.clone()),
        ("powerVSZone", pvs.zone.clone()),
    ]);
    for (key, name) in [
        ("g2EndpointOverride", IbmService::Vpc),
        ("iamEndpointOverride", IbmService::Iam),
        ("powerVSEndpointOverride", IbmService::Power),
        ("rcEndpointOverride", IbmService::ResourceController),
        ("rmEndpointOverride", IbmService::ResourceManager),
    ] {
        let url = cloud_conf::endpoint(&pvs.service_endpoints, name).unwrap_or_default();
        entries.push((key, url.to_owned()));
    }
    cloud_conf::write(&entries)
}

/// `spec.platformSpec.powervs` and `status.platformStatus.powervs` of the Infrastructure, as
/// the installer's `pkg/asset/manifests/infrastructure.go` writes them: the service endpoints
/// in both; region, zone and resource group in the status. No `cisInstanceCRN` or
/// `dnsInstanceCRN` (only the cloud knows them), and no private endpoints added for
/// `publish: Internal` with mirrors (the installer asks the cloud for those). Both are `{}`
/// when `config` is not on PowerVS.
pub fn infrastructure(config: &InstallConfig) -> (Value, Value) {
    let Some(pvs) = &config.platform.powervs else {
        return (json!({}), json!({}));
    };
    let mut spec = json!({});
    let mut status = json!({"region": pvs.region, "zone": pvs.zone});
    if let Some(group) = pvs.powervs_resource_group.as_deref().filter(|g| !g.is_empty()) {
        status["resourceGroup"] = json!(group);
    }
    if !pvs.service_endpoints.is_empty() {
        spec["serviceEndpoints"] = json!(pvs.service_endpoints);
        status["serviceEndpoints"] = json!(pvs.service_endpoints);
    }
    (spec, status)
}

/// PowerVS's [`Provider`]: the IBM config with the PowerVS keys, the IBM CCM (no credentials
/// Secret: PowerVS accepts only `credentialsMode: Manual`).
#[derive(Debug)]
pub struct PowerVs;

impl Provider for PowerVs {
    fn load_access(&self, req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        let endpoints =
            req.config.platform.powervs.as_ref().map(|p| p.service_endpoints.as_slice());
        ibm::access::load(req, endpoints.unwrap_or_default())
    }
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let pvs = ctx.config.platform.powervs.as_ref().ok_or("not a PowerVS install-config")?;
        let account = ibm::account_id(ctx)?;
        let config = cloud_config(pvs, ctx.infra_id, account);
        Ok(Some(CloudProviderConfig { config, ca_bundle: None }))
    }

    fn syntax(&self) -> Syntax {
        Syntax::Gcfg
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec { app: "powervs-cloud-controller-manager", ..ibm::CCM })
    }

    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        config.platform.powervs.as_ref()?;
        Some(infrastructure(config))
    }
}

#[cfg(test)]
mod tests;
