//! `platform.gcp` as the installer's `pkg/types/gcp/validation` checks the fields the
//! generator reads: region, the existing VPC and its subnets, a shared VPC's project and the
//! credentials mode it needs, and `userLabels` (the Infrastructure's `resourceLabels`).
//!
//! `projectID` is not checked there (the installer asks the cloud); we require it because
//! the cloud config cannot be written without it. See: issue 19.

use serde_json::Value;

use super::field::{FieldError, Path};
use super::rules::{Names, required, service_endpoints};
use crate::installconfig::types::{CredentialsMode, GcpPlatform};

/// At most this many `userLabels` (openshift/api's limit).
const MAX_USER_LABELS: usize = 32;

/// `platform.gcp` at `path`; `credentials_mode` is the install-config's.
pub(crate) fn check(
    p: &GcpPlatform,
    credentials_mode: Option<&CredentialsMode>,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    required(&mut errs, &p.project_id, &path.child("projectID"), "must provide a GCP project ID");
    required(&mut errs, &p.region, &path.child("region"), "must provide a region");
    let network = p.network.as_deref().unwrap_or("");
    if !p.network_project_id.as_deref().unwrap_or("").is_empty() {
        let detail = "must provide a network when a networkProjectID is specified";
        required(&mut errs, network, &path.child("network"), detail);
        // The installer's path: under the platform, though the field is top-level.
        if !matches!(credentials_mode, Some(CredentialsMode::Manual | CredentialsMode::Passthrough))
        {
            let mode = credentials_mode.map_or("", CredentialsMode::as_str);
            let at = path.child("credentialsMode");
            errs.push(FieldError::not_supported(&at, mode, &["Manual", "Passthrough"]));
        }
    }
    let compute = p.compute_subnet.as_deref().unwrap_or("");
    let control_plane = p.control_plane_subnet.as_deref().unwrap_or("");
    if !network.is_empty() {
        let detail = "must provide a compute subnet when a network is specified";
        required(&mut errs, compute, &path.child("computeSubnet"), detail);
        let detail = "must provide a control plane subnet when a network is specified";
        required(&mut errs, control_plane, &path.child("controlPlaneSubnet"), detail);
    }
    if (!compute.is_empty() || !control_plane.is_empty()) && network.is_empty() {
        let detail = "must provide a VPC network when supplying subnets";
        errs.push(FieldError::required(&path.child("network"), detail));
    }
    errs.extend(user_labels(p.user_labels.as_ref(), &path.child("userLabels")));
    errs.extend(service_endpoints(
        &p.service_endpoints,
        &path.child("serviceEndpoints"),
        Names::Any,
    ));
    errs
}

/// `userLabels`: a list of `{key, value}`, at most [`MAX_USER_LABELS`], each checked by
/// [`label`] and reported at `userLabels[<key>]` with the value.
fn user_labels(labels: Option<&Value>, path: &Path) -> Vec<FieldError> {
    let labels = labels.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut errs = Vec::new();
    if labels.len() > MAX_USER_LABELS {
        errs.push(FieldError::too_many(path, labels.len(), MAX_USER_LABELS));
    }
    for entry in labels {
        let text = |name: &str| entry.get(name).and_then(Value::as_str).unwrap_or("").to_owned();
        let (key, value) = (text("key"), text("value"));
        if let Err(detail) = label(&key, &value) {
            errs.push(FieldError::invalid(&path.key(&key), &value, detail));
        }
    }
    errs
}

/// The installer's `validateLabel`: key `^[a-z][0-9a-z_-]{0,62}$`, value `^[0-9a-z_-]{1,63}$`,
/// and no `kubernetes-io` / `openshift-io` prefix (any case), checked in that order.
fn label(key: &str, value: &str) -> Result<(), &'static str> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-';
    let key_ok = key.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && key.len() <= 63
        && key.bytes().all(allowed);
    if !key_ok {
        return Err(
            "label key is invalid or contains invalid characters. Label key can have a maximum of 63 characters and cannot be empty. Label key must begin with a lowercase letter, and must contain only lowercase letters, numeric characters, and the following special characters `_-`",
        );
    }
    if value.is_empty() || value.len() > 63 || !value.bytes().all(allowed) {
        return Err(
            "label value is invalid or contains invalid characters. Label value can have a maximum of 63 characters and cannot be empty. Value must contain only lowercase letters, numeric characters, and the following special characters `_-`",
        );
    }
    let lower = key.to_ascii_lowercase();
    if lower.starts_with("kubernetes-io") || lower.starts_with("openshift-io") {
        return Err(
            "label key contains restricted prefix. Label key cannot have `kubernetes-io`, `openshift-io` prefixes",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
