//! Platforms without a cloud config: `none`, `baremetal` and `external`.
//!
//! They write no cloud-provider ConfigMap, no credentials and no CCM (the cloud-provider-config
//! asset logs that once); only their Infrastructure blocks differ. `external` with
//! `cloudControllerManager: External` records in the Infrastructure status that a CCM will
//! be installed by someone else, and still gets no pod from us.

use serde_json::{Value, json};

use super::platform_blocks::Vips;
use super::provider::Provider;
use crate::installconfig::{CloudControllerManager, InstallConfig, LoadBalancerType};

/// `platform: {none: {}}`: nothing at all.
#[derive(Debug)]
pub struct NoPlatform;

impl Provider for NoPlatform {}

/// `platform.baremetal`: the VIPs in the Infrastructure, nothing else.
#[derive(Debug)]
pub struct BareMetal;

impl Provider for BareMetal {
    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        let bm = config.platform.baremetal.as_ref()?;
        let load_balancer = bm
            .load_balancer
            .as_ref()
            .and_then(|lb| lb.kind.clone())
            .unwrap_or(LoadBalancerType::OpenShiftManagedDefault);
        let vips = Vips { api: &bm.api_vips, ingress: &bm.ingress_vips, load_balancer };
        let (spec, status) = vips.blocks(config, true);
        Some((spec, status))
    }
}

/// `platform.external`: the platform name, and who runs the CCM.
#[derive(Debug)]
pub struct External;

impl Provider for External {
    fn infrastructure(&self, config: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        let external = config.platform.external.as_ref()?;
        let spec = json!({"platformName": external.platform_name.as_deref().unwrap_or("Unknown")});
        // The installer sets the state only for `External`; otherwise it stays empty.
        let ccm = match external.cloud_controller_manager {
            Some(CloudControllerManager::External) => json!({"state": "External"}),
            _ => json!({}),
        };
        let status = json!({"cloudControllerManager": ccm});
        Some((spec, status))
    }
}
