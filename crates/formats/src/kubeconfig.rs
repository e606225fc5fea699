//! A single-cluster, single-user kubeconfig, with embedded certificates when it has them.

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
    /// The user's client certificate; `None` for a server without authentication (the
    /// fake API server of the tests).
    pub client: Option<ClientCertificate<'a>>,
}

/// A PEM client certificate and its key.
#[derive(Debug)]
pub struct ClientCertificate<'a> {
    /// PEM certificate.
    pub cert: &'a str,
    /// PEM private key.
    pub key: &'a str,
}

impl Kubeconfig<'_> {
    /// The YAML text.
    pub fn to_yaml(&self) -> yaml::Result<String> {
        let mut cluster = json!({"server": self.server});
        if let Some(ca) = self.server_ca {
            cluster["certificate-authority-data"] = json!(STANDARD.encode(ca));
        }
        let user = match &self.client {
            Some(client) => json!({
                "client-certificate-data": STANDARD.encode(client.cert),
                "client-key-data": STANDARD.encode(client.key),
            }),
            None => json!({}),
        };
        to_yaml(&json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": cluster}],
            "contexts": [{"name": self.user, "context": {"cluster": "local", "user": self.user}}],
            "current-context": self.user,
            "preferences": {},
            "users": [{"name": self.user, "user": user}],
        }))
    }
}
