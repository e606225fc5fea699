//! The platform table: one row per install-config platform, in one flat list.

/// What ccm-assets knows about one platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// The install-config key (`platform.<name>`).
    pub name: &'static str,
    /// `PlatformType` in the Infrastructure config (`config.openshift.io/v1`).
    pub infrastructure_type: &'static str,
}

/// Every platform install-config accepts.
pub const PLATFORMS: &[Platform] = &[
    Platform { name: "aws", infrastructure_type: "AWS" },
    Platform { name: "azure", infrastructure_type: "Azure" },
    Platform { name: "baremetal", infrastructure_type: "BareMetal" },
    Platform { name: "external", infrastructure_type: "External" },
    Platform { name: "gcp", infrastructure_type: "GCP" },
    Platform { name: "ibmcloud", infrastructure_type: "IBMCloud" },
    Platform { name: "none", infrastructure_type: "None" },
    Platform { name: "nutanix", infrastructure_type: "Nutanix" },
    Platform { name: "openstack", infrastructure_type: "OpenStack" },
    Platform { name: "powervs", infrastructure_type: "PowerVS" },
    Platform { name: "vsphere", infrastructure_type: "VSphere" },
];

/// The row for `name`.
pub fn find(name: &str) -> Option<&'static Platform> {
    PLATFORMS.iter().find(|p| p.name == name)
}
