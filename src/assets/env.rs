//! The environment a run reads (`OS_CLOUD`, `OS_CLIENT_CONFIG_FILE`, `HOME`, the working
//! directory, each cloud's credential variables), as a value: the command line captures it once
//! from the process (`cli::resolve`); tests build one from a table.

use std::ffi::OsString;
use std::path::PathBuf;

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
}
