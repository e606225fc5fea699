//! IBM Cloud VPC regions and their zones: the offline stand-in for the VPC API's region list.
//!
//! The installer asks the VPC API (`ListRegionZones`) on IBM Cloud and hard-codes the same
//! list for PowerVS (`pkg/types/powervs/vpc_regions.go`, "there is no API to query these").
//! Sources: that file, plus `eu-es` (Madrid) from IBM Cloud's "Creating a VPC in a different
//! region" docs, which list the multizone regions as `<region>-1`, `-2` and `-3`.

/// Every multizone VPC region with its zones, sorted by region.
pub const VPC_REGIONS: &[(&str, &[&str])] = &[
    ("au-syd", &["au-syd-1", "au-syd-2", "au-syd-3"]),
    ("br-sao", &["br-sao-1", "br-sao-2", "br-sao-3"]),
    ("ca-tor", &["ca-tor-1", "ca-tor-2", "ca-tor-3"]),
    ("eu-de", &["eu-de-1", "eu-de-2", "eu-de-3"]),
    ("eu-es", &["eu-es-1", "eu-es-2", "eu-es-3"]),
    ("eu-gb", &["eu-gb-1", "eu-gb-2", "eu-gb-3"]),
    ("jp-osa", &["jp-osa-1", "jp-osa-2", "jp-osa-3"]),
    ("jp-tok", &["jp-tok-1", "jp-tok-2", "jp-tok-3"]),
    ("us-east", &["us-east-1", "us-east-2", "us-east-3"]),
    ("us-south", &["us-south-1", "us-south-2", "us-south-3"]),
];

/// The zones of VPC region `region`, or `None` for a region the table does not know.
pub fn zones(region: &str) -> Option<&'static [&'static str]> {
    VPC_REGIONS.iter().find(|(name, _)| *name == region).map(|(_, zones)| *zones)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_every_zone_is_named_after_its_region() {
        assert!(VPC_REGIONS.windows(2).all(|w| w[0].0 < w[1].0));
        for (region, zones) in VPC_REGIONS {
            let expected: Vec<String> = (1..=3).map(|n| format!("{region}-{n}")).collect();
            assert_eq!(*zones, expected.as_slice(), "{region}");
        }
        assert_eq!(zones("eu-es"), Some(&["eu-es-1", "eu-es-2", "eu-es-3"][..]));
        assert_eq!(zones("mars-1"), None);
    }
}
