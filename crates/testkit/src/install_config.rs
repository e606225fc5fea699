//! The example install-configs of assets/examples as typed values: a test edits fields, not text.

use std::path::{Path, PathBuf};

use ccm_assets::installconfig::InstallConfig;

/// `assets/examples/<platform>/install-config.yaml`, as written (no defaults applied).
pub fn example(platform: &str) -> InstallConfig {
    let path = example_dir(platform).join("install-config.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The example directory of `platform` (its install-config.yaml and, on OpenStack, clouds.yaml).
pub fn example_dir(platform: &str) -> PathBuf {
    crate::repo().join("assets/examples").join(platform)
}

/// The OpenStack example pointed at `cloud` of a clouds.yaml and at `external_network`.
pub fn openstack(cloud: &str, external_network: &str) -> InstallConfig {
    let mut config = example("openstack");
    let openstack = config.platform.openstack.as_mut().expect("the example is OpenStack");
    openstack.cloud = cloud.to_owned();
    openstack.external_network = Some(external_network.to_owned());
    config
}

/// `config` as install-config.yaml text (the one YAML writer).
pub fn text(config: &InstallConfig) -> String {
    ccm_formats::yaml::to_yaml(config).expect("an install-config serializes")
}

/// Writes `config` as `dir/install-config.yaml` and returns the path.
pub fn write(dir: &Path, config: &InstallConfig) -> PathBuf {
    let text = text(config);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let path = dir.join("install-config.yaml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}
