//! Who we are to Keystone, where it is, and how to trust it: the values of a cloud.conf
//! `[Global]` section or of a clouds.yaml entry, in one shape.

use std::collections::BTreeMap;

use ccm_formats::clouds_yaml::CloudEntry;
use secrecy::SecretString;

/// Where the values came from: errors name each key as that source spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// cloud.conf `[Global]` (`auth-url`, `ca-file`, `tls-insecure`, …), the CCM's.
    #[default]
    CloudConf,
    /// A clouds.yaml entry (`auth_url`, `cacert`, `verify`, …), the generator's.
    CloudsYaml,
}

impl Origin {
    /// `key`, given in its cloud.conf form, as this source names it.
    pub fn key(self, key: &str) -> String {
        match (self, key) {
            (Origin::CloudConf, _) => key.to_owned(),
            (Origin::CloudsYaml, "ca-file") => "cacert".to_owned(),
            (Origin::CloudsYaml, "cert-file") => "cert".to_owned(),
            (Origin::CloudsYaml, "key-file") => "key".to_owned(),
            (Origin::CloudsYaml, "tls-insecure") => "verify".to_owned(),
            (Origin::CloudsYaml, "os-endpoint-type") => "interface".to_owned(),
            (Origin::CloudsYaml, _) => key.replace('-', "_"),
        }
    }

    /// How a TLS error names the settings that fix it.
    pub(crate) fn trust(self) -> ccm_tls_explain::Settings {
        match self {
            Origin::CloudConf => ccm_tls_explain::Settings {
                ca: "set [Global] ca-file (cacert in clouds.yaml) to",
                insecure: Some("tls-insecure = true"),
            },
            Origin::CloudsYaml => ccm_tls_explain::Settings {
                ca: "set cacert in clouds.yaml (or additionalTrustBundle in install-config.yaml) to",
                insecure: Some("verify: false in clouds.yaml"),
            },
        }
    }
}

/// Keystone endpoint interface (`os-endpoint-type`, clouds.yaml `interface`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interface {
    /// `public` (the default).
    #[default]
    Public,
    /// `internal`.
    Internal,
    /// `admin`.
    Admin,
}

impl Interface {
    /// Parses `public`/`internal`/`admin` (also with an `URL` suffix, as clouds.yaml allows).
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        match lower.trim_end_matches("url") {
            "" | "public" => Some(Self::Public),
            "internal" => Some(Self::Internal),
            "admin" => Some(Self::Admin),
            _ => None,
        }
    }
}

/// Credentials and endpoint selection. Secrets are [`SecretString`]s: `Debug` never shows them.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// Where these came from (names keys in errors).
    pub origin: Origin,
    /// The clouds.yaml entry's name, for messages.
    pub cloud: Option<String>,
    /// clouds.yaml `auth_type` (`password`, `v3token`, `v3applicationcredential`, …); without
    /// it the method follows from what is set: an application credential secret, else a
    /// token, else a password.
    pub auth_type: Option<String>,
    /// Keystone v3 URL.
    pub auth_url: Option<String>,
    /// User ID.
    pub user_id: Option<String>,
    /// User name.
    pub username: Option<String>,
    /// Password.
    pub password: Option<SecretString>,
    /// Project ID (`tenant-id`).
    pub project_id: Option<String>,
    /// Project name (`tenant-name`).
    pub project_name: Option<String>,
    /// Domain ID for user and project.
    pub domain_id: Option<String>,
    /// Domain name for user and project.
    pub domain_name: Option<String>,
    /// Project domain ID (`tenant-domain-id`).
    pub project_domain_id: Option<String>,
    /// Project domain name (`tenant-domain-name`).
    pub project_domain_name: Option<String>,
    /// User domain ID.
    pub user_domain_id: Option<String>,
    /// User domain name.
    pub user_domain_name: Option<String>,
    /// A Keystone token.
    pub token: Option<SecretString>,
    /// Application credential ID.
    pub application_credential_id: Option<String>,
    /// Application credential name.
    pub application_credential_name: Option<String>,
    /// Application credential secret.
    pub application_credential_secret: Option<SecretString>,
    /// Trust ID (trusts are not supported; refused at login).
    pub trust_id: Option<String>,
    /// Region.
    pub region: Option<String>,
    /// Endpoint interface.
    pub interface: Interface,
    /// `<service>_endpoint_override` URLs by service type (clouds.yaml), used instead of the
    /// catalog's.
    pub endpoint_overrides: BTreeMap<String, String>,
    /// CA bundle path.
    pub ca_file: Option<String>,
    /// A CA bundle (PEM) trusted beside `ca-file`: the CCM's credentials Secret's `cacert`, the
    /// generator's `cacert` file as read.
    pub ca_bundle: Option<String>,
    /// Another CA bundle (PEM) trusted too: the install-config's `additionalTrustBundle`.
    pub trust_bundle: Option<String>,
    /// Client certificate path.
    pub cert_file: Option<String>,
    /// Client key path.
    pub key_file: Option<String>,
    /// Skip TLS verification.
    pub tls_insecure: bool,
}

impl Credentials {
    /// The values of clouds.yaml entry `name` (`cacert` as `ca_file`, a path; `verify: false` as
    /// `tls_insecure`; `*_endpoint_override` keys as overrides); an `interface` that is not
    /// public, internal or admin is an error naming it.
    pub fn from_clouds_entry(name: &str, entry: &CloudEntry) -> Result<Credentials, String> {
        let auth = &entry.auth;
        let secret = |v: &Option<String>| v.clone().map(SecretString::from);
        let interface = match entry.interface.as_deref() {
            None => Interface::default(),
            Some(text) => Interface::parse(text)
                .ok_or_else(|| format!("interface: {text:?} is not public, internal or admin"))?,
        };
        let mut endpoint_overrides = BTreeMap::new();
        for (key, value) in &entry.other {
            let Some(service) = key.strip_suffix("_endpoint_override") else { continue };
            let url = value.as_str().ok_or_else(|| format!("{key} is not a URL"))?;
            endpoint_overrides.insert(service.to_owned(), url.to_owned());
        }
        Ok(Credentials {
            origin: Origin::CloudsYaml,
            cloud: Some(name.to_owned()),
            auth_type: entry.auth_type.clone(),
            auth_url: auth.auth_url.clone(),
            user_id: auth.user_id.clone(),
            username: auth.username.clone(),
            password: secret(&auth.password),
            project_id: auth.project_id.clone(),
            project_name: auth.project_name.clone(),
            domain_id: auth.domain_id.clone(),
            domain_name: auth.domain_name.clone(),
            project_domain_id: auth.project_domain_id.clone(),
            project_domain_name: auth.project_domain_name.clone(),
            user_domain_id: auth.user_domain_id.clone(),
            user_domain_name: auth.user_domain_name.clone(),
            token: secret(&auth.token),
            application_credential_id: auth.application_credential_id.clone(),
            application_credential_name: auth.application_credential_name.clone(),
            application_credential_secret: secret(&auth.application_credential_secret),
            trust_id: None,
            region: entry.region_name.clone(),
            interface,
            endpoint_overrides,
            ca_file: entry.cacert.clone().filter(|c| !c.is_empty()),
            ca_bundle: None,
            trust_bundle: None,
            cert_file: entry.cert.clone(),
            key_file: entry.key.clone(),
            tls_insecure: entry.verify == Some(false),
        })
    }

    /// `key` (its cloud.conf form) as the source of these credentials names it.
    pub(crate) fn key(&self, key: &str) -> String {
        self.origin.key(key)
    }
}
