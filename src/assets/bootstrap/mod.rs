//! The bootstrap node's CCM: static pod, cloud.conf (+ CA) and kubeconfig under `bootstrap/`.
//!
//! The static pod runs only the `cloud-node` controller, without leader election, with the
//! bootstrap kubeconfig; its cloud.conf keeps `secret-name`/`secret-namespace`, so it reads the
//! credentials Secret through the API. `ccm-assets render` re-derives the cloud.conf from the
//! (possibly edited) cloud-provider ConfigMap on the bootstrap node itself.

pub mod kubeconfig;
pub mod tls;

use serde_json::{Value, json};

use super::openstack::cloud_conf::{self, CloudProviderConfig};
use super::{ccm, cluster_id};
use crate::formats::yaml::to_yaml;
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};

/// Asset id.
pub const ID: AssetId = "bootstrap/ccm";

/// The static pod's file.
pub const POD_PATH: &str = "bootstrap/manifests/openstack-cloud-controller-manager-pod.yaml";
/// The bootstrap cloud.conf.
pub const CLOUD_CONF_PATH: &str = "bootstrap/configs/cloud.conf";
/// The CA beside it, when the cloud has one.
pub const CA_PATH: &str = "bootstrap/configs/ca-bundle.pem";

/// The bootstrap files: cloud.conf and its CA, as `render` writes them too.
pub fn configs(provider: &CloudProviderConfig) -> Result<Vec<(&'static str, String)>, AssetError> {
    let conf = cloud_conf::bootstrap(&provider.config)
        .map_err(|e| format!("{}: data.config: {e}", cloud_conf::PATH))?;
    let mut files = vec![("cloud.conf", conf)];
    if let Some(ca) = &provider.ca_bundle {
        files.push(("ca-bundle.pem", ca.clone()));
    }
    Ok(files)
}

/// Writes the static pod and the bootstrap cloud.conf on OpenStack.
#[derive(Debug)]
pub struct BootstrapAsset {
    image: String,
}

impl BootstrapAsset {
    /// `image` is the CCM image.
    pub fn new(image: impl Into<String>) -> BootstrapAsset {
        BootstrapAsset { image: image.into() }
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
        &[cluster_id::ID, cloud_conf::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let id: cluster_id::ClusterId = parents.get(cluster_id::ID)?;
        let Some(provider) = parents.get::<Option<CloudProviderConfig>>(cloud_conf::ID)? else {
            return Ok(Output::default());
        };
        let mut output = Output::default()
            .with_file(File::new(POD_PATH, to_yaml(&static_pod(&self.image, &id.infra_id))?));
        for (name, text) in configs(&provider)? {
            output = output.with_file(File::new(format!("bootstrap/configs/{name}"), text));
        }
        Ok(output)
    }
}

fn static_pod(image: &str, infra_id: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {"app": "openstack-cloud-controller-manager", "tier": "control-plane"},
            "name": "openstack-cloud-controller-manager",
            "namespace": "kube-system",
        },
        "spec": {
            "containers": [{
                "name": "cloud-controller-manager",
                "image": image,
                "command": ["/bin/openstack-cloud-controller-manager"],
                "args": [
                    "--cloud-provider=openstack",
                    "--controllers=cloud-node",
                    "--leader-elect=false",
                    "--kubeconfig=/etc/kubernetes/bootstrap-secrets/ccm-kubeconfig",
                    "--cloud-config=/etc/kubernetes/bootstrap-configs/cloud.conf",
                    format!("--cluster-name={infra_id}"),
                    "--v=2",
                ],
                "resources": {"requests": {"cpu": "200m", "memory": "50Mi"}},
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "volumeMounts": [{"mountPath": "/etc/kubernetes", "name": "etc-kubernetes", "readOnly": true}],
            }],
            "hostNetwork": true,
            "priorityClassName": "system-node-critical",
            "tolerations": ccm::tolerations(),
            "volumes": [{"name": "etc-kubernetes", "hostPath": {"path": "/etc/kubernetes", "type": "Directory"}}],
        },
    })
}
