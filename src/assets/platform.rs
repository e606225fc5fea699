//! The platform table: one row per install-config platform, in one flat list.
//!
//! It names every platform module, so none of them may import it: the platform-neutral assets,
//! above it, find their platform's provider here.

use super::provider::Provider;
use super::{aws, azure, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere};
use crate::installconfig::InstallConfig;

/// What ccm-assets knows about one platform.
#[derive(Debug, Clone, Copy)]
pub struct Platform {
    /// The install-config key (`platform.<name>`).
    pub name: &'static str,
    /// `PlatformType` in the Infrastructure config (`config.openshift.io/v1`).
    pub infrastructure_type: &'static str,
    /// What the platform contributes to the generated manifests.
    pub provider: &'static dyn Provider,
}

/// Every platform install-config accepts.
pub const PLATFORMS: &[Platform] = &[
    Platform { name: "aws", infrastructure_type: "AWS", provider: &aws::Aws },
    Platform { name: "azure", infrastructure_type: "Azure", provider: &azure::Azure },
    Platform { name: "baremetal", infrastructure_type: "BareMetal", provider: &none::BareMetal },
    Platform { name: "external", infrastructure_type: "External", provider: &none::External },
    Platform { name: "gcp", infrastructure_type: "GCP", provider: &gcp::Gcp },
    Platform { name: "ibmcloud", infrastructure_type: "IBMCloud", provider: &ibmcloud::IbmCloud },
    Platform { name: "none", infrastructure_type: "None", provider: &none::NoPlatform },
    Platform { name: "nutanix", infrastructure_type: "Nutanix", provider: &nutanix::Nutanix },
    Platform {
        name: "openstack",
        infrastructure_type: "OpenStack",
        provider: &openstack::OpenStack,
    },
    Platform { name: "powervs", infrastructure_type: "PowerVS", provider: &powervs::PowerVs },
    Platform { name: "vsphere", infrastructure_type: "VSphere", provider: &vsphere::Vsphere },
];

/// The row for `name`.
pub fn find(name: &str) -> Option<&'static Platform> {
    PLATFORMS.iter().find(|p| p.name == name)
}

/// The row whose Infrastructure `PlatformType` is `kind` (how `render` tells the platform).
pub fn find_by_infrastructure_type(kind: &str) -> Option<&'static Platform> {
    PLATFORMS.iter().find(|p| p.infrastructure_type == kind)
}

/// No table row for the install-config's platform: a registry bug, not a user error
/// (validation accepts only the platforms listed here).
#[derive(Debug, thiserror::Error)]
#[error("no platform table entry for {0:?}")]
pub struct UnknownPlatform(String);

/// The row of the install-config's platform.
pub fn of(config: &InstallConfig) -> Result<&'static Platform, UnknownPlatform> {
    let name = config.platform_name();
    find(name).ok_or_else(|| UnknownPlatform(name.to_owned()))
}
