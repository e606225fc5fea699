//! Per-platform checks: the fields each platform requires and the values it supports.

use super::field::{FieldError, Path};
use super::rules::{Names, required, service_endpoints};
use crate::installconfig::types::{
    AwsPlatform, CloudControllerManager, ExternalPlatform, IbmCloudPlatform, InstallConfig,
    IpFamily, Platform,
};

/// `platform`: exactly one platform, then that platform's own checks.
pub(crate) fn check(config: &InstallConfig) -> Vec<FieldError> {
    let p = &config.platform;
    let path = Path::new("platform");
    let mut errs = Vec::new();
    let set = p.set_names();
    let active = p.name();
    if set.is_empty() {
        let detail = format!("must specify one of the platforms ({})", Platform::NAMES.join(", "));
        errs.push(FieldError::invalid(&path, active, detail));
    }
    for other in set.iter().skip(1) {
        let detail = format!(
            "must only specify a single type of platform; cannot use both \"{active}\" and \"{other}\""
        );
        errs.push(FieldError::invalid(&path, active, detail));
    }
    if let Some(aws) = &p.aws {
        errs.extend(check_aws(aws, &path.child("aws")));
    }
    if let Some(azure) = &p.azure {
        errs.extend(super::azure::check(azure, &path.child("azure")));
    }
    if let Some(external) = &p.external {
        errs.extend(check_external(external, &path.child("external")));
    }
    if let Some(gcp) = &p.gcp {
        let mode = config.credentials_mode.as_ref();
        errs.extend(super::gcp::check(gcp, mode, &path.child("gcp")));
    }
    if let Some(ibm) = &p.ibmcloud {
        errs.extend(check_ibmcloud(ibm, &path.child("ibmcloud")));
    }
    if let Some(nutanix) = &p.nutanix {
        errs.extend(super::nutanix::check(nutanix, &path.child("nutanix")));
    }
    if let Some(openstack) = &p.openstack {
        errs.extend(super::openstack::check(openstack, &path.child("openstack")));
        errs.extend(super::openstack::routes(openstack, &config.networking));
    }
    if let Some(powervs) = &p.powervs {
        errs.extend(super::powervs::check(powervs, &path.child("powervs")));
    }
    if let Some(vsphere) = &p.vsphere {
        errs.extend(super::vsphere::check(vsphere, &path.child("vsphere")));
    }
    errs
}

fn check_aws(p: &AwsPlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    required(&mut errs, &p.region, &path.child("region"), "region must be specified");
    if let Some(IpFamily::Other(value)) = &p.ip_family {
        errs.push(FieldError::not_supported(&path.child("ipFamily"), value, IpFamily::KNOWN));
    }
    errs.extend(service_endpoints(
        &p.service_endpoints,
        &path.child("serviceEndpoints"),
        Names::LowercaseId,
    ));
    errs
}

fn check_external(p: &ExternalPlatform, path: &Path) -> Vec<FieldError> {
    match &p.cloud_controller_manager {
        Some(CloudControllerManager::Other(value)) => vec![FieldError::not_supported(
            &path.child("cloudControllerManager"),
            value,
            CloudControllerManager::KNOWN,
        )],
        _ => Vec::new(),
    }
}

fn check_ibmcloud(p: &IbmCloudPlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    required(&mut errs, &p.region, &path.child("region"), "region must be specified");
    // The installer's `nil` checks: an empty list counts as not given.
    let has_subnets = !p.control_plane_subnets.is_empty() || !p.compute_subnets.is_empty();
    if !p.vpc_name.as_deref().unwrap_or("").is_empty() {
        if p.control_plane_subnets.is_empty() {
            let detail = "must provided at least one control plane subnet when a VPC is specified";
            errs.push(FieldError::required(&path.child("controlPlaneSubnets"), detail));
        }
        if p.compute_subnets.is_empty() {
            let detail = "must provide at least one compute subnet when a VPC is specified";
            errs.push(FieldError::required(&path.child("computeSubnets"), detail));
        }
    } else if has_subnets {
        let detail = "must provide a VPC name when supplying subnets";
        errs.push(FieldError::required(&path.child("vpcName"), detail));
    }
    let names = Names::Ibm { power: false };
    errs.extend(service_endpoints(&p.service_endpoints, &path.child("serviceEndpoints"), names));
    errs
}

#[cfg(test)]
mod tests;
