//! Credentials from clouds.yaml (`use-clouds`, `clouds-file`, `cloud`, or a Secret), cloud.conf values winning.

use std::path::{Path, PathBuf};

use ccm_formats::clouds_yaml::{CloudEntry, CloudsFile};

use super::{Checked, Diagnostic, Severity, Values};

/// The cloud read when neither `[Global] cloud` nor the Secret names one.
pub(crate) const DEFAULT_CLOUD: &str = "openstack";

/// Where clouds.yaml is looked for when `clouds-file` is empty (gophercloud's order, after
/// `OS_CLIENT_CONFIG_FILE`, which the caller passes in).
pub fn search_paths(env_file: Option<PathBuf>, home: Option<PathBuf>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = env_file.into_iter().collect();
    paths.push(PathBuf::from("clouds.yaml"));
    if let Some(home) = home {
        paths.push(home.join(".config/openstack/clouds.yaml"));
    }
    paths.push(PathBuf::from("/etc/openstack/clouds.yaml"));
    paths
}

/// Reads the `cloud` entry of clouds.yaml text.
pub fn entry_from_text(text: &str, cloud: &str, origin: &str) -> Result<CloudEntry, String> {
    let file: CloudsFile = serde_saphyr::from_str(text)
        .map_err(|e| format!("{origin}: not a valid clouds.yaml: {e}"))?;
    let names = file.names().join(", ");
    file.clouds
        .get(cloud)
        .cloned()
        .ok_or_else(|| format!("{origin}: has no cloud {cloud:?} (clouds: {names})"))
}

/// Fills empty `[Global]` keys from a clouds.yaml entry (cloud.conf wins, as upstream's `replaceEmpty`).
pub fn merge_entry(values: &mut Values, entry: &CloudEntry) {
    let auth = &entry.auth;
    let pairs: [(&'static str, Option<&str>); 20] = [
        ("auth-url", auth.auth_url.as_deref()),
        ("username", auth.username.as_deref()),
        ("password", auth.password.as_deref()),
        ("user-id", auth.user_id.as_deref()),
        ("tenant-id", auth.project_id.as_deref()),
        ("tenant-name", auth.project_name.as_deref()),
        ("domain-id", auth.domain_id.as_deref()),
        ("domain-name", auth.domain_name.as_deref()),
        ("user-domain-id", auth.user_domain_id.as_deref()),
        ("user-domain-name", auth.user_domain_name.as_deref()),
        ("tenant-domain-id", auth.project_domain_id.as_deref()),
        ("tenant-domain-name", auth.project_domain_name.as_deref()),
        ("application-credential-id", auth.application_credential_id.as_deref()),
        ("application-credential-name", auth.application_credential_name.as_deref()),
        ("application-credential-secret", auth.application_credential_secret.as_deref()),
        ("token", auth.token.as_deref()),
        ("region", entry.region_name.as_deref()),
        ("os-endpoint-type", entry.interface.as_deref()),
        ("ca-file", entry.cacert.as_deref()),
        ("cert-file", entry.cert.as_deref()),
    ];
    for (key, value) in pairs {
        values.set_if_empty("Global", key, value);
    }
    values.set_if_empty("Global", "key-file", entry.key.as_deref());
    if entry.verify == Some(false) && !values.is_set("Global", "tls-insecure") {
        values.set("Global", "tls-insecure", "true");
    }
}

/// Applies `use-clouds`: reads the file (given, or the first found in `search`) and merges the
/// entry. Problems become error diagnostics naming the file.
pub(crate) fn apply_use_clouds(checked: &mut Checked, search: &[PathBuf]) {
    let values = &checked.values;
    if values.get("Global", "use-clouds").is_none_or(|v| v != "true") {
        return;
    }
    let cloud =
        values.get("Global", "cloud").filter(|c| !c.is_empty()).unwrap_or(DEFAULT_CLOUD).to_owned();
    let path = match values.get("Global", "clouds-file").filter(|f| !f.is_empty()) {
        Some(file) => Some(PathBuf::from(file)),
        None => search.iter().find(|p| p.is_file()).cloned(),
    };
    let result = match path {
        None => Err(format!(
            "[Global] use-clouds: no clouds.yaml found (looked in {})",
            search.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
        Some(path) => read_entry(&path, &cloud),
    };
    match result {
        Ok(entry) => merge_entry(&mut checked.values, &entry),
        Err(message) => checked.diagnostics.push(Diagnostic { severity: Severity::Error, message }),
    }
}

fn read_entry(path: &Path, cloud: &str) -> Result<CloudEntry, String> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("[Global] clouds-file: cannot read {origin}: {e}"))?;
    entry_from_text(&text, cloud, &origin)
}
