//! Flags + environment + defaults → one resolved set of options; the only place env is read.
//!
//! Precedence, highest first: command-line flags, environment (`OS_CLOUD`,
//! `OS_CLIENT_CONFIG_FILE`, `HOME`, and each cloud's credential variables), install-config.yaml,
//! built-in defaults. Assets never read the environment or flags themselves (STYLE.md d5).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::assets::bootstrap::tls::{self, Tls};
use crate::assets::images::Images;
use crate::assets::openstack::{self, lookup};
use crate::installconfig::{self, Secret, clouds};

/// The environment variables ccm-assets reads, captured once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `$OS_CLOUD`: the default OpenStack cloud name.
    pub os_cloud: Option<String>,
    /// `$OS_CLIENT_CONFIG_FILE`: an explicit clouds.yaml.
    pub os_client_config_file: Option<PathBuf>,
    /// `$HOME`, for `~/.config/openstack/clouds.yaml`.
    pub home: Option<PathBuf>,
    /// The working directory, for `./clouds.yaml`.
    pub cwd: PathBuf,
    /// Each cloud's credential variables (`AWS_*`, `AZURE_*`, `GOOGLE_APPLICATION_CREDENTIALS`,
    /// `IC_API_KEY`).
    pub credentials: CredentialVars,
}

/// The credential variables of the public clouds; the secret ones never print in `Debug`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialVars {
    /// `AWS_PROFILE`.
    pub aws_profile: Option<String>,
    /// `AWS_SHARED_CREDENTIALS_FILE`.
    pub aws_shared_credentials_file: Option<PathBuf>,
    /// `AWS_ACCESS_KEY_ID`.
    pub aws_access_key_id: Option<String>,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub aws_secret_access_key: Option<Secret>,
    /// `AWS_SESSION_TOKEN` (refused: the cluster needs long-lived keys).
    pub aws_session_token: Option<Secret>,
    /// `AZURE_SUBSCRIPTION_ID`.
    pub azure_subscription_id: Option<String>,
    /// `AZURE_TENANT_ID`.
    pub azure_tenant_id: Option<String>,
    /// `AZURE_CLIENT_ID`.
    pub azure_client_id: Option<String>,
    /// `AZURE_CLIENT_SECRET`.
    pub azure_client_secret: Option<Secret>,
    /// `GOOGLE_APPLICATION_CREDENTIALS`: a service-account key file.
    pub google_application_credentials: Option<PathBuf>,
    /// `IC_API_KEY`: the IBM Cloud API key.
    pub ic_api_key: Option<Secret>,
}

impl Env {
    /// Reads the process environment. An empty variable counts as unset, as in openstacksdk.
    pub fn from_process() -> std::io::Result<Env> {
        Ok(Env::from_vars(|name| std::env::var_os(name), std::env::current_dir()?))
    }

    /// Builds from a lookup function (tests pass a table).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>, cwd: PathBuf) -> Env {
        let get = |name: &str| var(name).filter(|v| !v.is_empty());
        let text = |name: &str| get(name).map(|v| v.to_string_lossy().into_owned());
        let secret = |name: &str| text(name).map(Secret::new);
        let credentials = CredentialVars {
            aws_profile: text("AWS_PROFILE"),
            aws_shared_credentials_file: get("AWS_SHARED_CREDENTIALS_FILE").map(PathBuf::from),
            aws_access_key_id: text("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key: secret("AWS_SECRET_ACCESS_KEY"),
            aws_session_token: secret("AWS_SESSION_TOKEN"),
            azure_subscription_id: text("AZURE_SUBSCRIPTION_ID"),
            azure_tenant_id: text("AZURE_TENANT_ID"),
            azure_client_id: text("AZURE_CLIENT_ID"),
            azure_client_secret: secret("AZURE_CLIENT_SECRET"),
            google_application_credentials: get("GOOGLE_APPLICATION_CREDENTIALS")
                .map(PathBuf::from),
            ic_api_key: secret("IC_API_KEY"),
        };
        Env {
            os_cloud: text("OS_CLOUD"),
            os_client_config_file: get("OS_CLIENT_CONFIG_FILE").map(PathBuf::from),
            home: get("HOME").map(PathBuf::from),
            cwd,
            credentials,
        }
    }

    /// Defaults the install-config takes from the environment.
    pub fn install_config_defaults(&self) -> installconfig::Defaults {
        installconfig::Defaults { os_cloud: self.os_cloud.clone() }
    }

    /// Where to look for clouds.yaml, in order.
    pub fn clouds_search(&self) -> clouds::SearchEnv {
        clouds::SearchEnv {
            client_config_file: self.os_client_config_file.clone(),
            cwd: self.cwd.clone(),
            home: self.home.clone(),
        }
    }
}

/// The file name of the install-config inside an asset directory.
pub const INSTALL_CONFIG: &str = "install-config.yaml";

/// The install-config path inside `dir`.
pub fn install_config_path(dir: &Path) -> PathBuf {
    dir.join(INSTALL_CONFIG)
}

/// Flags over the built-in image table.
pub fn images(ccm: Option<String>, assets: Option<String>) -> Images {
    let defaults = Images::default();
    Images { ccm_override: ccm, assets: assets.unwrap_or(defaults.assets), ..defaults }
}

/// How assets ask the cloud: not at all with `--offline`.
pub fn lookup(offline: bool) -> Box<dyn lookup::Lookup> {
    if offline { Box::new(lookup::Offline) } else { Box::new(lookup::Online::default()) }
}

/// A CA file named by `cacert` that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}: cloud {cloud:?}: cannot read its cacert {}", path.display())]
pub struct CaError {
    file: String,
    cloud: String,
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// The selected cloud with its CA bundle read (a relative `cacert` is relative to the working
/// directory, as openstacksdk has it).
pub fn cloud(selected: clouds::SelectedCloud) -> Result<openstack::Cloud, CaError> {
    let clouds::SelectedCloud { name, file, entry, .. } = selected;
    let ca_bundle = match entry.cacert.as_deref().filter(|c| !c.is_empty()) {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|source| CaError {
            file: file.display().to_string(),
            cloud: name.clone(),
            path: PathBuf::from(path),
            source,
        })?),
        None => None,
    };
    Ok(openstack::Cloud { name, entry, ca_bundle })
}

/// The installer's TLS files in `DIR/tls/`, each optional; the signer needs both halves.
pub fn tls(dir: &Path) -> anyhow::Result<Tls> {
    use anyhow::Context as _;
    let read = |rel: &str| -> anyhow::Result<Option<String>> {
        crate::files::if_exists(std::fs::read_to_string(dir.join(rel)))
            .with_context(|| format!("could not read {}", dir.join(rel).display()))
    };
    let signer = match (read(tls::SIGNER_CERT)?, read(tls::SIGNER_KEY)?) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => anyhow::bail!(
            "{} and {} must be given together (found only one)",
            tls::SIGNER_CERT,
            tls::SIGNER_KEY
        ),
    };
    Ok(Tls { signer, localhost_ca: read(tls::LOCALHOST_CA)? })
}

/// Validates `--infra-id`: what the installer would generate, so resources get valid names.
pub fn parse_infra_id(value: &str) -> Result<String, String> {
    let ok_chars = value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let ok_ends = !value.starts_with('-') && !value.ends_with('-');
    if value.is_empty() || value.len() > 27 || !ok_chars || !ok_ends {
        return Err(format!(
            "{value:?} is not a valid infrastructure ID: use 1 to 27 lowercase letters, digits \
             and '-', starting and ending with a letter or digit"
        ));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        let table: Vec<(String, OsString)> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), OsString::from(v))).collect();
        Env::from_vars(
            |name| table.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            PathBuf::from("/work"),
        )
    }

    #[test]
    fn environment_feeds_defaults_and_search_in_one_place() {
        let e = env(&[
            ("OS_CLOUD", "mycloud"),
            ("OS_CLIENT_CONFIG_FILE", "/x/clouds.yaml"),
            ("HOME", "/h"),
        ]);
        assert_eq!(e.install_config_defaults().os_cloud.as_deref(), Some("mycloud"));
        let search = e.clouds_search();
        assert_eq!(search.client_config_file, Some(PathBuf::from("/x/clouds.yaml")));
        assert_eq!(search.cwd, PathBuf::from("/work"));
        assert_eq!(search.home, Some(PathBuf::from("/h")));
    }

    #[test]
    fn empty_variables_count_as_unset() {
        let e = env(&[("OS_CLOUD", ""), ("OS_CLIENT_CONFIG_FILE", "")]);
        assert_eq!(e.os_cloud, None);
        assert_eq!(e.os_client_config_file, None);
    }

    #[test]
    fn infra_id_must_look_like_a_generated_one() {
        assert_eq!(parse_infra_id("demo-x7k2p"), Ok("demo-x7k2p".to_owned()));
        for bad in ["", "Demo-x", "-a", "a-", "a_b", &"a".repeat(28)] {
            assert!(parse_infra_id(bad).is_err(), "{bad:?} accepted");
        }
    }
}
