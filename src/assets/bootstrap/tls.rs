//! The installer's TLS material in `DIR/tls/`, when present: the signer the bootstrap CCM's
//! client certificate is issued by, and the CA bundle that verifies the local API server.

use serde::{Deserialize, Serialize};

use crate::graph::{Asset, AssetError, AssetId, Key, Output, Parents};

/// Asset id.
pub const ID: AssetId = "bootstrap/tls";
/// [`ID`] with its content type, for `Parents::get`.
pub const KEY: Key<Tls> = Key::new(ID);

/// The signer's certificate, relative to the asset directory.
pub const SIGNER_CERT: &str = "tls/kube-control-plane-signer.crt";
/// The signer's key.
pub const SIGNER_KEY: &str = "tls/kube-control-plane-signer.key";
/// The CA bundle for `https://localhost:6443`.
pub const LOCALHOST_CA: &str = "tls/kube-apiserver-localhost-ca-bundle.crt";

/// What was found (the content holds a private key: the state file is 0600).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tls {
    /// PEM certificate and key of the installer's kube-control-plane signer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<(String, String)>,
    /// PEM CA bundle of the API server's localhost serving certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localhost_ca: Option<String>,
}

/// Holds what the command read from `DIR/tls/`.
#[derive(Debug)]
pub struct TlsAsset {
    tls: Tls,
}

impl TlsAsset {
    /// Wraps the files read.
    pub fn new(tls: Tls) -> TlsAsset {
        TlsAsset { tls }
    }
}

impl Asset for TlsAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Installer TLS Material"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[]
    }
    fn generate(&self, _: &Parents<'_>) -> Result<Output, AssetError> {
        Output::new(&self.tls)
    }
}
