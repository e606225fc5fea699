//! The bootstrap node's CCM: static pod, cloud config (+ CA) and kubeconfig under `bootstrap/`.
//!
//! The static pod runs only the `cloud-node` controller, without leader election, with the
//! bootstrap kubeconfig. Most CCMs find their credentials as in the cluster (OpenStack's
//! cloud.conf keeps `secret-name`/`secret-namespace` and reads the Secret through the API);
//! a CCM that reads them from its config only (Azure) gets a `bootstrap/secrets/cloud.conf`
//! with the `kube-system` credentials Secret merged in, since a static pod cannot mount a
//! Secret. `ccm-assets render` re-derives the config from the (possibly edited)
//! cloud-provider ConfigMap and credentials Secret on the bootstrap node itself.

pub mod kubeconfig;
pub mod tls;

use serde_json::{Value, json};

use super::cloud_provider_config::{self as cloud_conf};
use super::provider::{CcmSpec, CloudProviderConfig, Provider, SecretData};
use super::{ccm, cluster_id, credentials, install_config, platform};
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "bootstrap/ccm";

/// The bootstrap cloud config.
pub const CLOUD_CONF_PATH: &str = "bootstrap/configs/cloud.conf";
/// The CA beside it, when the cloud has one.
pub const CA_PATH: &str = "bootstrap/configs/ca-bundle.pem";

/// The static pod's file for the CCM named `app`.
pub fn pod_path(app: &str) -> String {
    format!("bootstrap/manifests/{app}-pod.yaml")
}

/// The bootstrap cloud config when it holds credentials.
pub const SECRET_CLOUD_CONF_PATH: &str = "bootstrap/secrets/cloud.conf";

/// The bootstrap files, paths relative to `bootstrap/` (`configs/cloud.conf`, …), as `render`
/// writes them too: the cloud config and its CA; for a CCM reading its credentials from its
/// config, the config with `credentials` (the `kube-system` Secret's data) merged in, under
/// `secrets/`. Without credentials (`credentialsMode: Manual`) that config is written as is,
/// with a warning: the CCM will not authenticate until it is given them.
pub fn configs(
    provider: &dyn Provider,
    spec: &CcmSpec,
    content: &CloudProviderConfig,
    credentials: Option<&SecretData>,
) -> Result<Vec<File>, AssetError> {
    let conf = provider
        .bootstrap_config(&content.config)
        .map_err(|e| format!("{}: data.config: {e}", cloud_conf::PATH))?;
    let mut files = Vec::new();
    if spec.inject_credentials {
        let conf = match credentials {
            Some(data) => provider
                .config_with_credentials(&conf, data)
                .map_err(|e| format!("{}: {e}", credentials::SECRET_PATH))?,
            None => {
                tracing::warn!(
                    "No {}: the bootstrap {} starts without cloud credentials (credentialsMode: \
                     Manual); add them to {SECRET_CLOUD_CONF_PATH} on the bootstrap node",
                    credentials::SECRET_PATH,
                    spec.app
                );
                conf
            }
        };
        files.push(File::secret(relative(SECRET_CLOUD_CONF_PATH), conf));
    } else {
        files.push(File::new(relative(CLOUD_CONF_PATH), conf));
    }
    if let Some(ca) = &content.ca_bundle {
        files.push(File::new(relative(CA_PATH), ca.clone()));
    }
    Ok(files)
}

fn relative(path: &str) -> String {
    path.strip_prefix("bootstrap/").unwrap_or(path).to_owned()
}

/// Writes the static pod and the bootstrap cloud config where the platform has a CCM.
#[derive(Debug)]
pub struct BootstrapAsset {
    images: crate::assets::images::Images,
}

impl BootstrapAsset {
    /// `images` are the CCM images.
    pub fn new(images: crate::assets::images::Images) -> BootstrapAsset {
        BootstrapAsset { images }
    }
}

impl Asset for BootstrapAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Bootstrap Cloud Controller Manager"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_conf::ID, credentials::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let id: cluster_id::ClusterId = parents.get(&cluster_id::KEY)?;
        let content: Option<CloudProviderConfig> = parents.get(&cloud_conf::KEY)?;
        let creds: Option<credentials::Credentials> = parents.get(&credentials::KEY)?;
        let row = platform::of(&config)?;
        let (Some(content), Some(spec)) = (content, row.provider.ccm()) else {
            return Ok(Output::default());
        };
        let pod = static_pod(&spec, self.images.ccm_for(row.name), &id.infra_id);
        let mut output = Output::default().with_file(File::new(pod_path(spec.app), to_yaml(&pod)?));
        let creds = creds.and_then(|c| c.data);
        for mut file in configs(row.provider, &spec, &content, creds.as_ref())? {
            file.path = format!("bootstrap/{}", file.path);
            output = output.with_file(file);
        }
        Ok(output)
    }
}

/// The static pod's kubeconfig (as the node sees it).
const KUBECONFIG: &str = "/etc/kubernetes/bootstrap-secrets/ccm-kubeconfig";

fn static_pod(spec: &CcmSpec, image: &str, infra_id: &str) -> Value {
    let mut container = json!({
        "name": "cloud-controller-manager",
        "image": image,
        "args": [
            format!("--cloud-provider={}", spec.cloud_provider),
            "--controllers=cloud-node",
            "--leader-elect=false",
            format!("--kubeconfig={KUBECONFIG}"),
            // The host network: its /healthz, /readyz and /metrics on the node itself only, and
            // /metrics to whom the API server allows (without these flags upstream's CCMs find
            // no in-cluster config in a static pod and take every token as anonymous).
            "--bind-address=127.0.0.1",
            format!("--authentication-kubeconfig={KUBECONFIG}"),
            format!("--authorization-kubeconfig={KUBECONFIG}"),
            format!(
                "--cloud-config=/etc/kubernetes/bootstrap-{}/cloud.conf",
                if spec.inject_credentials { "secrets" } else { "configs" }
            ),
            format!("--cluster-name={infra_id}"),
            "--v=2",
        ],
        "resources": {"requests": {"cpu": "200m", "memory": "50Mi"}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"mountPath": "/etc/kubernetes", "name": "etc-kubernetes", "readOnly": true}],
    });
    spec.binary.configure(&mut container);
    if let Some(env) = spec.container_env() {
        container["env"] = env;
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {"app": spec.app, "tier": "control-plane"},
            "name": spec.app,
            "namespace": "kube-system",
        },
        "spec": {
            "containers": [container],
            "hostNetwork": true,
            "priorityClassName": "system-node-critical",
            "tolerations": ccm::tolerations(),
            "volumes": [{"name": "etc-kubernetes", "hostPath": {"path": "/etc/kubernetes", "type": "Directory"}}],
        },
    })
}
