//! `platform.azure` as the installer's `pkg/types/azure/validation` checks the fields the
//! generator reads: region, cloud name and ARM endpoint, the existing virtual network and its
//! subnets and resource group, and `userTags` (the Infrastructure's `resourceTags`).
//! See: issue 19.

use std::collections::BTreeMap;

use super::field::{FieldError, Path};
use super::rules::required;
use crate::installconfig::types::{AzureCloudName, AzurePlatform};

/// At most this many `userTags` (openshift/api's limit).
const MAX_USER_TAGS: usize = 10;

/// `platform.azure` at `path`.
pub(crate) fn check(p: &AzurePlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let detail = "region should be set to one of the supported Azure regions";
    required(&mut errs, &p.region, &path.child("region"), detail);
    errs.extend(virtual_network(p, path));
    let cloud = p.cloud_name.clone().unwrap_or(AzureCloudName::Public);
    if let AzureCloudName::Other(value) = &cloud {
        let mut known = AzureCloudName::KNOWN.to_vec();
        known.sort_unstable();
        errs.push(FieldError::not_supported(&path.child("cloudName"), value, &known));
    }
    if cloud != AzureCloudName::Public && !p.user_tags.is_empty() {
        let detail = "userTags support is for AzurePublicCloud only";
        errs.push(FieldError::forbidden(&path.child("userTags"), detail));
    }
    errs.extend(user_tags(&p.user_tags, &path.child("userTags")));
    let arm_endpoint = p.arm_endpoint.as_deref().unwrap_or("");
    if cloud == AzureCloudName::Stack {
        let detail = "ARM endpoint must be set when installing on Azure Stack";
        required(&mut errs, arm_endpoint, &path.child("armEndpoint"), detail);
    } else if !arm_endpoint.is_empty() {
        // The installer reports a value that must not be set as `Required`.
        let detail = format!("ARM endpoint must not be set when the cloud name is {cloud}");
        errs.push(FieldError::required(&path.child("armEndpoint"), detail));
    }
    errs
}

/// An existing virtual network needs both subnets and its resource group; subnets need both.
fn virtual_network(p: &AzurePlatform, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let vnet = p.virtual_network.as_deref().unwrap_or("");
    let compute = p.compute_subnet.as_deref().unwrap_or("");
    let control_plane = p.control_plane_subnet.as_deref().unwrap_or("");
    let group = p.network_resource_group_name.as_deref().unwrap_or("");
    let group_path = path.child("networkResourceGroupName");
    if !vnet.is_empty() {
        let detail = "must provide a compute subnet when a virtual network is specified";
        required(&mut errs, compute, &path.child("computeSubnet"), detail);
        let detail = "must provide a control plane subnet when a virtual network is specified";
        required(&mut errs, control_plane, &path.child("controlPlaneSubnet"), detail);
        let detail = "must provide a network resource group when a virtual network is specified";
        required(&mut errs, group, &group_path, detail);
    }
    if !compute.is_empty() || !control_plane.is_empty() {
        let detail = "must provide a virtual network when supplying subnets";
        required(&mut errs, vnet, &path.child("virtualNetwork"), detail);
        let detail = "must provide a network resource group when supplying subnets";
        required(&mut errs, group, &group_path, detail);
    }
    errs
}

/// `userTags`: at most [`MAX_USER_TAGS`], no two keys equal ignoring case, each checked by
/// [`tag`] and reported at `userTags[<key>]` with the value.
fn user_tags(tags: &BTreeMap<String, String>, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if tags.len() > MAX_USER_TAGS {
        errs.push(FieldError::too_many(path, tags.len(), MAX_USER_TAGS));
    }
    let mut folded: BTreeMap<String, usize> = BTreeMap::new();
    for key in tags.keys() {
        *folded.entry(key.to_uppercase()).or_default() += 1;
    }
    let duplicates: Vec<String> = folded
        .iter()
        .filter(|(_, count)| **count > 1)
        .map(|(key, count)| format!("\"{key}\" matches {count} keys"))
        .collect();
    if !duplicates.is_empty() {
        let detail = format!("found duplicate tag keys: {}", duplicates.join(", "));
        errs.push(FieldError::forbidden(path, detail));
    }
    for (key, value) in tags {
        if let Err(detail) = tag(key, value) {
            errs.push(FieldError::invalid(&path.key(key), value, detail));
        }
    }
    errs
}

/// The installer's `validateTag`: key `^[a-zA-Z]([0-9A-Za-z_.-]{0,126}[0-9A-Za-z_])?$`, value
/// `^[0-9A-Za-z_.=+-@]{1,256}$` (`+-@` is a range), then no reserved key prefix.
fn tag(key: &str, value: &str) -> Result<(), &'static str> {
    let bytes = key.as_bytes();
    let key_ok = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.len() <= 128
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && bytes.last().is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    if !key_ok {
        return Err(
            "key is invalid or contains invalid characters: key can have a maximum of 128 characters, cannot be empty and must begin with a letter, end with a letter, number or underscore, and must contain only alphanumeric characters and the following special characters `_ . -`",
        );
    }
    let value_ok = !value.is_empty()
        && value.len() <= 256
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'=' | b'+'..=b'@'));
    if !value_ok {
        return Err(
            "value is invalid or contains invalid characters: value can have a maximum of 256 characters, cannot be empty and must contain only alphanumeric characters and the following special characters `_ + , - . / : ; < = > ? @`",
        );
    }
    let lower = key.to_ascii_lowercase();
    let reserved = ["kubernetes.io", "openshift.io", "microsoft", "azure", "windows"];
    if lower == "name" || reserved.iter().any(|prefix| lower.starts_with(prefix)) {
        return Err("key contains restricted prefix");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
