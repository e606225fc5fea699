//! A single-cluster, single-user kubeconfig with embedded certificates.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::yaml::{self, to_yaml};

/// What the kubeconfig holds.
#[derive(Debug)]
pub struct Kubeconfig<'a> {
    /// API server URL.
    pub server: &'a str,
    /// PEM CA bundle to verify the server with, when known.
    pub server_ca: Option<&'a str>,
    /// The user's name in the file.
    pub user: &'a str,
    /// PEM client certificate.
    pub client_cert: &'a str,
    /// PEM client key.
    pub client_key: &'a str,
}

impl Kubeconfig<'_> {
    /// The YAML text.
    pub fn to_yaml(&self) -> yaml::Result<String> {
        let mut cluster = json!({"server": self.server});
        if let Some(ca) = self.server_ca {
            cluster["certificate-authority-data"] = json!(STANDARD.encode(ca));
        }
        to_yaml(&json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": cluster}],
            "contexts": [{"name": self.user, "context": {"cluster": "local", "user": self.user}}],
            "current-context": self.user,
            "preferences": {},
            "users": [{"name": self.user, "user": {
                "client-certificate-data": STANDARD.encode(self.client_cert),
                "client-key-data": STANDARD.encode(self.client_key),
            }}],
        }))
    }
}
