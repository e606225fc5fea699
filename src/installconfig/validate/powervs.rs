//! `platform.powervs` as the installer's `pkg/types/powervs/validation` checks it: the zone
//! first (nothing else is checked without a known one), the region (defaulted from the zone),
//! `serviceInstanceGUID` and the service endpoints.
//!
//! The zone table is the installer's `pkg/types/powervs/powervs_regions.go` ("there is no API
//! to query these"). The installer lists the supported zones and regions in Go map order,
//! which changes from run to run; they are sorted here.

use super::field::{FieldError, Path};
use super::rules::{Names, service_endpoints};
use crate::installconfig::types::PowerVsPlatform;

/// Every PowerVS zone the installer knows, with its region, sorted by zone.
pub(crate) const ZONES: &[(&str, &str)] = &[
    ("dal10", "dal"),
    ("dal12", "dal"),
    ("eu-de-1", "eu-de"),
    ("eu-de-2", "eu-de"),
    ("lon04", "lon"),
    ("lon06", "lon"),
    ("mad02", "mad"),
    ("mad04", "mad"),
    ("osa21", "osa"),
    ("sao01", "sao"),
    ("sao04", "sao"),
    ("syd04", "syd"),
    ("syd05", "syd"),
    ("tok04", "tok"),
    ("tor01", "tor"),
    ("us-east", "us-east"),
    ("us-south", "us-south"),
    ("wdc06", "wdc"),
    ("wdc07", "wdc"),
];

/// The installer's `RegionFromZone`: the region of a known zone.
pub(crate) fn region_of(zone: &str) -> Option<&'static str> {
    ZONES.iter().find(|(name, _)| *name == zone).map(|(_, region)| *region)
}

/// The known regions, sorted and without repeats.
fn regions() -> Vec<&'static str> {
    let mut regions: Vec<&str> = ZONES.iter().map(|(_, region)| *region).collect();
    regions.sort_unstable();
    regions.dedup();
    regions
}

/// `platform.powervs` at `path`, after defaults (an empty region is the zone's).
pub(crate) fn check(p: &PowerVsPlatform, path: &Path) -> Vec<FieldError> {
    let zone_path = path.child("zone");
    if p.zone.is_empty() {
        return vec![FieldError::required(&zone_path, "zone must be specified")];
    }
    if region_of(&p.zone).is_none() {
        let zones: Vec<&str> = ZONES.iter().map(|(zone, _)| *zone).collect();
        return vec![FieldError::not_supported(&zone_path, p.zone.as_str(), &zones)];
    }
    let mut errs = Vec::new();
    let region_path = path.child("region");
    let regions = regions();
    if p.region.is_empty() {
        errs.push(FieldError::required(&region_path, "region not findable from specified zone"));
    } else if !regions.contains(&p.region.as_str()) {
        errs.push(FieldError::not_supported(&region_path, p.region.as_str(), &regions));
    }
    if let Some(guid) = p.service_instance_guid.as_deref().filter(|guid| !guid.is_empty())
        && crate::uuid::version(guid).is_none()
    {
        // The installer's path, capitalised as the Go field is.
        let at = path.child("ServiceInstanceGUID");
        errs.push(FieldError::invalid(&at, guid, "ServiceInstanceGUID must be a valid UUID"));
    }
    let names = Names::Ibm { power: true };
    errs.extend(service_endpoints(&p.service_endpoints, &path.child("serviceEndpoints"), names));
    errs
}

#[cfg(test)]
mod tests;
