//! `bootstrap/secrets/ccm-kubeconfig`: a client certificate for `system:cloud-controller-manager`.
//!
//! Issued by the installer's kube-control-plane signer when `DIR/tls/` has it (its PKCS#1 RSA
//! key is re-wrapped as PKCS#8 for ring), else by a CA generated here and written beside the
//! kubeconfig. Keys and certificates are made once and kept in the state: a rerun changes
//! nothing unless the signer changes.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use super::tls::{self, Tls};
use crate::assets::cloud_provider_config as cloud_conf;
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents, state};
use ccm_formats::kubeconfig::{ClientCertificate, Kubeconfig};
use ccm_formats::pem;

/// Asset id.
pub const ID: AssetId = "bootstrap/kubeconfig";

/// The kubeconfig the static pod mounts.
pub const PATH: &str = "bootstrap/secrets/ccm-kubeconfig";
/// The generated CA's certificate (only without an installer signer).
pub const CA_PATH: &str = "bootstrap/secrets/ccm-ca.crt";

/// The user the bootstrap CCM authenticates as (bound by the ccm RBAC manifests).
pub const USER: &str = "system:cloud-controller-manager";

/// Minted material, kept in the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Minted {
    /// sha256 of the signer certificate this was issued by (`generated` for our own CA).
    issuer: String,
    /// Our CA's certificate and key, when we generated one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    own_ca: Option<(String, String)>,
    client_cert: String,
    client_key: String,
}

/// Mints (once) and writes the bootstrap kubeconfig where there is a cloud config.
#[derive(Debug)]
pub struct KubeconfigAsset;

impl Asset for KubeconfigAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Bootstrap CCM Kubeconfig"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[tls::ID, cloud_conf::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let tls: Tls = parents.get(&tls::KEY)?;
        if parents.get(&cloud_conf::KEY)?.is_none() {
            return Ok(Output::default());
        }
        let issuer = match &tls.signer {
            Some((cert, _)) => state::sha256(cert.as_bytes()),
            None => "generated".to_owned(),
        };
        let minted = match parents.previous::<Minted>() {
            Some(previous) if previous.issuer == issuer => previous,
            _ => mint(&tls, issuer)?,
        };
        if tls.localhost_ca.is_none() {
            tracing::warn!(
                "No {} in the asset directory: the bootstrap CCM's kubeconfig cannot verify the \
                 API server until one is added and the manifests are created again",
                tls::LOCALHOST_CA
            );
        }
        let kubeconfig = Kubeconfig {
            server: "https://localhost:6443",
            server_ca: tls.localhost_ca.as_deref(),
            user: USER,
            client: Some(ClientCertificate { cert: &minted.client_cert, key: &minted.client_key }),
        };
        let mut output = Output::new(&minted)?.with_file(File::secret(PATH, kubeconfig.to_yaml()?));
        if let Some((ca_cert, _)) = &minted.own_ca {
            output = output.with_file(File::new(CA_PATH, ca_cert.clone()));
        }
        Ok(output)
    }
}

fn mint(tls: &Tls, issuer_id: String) -> Result<Minted, AssetError> {
    let now = OffsetDateTime::now_utc();
    let (signer_cert, signer_key, own_ca) = match &tls.signer {
        Some((cert, key)) => {
            let key = KeyPair::from_pem(&pem::to_pkcs8(key)?)
                .map_err(|e| format!("{}: cannot load the signer key: {e}", tls::SIGNER_KEY))?;
            (cert.clone(), key, None)
        }
        None => {
            let key = KeyPair::generate()?;
            let mut params = CertificateParams::new(Vec::<String>::new())?;
            params.distinguished_name = name("ccm-assets-bootstrap-ca");
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            params.not_before = now - Duration::hours(1);
            params.not_after = now + Duration::days(365);
            let cert = params.self_signed(&key)?.pem();
            let pair = (cert.clone(), key.serialize_pem());
            (cert, key, Some(pair))
        }
    };
    let issuer = Issuer::from_ca_cert_pem(&signer_cert, signer_key)
        .map_err(|e| format!("{}: cannot use the signer certificate: {e}", tls::SIGNER_CERT))?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = name(USER);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.use_authority_key_identifier_extension = true;
    params.not_before = now - Duration::hours(1);
    // The bootstrap node lives for an hour or so; a month leaves room for a slow install.
    params.not_after = now + Duration::days(30);
    let client_cert = params.signed_by(&key, &issuer)?.pem();
    Ok(Minted { issuer: issuer_id, own_ca, client_cert, client_key: key.serialize_pem() })
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}
