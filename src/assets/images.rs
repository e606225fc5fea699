//! Container images: the defaults shipped in `data/images.json`, overridable by flags.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The numeric user ccm-assets' own image runs as (`scripts/image.sh` sets it in the image's
/// config; the manifests that run the image say so in their security context).
pub const USER: u32 = 65532;

/// The images the generated manifests run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Images {
    /// Each platform's CCM, by platform name.
    #[serde(rename = "cloud-controller-manager")]
    pub ccm: BTreeMap<String, String>,
    /// Per-node companions (`azure-cloud-node-manager`), by platform name.
    #[serde(rename = "cloud-node-manager")]
    pub node_manager: BTreeMap<String, String>,
    /// ccm-assets itself, for the bootstrap `render` stage (`--ccm-assets-image`).
    #[serde(rename = "ccm-assets")]
    pub assets: String,
    /// `--ccm-image`: replaces the CCM image of whatever platform is in use.
    #[serde(skip)]
    pub ccm_override: Option<String>,
}

impl Images {
    /// The CCM image for `platform` (empty when the table has none: a registry bug a unit test
    /// rules out for every platform with a CCM).
    pub fn ccm_for(&self, platform: &str) -> &str {
        self.ccm_override
            .as_deref()
            .or_else(|| self.ccm.get(platform).map(String::as_str))
            .unwrap_or_default()
    }

    /// The node-manager image for `platform`, when it has one.
    pub fn node_manager_for(&self, platform: &str) -> Option<&str> {
        self.node_manager.get(platform).map(String::as_str)
    }
}

impl Default for Images {
    fn default() -> Images {
        serde_json::from_str(include_str!("../../data/images.json"))
            .expect("data/images.json is checked by a unit test")
    }
}

#[cfg(test)]
mod tests {
    use crate::assets::platform::PLATFORMS;

    fn pinned(image: &str) -> bool {
        image.rsplit_once(':').is_some_and(|(_, tag)| !tag.is_empty() && !tag.contains('/'))
    }

    #[test]
    fn the_shipped_image_table_parses_and_pins_tags() {
        let images = super::Images::default();
        assert!(pinned(&images.assets), "{}", images.assets);
        for image in images.ccm.values().chain(images.node_manager.values()) {
            assert!(pinned(image), "{image}");
        }
    }

    #[test]
    fn one_image_holds_both_binaries_and_is_tagged_with_this_version() {
        // scripts/image.sh builds one image with ccm-assets and the OpenStack CCM, tagged
        // v<workspace version>: the table must name it for both, at this version.
        let images = super::Images::default();
        assert_eq!(images.ccm.get("openstack"), Some(&images.assets));
        let tag = format!(":v{}", env!("CARGO_PKG_VERSION"));
        assert!(images.assets.ends_with(&tag), "{} does not end in {tag}", images.assets);
    }

    #[test]
    fn every_platform_with_a_ccm_has_an_image_and_no_other_does() {
        let images = super::Images::default();
        for row in PLATFORMS {
            let spec = row.provider.ccm();
            assert_eq!(spec.is_some(), images.ccm.contains_key(row.name), "{}", row.name);
            let needs_node_manager = spec.is_some_and(|s| s.node_manager.is_some());
            assert_eq!(
                needs_node_manager,
                images.node_manager.contains_key(row.name),
                "{}",
                row.name
            );
        }
    }
}
