//! What vSphere contributes: the CCM's cloud config (YAML, or the legacy INI), the credentials Secret and the Infrastructure.
//!
//! ```text
//! install-config ─┬─ cloud_config ─┬─ yaml (default): vsphere-cloud-provider's YAML
//!                 │                └─ ini (--vsphere-config-format ini): the legacy gcfg file
//!                 ├─ secret_data: <server>.username / <server>.password per vCenter
//!                 └─ infrastructure: vcenters, failure domains, node networking, VIPs
//! ```
//! Both formats follow the installer's `pkg/asset/manifests/vsphere/cloudproviderconfig.go`
//! (`CloudProviderConfigYaml` and `CloudProviderConfigIni`), the Infrastructure its
//! `vsphere/infrastructure.go` and `manifests/infrastructure.go`.

mod ini;
mod yaml;

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::assets::options::ConfigFormat;
use crate::assets::provider::{CcmSpec, CloudProviderConfig, Context, Provider, SecretData};
use crate::graph::AssetError;
use crate::installconfig::{InstallConfig, VCenter, VspherePlatform};

/// The kube-system Secret with each vCenter's credentials; the config points the CCM at it.
pub const SECRET_NAME: &str = "vsphere-creds";

/// The Secret's namespace.
pub const SECRET_NAMESPACE: &str = "kube-system";

/// The vCenter tag category whose tags name each failure domain's region.
pub const REGION_TAG_CATEGORY: &str = "openshift-region";

/// The vCenter tag category whose tags name each failure domain's zone.
pub const ZONE_TAG_CATEGORY: &str = "openshift-zone";

/// `platform.vsphere.nodeNetworking` (openshift/api `VSpherePlatformNodeNetworking`): which
/// addresses the CCM reports for each node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeNetworking {
    /// The externally routable side.
    pub external: NodeNetworkingSpec,
    /// The cluster-internal side.
    pub internal: NodeNetworkingSpec,
}

/// One side of [`NodeNetworking`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeNetworkingSpec {
    /// Addresses in these CIDRs are the ones reported.
    #[serde(rename = "networkSubnetCidr", skip_serializing_if = "Vec::is_empty")]
    pub network_subnet_cidr: Vec<String>,
    /// The port group whose address is reported.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub network: String,
    /// Addresses in these CIDRs are never reported.
    #[serde(rename = "excludeNetworkSubnetCidr", skip_serializing_if = "Vec::is_empty")]
    pub exclude_network_subnet_cidr: Vec<String>,
}

/// The node networking the installer configures: `nodeNetworking` as given, else both sides
/// limited to the machine networks (which hold the VIPs). A `nodeNetworking` that does not
/// have openshift/api's shape counts as unset.
pub fn node_networking(config: &InstallConfig) -> NodeNetworking {
    let given = config.platform.vsphere.as_ref().and_then(|p| p.node_networking.as_ref());
    if let Some(networking) = given.and_then(|v| serde_json::from_value(v.clone()).ok()) {
        return networking;
    }
    let cidrs = machine_networks(config);
    let side = NodeNetworkingSpec { network_subnet_cidr: cidrs, ..NodeNetworkingSpec::default() };
    NodeNetworking { external: side.clone(), internal: side }
}

/// The text of `openshift-config/cloud-provider-config` key `config` in `format`, for the
/// vSphere section of `config` (an empty one when absent).
pub fn cloud_config(config: &InstallConfig, infra_id: &str, format: ConfigFormat) -> String {
    let empty = VspherePlatform::default();
    let p = config.platform.vsphere.as_ref().unwrap_or(&empty);
    match format {
        ConfigFormat::Yaml => yaml::render(p, &node_networking(config)),
        ConfigFormat::Ini => ini::render(p, infra_id),
    }
}

/// The plaintext `data` of the [`SECRET_NAME`] Secret: `<server>.username` and
/// `<server>.password` for every vCenter (the caller base64-encodes it).
pub fn secret_data(vsphere: &VspherePlatform) -> BTreeMap<String, String> {
    vsphere
        .vcenters
        .iter()
        .flat_map(|vc| {
            [
                (format!("{}.username", vc.server), vc.user.clone()),
                (format!("{}.password", vc.server), vc.password.expose().to_owned()),
            ]
        })
        .collect()
}

/// The datacenters the CCM looks in on `vcenter`: its own, then those of its failure domains
/// not already listed (the installer's INI writer; its YAML writer lists only the vCenter's,
/// which misses a failure domain in an unlisted datacenter).
fn datacenters<'a>(p: &'a VspherePlatform, vcenter: &'a VCenter) -> Vec<&'a str> {
    let mut all: Vec<&str> = vcenter.datacenters.iter().map(String::as_str).collect();
    let domains = p.failure_domains.iter().filter(|fd| fd.server == vcenter.server);
    for dc in domains.filter_map(|fd| fd.topology.datacenter.as_deref()) {
        if !dc.is_empty() && !all.contains(&dc) {
            all.push(dc);
        }
    }
    all
}

fn machine_networks(config: &InstallConfig) -> Vec<String> {
    config.networking.machine_network.iter().map(|n| n.cidr.clone()).collect()
}

/// `spec.platformSpec.vsphere` and `status.platformStatus.vsphere` of the Infrastructure.
///
/// The spec lists the vCenters (`port` only when set), the failure domains that have a compute
/// cluster and a network (each with its template, default
/// `/<datacenter>/vm/<infraID>-rhcos-<region>-<zone>`, and its resource pool, which defaults
/// to the cluster's `Resources`), the node networking, the VIPs, and the machine networks plus
/// a `/32` (`/128`) for each API then each Ingress VIP not already listed. The status has the
/// same VIP lists (only the plural fields: the installer no longer writes the deprecated
/// `apiServerInternalIP`/`ingressIP`), the load balancer when one is given, and the same
/// machine networks as the spec. Both are `{}` off vSphere. See: issue 19.
pub fn infrastructure(config: &InstallConfig, infra_id: &str) -> (Value, Value) {
    let Some(p) = &config.platform.vsphere else {
        return (json!({}), json!({}));
    };
    let networks = with_vip_networks(p, &machine_networks(config));
    let mut spec = json!({
        "nodeNetworking": node_networking(config),
        "apiServerInternalIPs": p.api_vips,
        "ingressIPs": p.ingress_vips,
        "machineNetworks": networks,
    });
    let vcenters: Vec<Value> = p.vcenters.iter().map(vcenter_spec).collect();
    if !vcenters.is_empty() {
        spec["vcenters"] = json!(vcenters);
    }
    let domains: Vec<Value> = p
        .failure_domains
        .iter()
        .filter(|fd| {
            let topology = &fd.topology;
            topology.compute_cluster.as_deref().is_some_and(|c| !c.is_empty())
                && topology.networks.first().is_some_and(|n| !n.is_empty())
        })
        .map(|fd| {
            let t = &fd.topology;
            let dc = t.datacenter.as_deref().unwrap_or_default();
            let template = match t.template.as_deref().filter(|t| !t.is_empty()) {
                Some(template) => template.to_owned(),
                None => format!("/{dc}/vm/{infra_id}-rhcos-{}-{}", fd.region, fd.zone),
            };
            let mut topology = json!({
                "datacenter": dc,
                "computeCluster": t.compute_cluster,
                "networks": t.networks,
                "datastore": t.datastore.as_deref().unwrap_or_default(),
                "template": template,
            });
            for (key, value) in [("resourcePool", &t.resource_pool), ("folder", &t.folder)] {
                if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                    topology[key] = json!(value);
                }
            }
            json!({
                "name": fd.name, "region": fd.region, "zone": fd.zone, "server": fd.server,
                "topology": topology,
            })
        })
        .collect();
    if !domains.is_empty() {
        spec["failureDomains"] = json!(domains);
    }

    let mut status = json!({
        "apiServerInternalIPs": p.api_vips,
        "ingressIPs": p.ingress_vips,
        "machineNetworks": networks,
    });
    // Only with VIPs and only as given: the installer sets no default, the CRD defaults it on
    // the server.
    if !p.api_vips.is_empty()
        && let Some(kind) = p.load_balancer.as_ref().and_then(|lb| lb.kind.as_ref())
    {
        status["loadBalancer"] = json!({"type": kind.as_str()});
    }
    (spec, status)
}

fn vcenter_spec(vc: &VCenter) -> Value {
    let mut spec = json!({"server": vc.server, "datacenters": vc.datacenters});
    if let Some(port) = vc.port.filter(|port| *port != 0) {
        spec["port"] = json!(port);
    }
    spec
}

/// The machine networks, then a host CIDR for each API and then each Ingress VIP, each listed
/// once (a VIP already given as a machine network, or shared by API and Ingress, adds none).
fn with_vip_networks(p: &VspherePlatform, networks: &[String]) -> Vec<String> {
    let mut all = networks.to_vec();
    for vip in p.api_vips.iter().chain(&p.ingress_vips) {
        let v6 = vip.parse::<IpAddr>().map_or(vip.contains(':'), |ip| ip.is_ipv6());
        let cidr = format!("{vip}/{}", if v6 { 128 } else { 32 });
        if !all.contains(&cidr) {
            all.push(cidr);
        }
    }
    all
}

/// vSphere's [`Provider`]: the YAML (or legacy INI) config, `vsphere-creds` from the
/// install-config's vCenters, the upstream vSphere CCM reading that Secret through the API.
#[derive(Debug)]
pub struct Vsphere;

impl Provider for Vsphere {
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let format = ctx.options.vsphere_config_format;
        let config = cloud_config(ctx.config, ctx.infra_id, format);
        Ok(Some(CloudProviderConfig { config, ca_bundle: None }))
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(SECRET_NAME)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        let vsphere = ctx.config.platform.vsphere.as_ref().ok_or("not a vSphere install-config")?;
        Ok(secret_data(vsphere))
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec {
            reads_credentials_secret: true,
            env: &[
                ("VSPHERE_SECRET_NAME", SECRET_NAME),
                ("VSPHERE_SECRET_NAMESPACE", SECRET_NAMESPACE),
            ],
            ..CcmSpec::upstream(
                "vsphere-cloud-controller-manager",
                "/bin/vsphere-cloud-controller-manager",
                "vsphere",
            )
        })
    }

    fn infrastructure(&self, config: &InstallConfig, infra_id: &str) -> Option<(Value, Value)> {
        config.platform.vsphere.as_ref()?;
        Some(infrastructure(config, infra_id))
    }
}

#[cfg(test)]
mod tests;
