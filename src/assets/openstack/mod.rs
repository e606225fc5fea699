//! What OpenStack contributes: the selected cloud, cloud facts, cloud.conf, credentials, and
//! our own CCM.
//!
//! ```text
//! cloud-access ──┬── openstack/cloud-facts ──┐
//! install-config ┴───────────────────────────┴── cloud-provider-config (via [`OpenStack`])
//! ```

pub mod access;
pub mod cloud_conf;
pub mod credentials;
pub mod lookup;

// The selected cloud is defined with every platform's access, below the provider contract
// that carries it (`cloud_access`), and named here too, where OpenStack's users look for it.
pub use crate::assets::cloud_access::Cloud;

use serde_json::Value;

use super::provider::{
    Binary, CcmSpec, CloudProviderConfig, Context, Provider, SecretData, SecretMount,
};
use crate::assets::cloud_access::{AccessRequest, LoadedAccess};
use crate::graph::AssetError;
use crate::installconfig::InstallConfig;

/// Where the cloud's CA bundle lives on every node (written there from the cloud-provider
/// ConfigMap's `ca-bundle.pem` key); cloud.conf and the in-cluster clouds.yaml point at it.
pub const CA_PATH: &str =
    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem";

/// The credentials Secret the installer writes and the bootstrap CCM reads through the API.
pub const CREDENTIALS_SECRET: &str = "openstack-credentials";

/// Its namespace.
pub const CREDENTIALS_NAMESPACE: &str = "kube-system";

/// OpenStack's [`Provider`].
#[derive(Debug)]
pub struct OpenStack;

fn selected<'a>(ctx: &Context<'a>) -> Result<&'a Cloud, AssetError> {
    Ok(ctx.access.openstack().ok_or("no OpenStack cloud was loaded")?)
}

impl Provider for OpenStack {
    fn load_access(&self, req: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        access::load(req)
    }
    fn cloud_provider_config(
        &self,
        ctx: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        let cloud = selected(ctx)?;
        let facts = ctx.facts.ok_or("the OpenStack cloud facts were not looked up")?;
        let router = ctx.config.platform.openstack.as_ref().and_then(|o| o.router_id.as_deref());
        let config = cloud_conf::cloud_conf_routed(cloud, facts, router);
        Ok(Some(CloudProviderConfig { config, ca_bundle: cloud.ca_bundle.clone() }))
    }

    fn in_cluster_config(&self, config: &str) -> Result<String, AssetError> {
        Ok(cloud_conf::in_cluster(config)?)
    }

    fn bootstrap_config(&self, config: &str) -> Result<String, AssetError> {
        Ok(cloud_conf::bootstrap(config)?)
    }

    fn secret_name(&self) -> Option<&'static str> {
        Some(CREDENTIALS_SECRET)
    }

    fn secret_data(&self, ctx: &Context<'_>) -> Result<SecretData, AssetError> {
        credentials::secret_data(selected(ctx)?)
    }

    fn in_cluster_secret(&self, data: &SecretData) -> SecretData {
        data.iter()
            .filter(|(k, _)| *k == "clouds.yaml")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn ccm(&self) -> Option<CcmSpec> {
        Some(CcmSpec {
            app: "openstack-cloud-controller-manager",
            binary: Binary::OwnImage,
            cloud_provider: "openstack",
            config_dir: "/etc/openstack/config",
            secret: Some(SecretMount {
                name: "openstack-cloud-credentials",
                dir: Some("/etc/openstack/secret"),
                keys: &["clouds.yaml"],
            }),
            reads_credentials_secret: false,
            inject_credentials: false,
            // cloud.conf, clouds.yaml and the CA are re-read while it runs: an edit reaches it
            // without a restart (issue 38).
            reloads_config: true,
            env: &[],
            node_manager: None,
        })
    }

    /// With a router in the cloud config (`[Route] router-id`, which generation writes exactly
    /// when install-config has `platform.openstack.routerID`), the route controller's pod
    /// networks: the cluster networks (at most one per family, validated); without one the
    /// route controller is off in so many words (`--configure-cloud-routes` defaults to true,
    /// and the CCM would warn at every start that cloud.conf has no router). An empty
    /// `router-id` counts as none, as the CCM reads it. See: issue 27.
    fn ccm_args(&self, cloud_conf: &str, cluster_networks: &[String]) -> Vec<String> {
        // The in-cluster config parsed already (the transform wrote it): unparsable, no router.
        let routed = ccm_formats::gcfg::parse(cloud_conf)
            .is_ok_and(|doc| doc.get("Route", "router-id").is_some_and(|id| !id.is_empty()));
        if !routed {
            return vec!["--configure-cloud-routes=false".to_owned()];
        }
        match cluster_networks.is_empty() {
            false => vec![format!("--cluster-cidr={}", cluster_networks.join(","))],
            true => Vec::new(),
        }
    }

    /// Our own CCM (`controller/`) implements leader migration. See: issue 26.
    fn leader_migration(&self) -> bool {
        true
    }

    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        let os = config.platform.openstack.as_ref()?;
        Some(infrastructure(os, config))
    }
}

/// `spec.platformSpec.openstack` and `status.platformStatus.openstack` of the Infrastructure.
pub fn infrastructure(
    os: &crate::installconfig::OpenStackPlatform,
    config: &InstallConfig,
) -> (Value, Value) {
    let vips = crate::assets::platform_blocks::Vips {
        api: &os.api_vips,
        ingress: &os.ingress_vips,
        load_balancer: os.load_balancer_type(),
    };
    vips.blocks(config, true)
}
