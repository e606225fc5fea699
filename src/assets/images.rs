//! Container images: the defaults shipped in `data/images.json`, overridable by flags.

use serde::Deserialize;

/// The images the generated manifests run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Images {
    /// The OpenStack CCM (`--ccm-image`).
    #[serde(rename = "openstack-cloud-controller-manager")]
    pub ccm: String,
    /// ccm-assets itself, for the bootstrap `render` stage (`--ccm-assets-image`).
    #[serde(rename = "ccm-assets")]
    pub assets: String,
}

impl Default for Images {
    fn default() -> Images {
        serde_json::from_str(include_str!("../../data/images.json"))
            .expect("data/images.json is checked by a unit test")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_image_table_parses_and_pins_tags() {
        let images = super::Images::default();
        for image in [&images.ccm, &images.assets] {
            assert!(image.rsplit_once(':').is_some_and(|(_, tag)| !tag.is_empty()), "{image}");
        }
    }
}
