//! Per-platform checks: the fields each platform requires and the values it supports.

use std::collections::BTreeMap;

use super::field::{FieldError, Path};
use super::uri;
use crate::installconfig::types::{
    AwsPlatform, CloudControllerManager, ExternalPlatform, IbmCloudPlatform, IbmService,
    InstallConfig, IpFamily, LoadBalancer, LoadBalancerType, Platform, ServiceEndpoint,
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

pub(crate) fn required(errs: &mut Vec<FieldError>, value: &str, at: &Path, detail: &str) {
    if value.is_empty() {
        errs.push(FieldError::required(at, detail));
    }
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

/// `loadBalancer.type` under `path` when it is neither `OpenShiftManagedDefault` nor
/// `UserManaged` (vSphere's and Nutanix's wording).
pub(crate) fn load_balancer_type(lb: Option<&LoadBalancer>, path: &Path) -> Option<FieldError> {
    let Some(LoadBalancerType::Other(value)) = lb.and_then(|lb| lb.kind.as_ref()) else {
        return None;
    };
    let at = path.child("loadBalancer").child("type");
    Some(FieldError::invalid(&at, value, "invalid load balancer type"))
}

/// What a service endpoint's `name` may be. The Infrastructure CRD holds the overrides as
/// given, so a name it would reject is refused here, before any manifest is written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Names {
    /// Anything but empty (GCP: the Infrastructure does not carry the overrides).
    Any,
    /// AWS service IDs: `^[a-z0-9-]+$` (`ec2`, `elasticloadbalancing`).
    LowercaseId,
    /// One of openshift/api's IBM service names, spelled exactly; `Power` only on PowerVS.
    Ibm {
        /// PowerVS's list, which adds `Power`.
        power: bool,
    },
}

impl Names {
    fn check(self, name: &str, at: &Path) -> Option<FieldError> {
        match self {
            Names::Any => None,
            Names::LowercaseId => {
                let ok =
                    name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
                let detail = "must be an AWS service ID: lowercase letters, digits and '-' (ec2, elasticloadbalancing)";
                (!ok).then(|| FieldError::invalid(at, name, detail))
            }
            Names::Ibm { power } => {
                let known: Vec<&str> = IbmService::ALL
                    .iter()
                    .filter(|s| power || **s != IbmService::Power)
                    .map(|s| s.as_str())
                    .collect();
                (!known.contains(&name)).then(|| FieldError::not_supported(at, name, &known))
            }
        }
    }
}

/// Endpoint overrides: a known service name and a valid absolute URL each, one per name.
pub(crate) fn service_endpoints(
    endpoints: &[ServiceEndpoint],
    path: &Path,
    names: Names,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeMap::new();
    for (i, endpoint) in endpoints.iter().enumerate() {
        let at = path.index(i);
        // The installer words AWS's and IBM Cloud's duplicates this way, naming the first.
        let installer_wording = matches!(names, Names::LowercaseId | Names::Ibm { power: false });
        let name = endpoint.name.as_str();
        if name.is_empty() {
            errs.push(FieldError::required(&at.child("name"), "must specify the service name"));
        } else if let Some(first) = seen.get(name).filter(|_| installer_wording) {
            let detail = format!(
                "duplicate service endpoint not allowed for {name}, service endpoint already defined at {}",
                path.index(*first)
            );
            errs.push(FieldError::invalid(&at.child("name"), name, detail));
        } else if seen.contains_key(name) {
            errs.push(FieldError::duplicate(&at.child("name"), name));
        } else {
            seen.insert(name, i);
            errs.extend(names.check(name, &at.child("name")));
        }
        let url = match names {
            Names::LowercaseId => uri::aws_service_url(&endpoint.url),
            Names::Ibm { power: true } => uri::powervs_service_url(&endpoint.url),
            // Not yet the installer's https-only IBM Cloud rule: the IAM lookup's test
            // server speaks plain HTTP. See: issue 19.
            _ => uri::absolute(&endpoint.url),
        };
        if let Err(detail) = url {
            errs.push(FieldError::invalid(&at.child("url"), &endpoint.url, detail));
        }
    }
    errs
}

#[cfg(test)]
mod tests;
