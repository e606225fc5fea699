//! Credentials from the Secret named by `[Global] secret-name`/`secret-namespace`, merged over cloud.conf.
//!
//! The Secret holds `clouds.yaml` (cloud `[Global] cloud`, else `openstack`) or, as the legacy
//! in-tree provider read it, a `clouds.conf` in cloud.conf syntax. cloud.conf values win in
//! both cases, so the installer's cloud.conf (which carries no credentials) takes everything
//! from the Secret. The watch that re-reads it lives in `crate::kube::secret`.

use std::collections::BTreeMap;

use super::clouds::{DEFAULT_CLOUD, entry_from_text, merge_entry};
use super::{Checked, Values, check_text};

/// Data keys read from the Secret, in order of preference.
pub(crate) const CLOUDS_YAML_KEY: &str = "clouds.yaml";
/// The legacy key.
pub(crate) const CLOUDS_CONF_KEY: &str = "clouds.conf";
/// The CA bundle the generator writes beside clouds.yaml.
pub(crate) const CA_KEY: &str = "cacert";

/// Merges the Secret's data over `base` (cloud.conf values winning); the error names the Secret key.
pub(crate) fn merge(
    base: &Values,
    data: &BTreeMap<String, Vec<u8>>,
    origin: &str,
) -> Result<Values, String> {
    let mut values = base.clone();
    if let Some(bytes) = data.get(CLOUDS_YAML_KEY) {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| format!("{origin} key {CLOUDS_YAML_KEY}: not UTF-8"))?;
        let cloud = base.get("Global", "cloud").filter(|c| !c.is_empty()).unwrap_or(DEFAULT_CLOUD);
        let entry = entry_from_text(text, cloud, &format!("{origin} key {CLOUDS_YAML_KEY}"))?;
        merge_entry(&mut values, &entry);
        return Ok(values);
    }
    if let Some(bytes) = data.get(CLOUDS_CONF_KEY) {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| format!("{origin} key {CLOUDS_CONF_KEY}: not UTF-8"))?;
        let origin = format!("{origin} key {CLOUDS_CONF_KEY}");
        let checked: Checked =
            check_text(text, &origin).map_err(|e| crate::cloud::session::chain(&e))?;
        let errors = checked.errors();
        if !errors.is_empty() {
            return Err(format!("{origin}: {}", errors.join("; ")));
        }
        for key in super::keys::KEYS.iter().filter(|k| k.section == "Global") {
            values.set_if_empty("Global", key.name, checked.values.get("Global", key.name));
        }
        return Ok(values);
    }
    Err(format!("{origin}: has neither a {CLOUDS_YAML_KEY} nor a {CLOUDS_CONF_KEY} key"))
}
