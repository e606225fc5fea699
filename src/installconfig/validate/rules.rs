//! Checks that several platforms' validators share: a required field, `loadBalancer.type`, and
//! service endpoint overrides. Below `platforms` (which dispatches to each platform's checks) and
//! the per-platform modules, so that neither reaches back up into the other.

use std::collections::BTreeMap;

use super::field::{FieldError, Path};
use super::uri;
use crate::installconfig::types::{IbmService, LoadBalancer, LoadBalancerType, ServiceEndpoint};

/// A `required` error at `at` when `value` is empty.
pub(crate) fn required(errs: &mut Vec<FieldError>, value: &str, at: &Path, detail: &str) {
    if value.is_empty() {
        errs.push(FieldError::required(at, detail));
    }
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
