//! `manifests/ccm/`: the in-cluster OpenStack CCM that takes over after bootstrap.
//!
//! The namespace, service account and RBAC never vary and are embedded from `data/`; the
//! `cloud-conf` ConfigMap, the `openstack-cloud-credentials` Secret and the Deployment are
//! generated. The Deployment carries a hash of its config and credentials, so a change to
//! either rolls the pods.

use serde_json::{Value, json};

use super::openstack::cloud_conf::{self, CloudProviderConfig};
use super::openstack::credentials::{self, Credentials};
use super::{cluster_id, install_config};
use crate::formats::yaml::to_yaml;
use crate::graph::{Asset, AssetError, AssetId, File, Output, Parents};
use crate::installconfig::InstallConfig;

/// Asset id.
pub const ID: AssetId = "openstack/ccm";

/// The CCM's namespace.
pub const NAMESPACE: &str = "openshift-cloud-controller-manager";

/// The manifests that never vary: (file name, bytes).
const STATIC: &[(&str, &str)] = &[
    ("00-namespace.yaml", include_str!("../../data/openstack/ccm/00-namespace.yaml")),
    ("01-serviceaccount.yaml", include_str!("../../data/openstack/ccm/01-serviceaccount.yaml")),
    ("02-clusterrole.yaml", include_str!("../../data/openstack/ccm/02-clusterrole.yaml")),
    (
        "03-clusterrolebinding.yaml",
        include_str!("../../data/openstack/ccm/03-clusterrolebinding.yaml"),
    ),
    ("04-role.yaml", include_str!("../../data/openstack/ccm/04-role.yaml")),
    ("05-rolebinding.yaml", include_str!("../../data/openstack/ccm/05-rolebinding.yaml")),
    (
        "06-creds-reader-rolebinding.yaml",
        include_str!("../../data/openstack/ccm/06-creds-reader-rolebinding.yaml"),
    ),
    // The bootstrap CCM watches the credentials Secret (list + watch by name) to follow a
    // rotation; the installer's reader Role only grants `get`.
    (
        "07-creds-watcher-role.yaml",
        include_str!("../../data/openstack/ccm/07-creds-watcher-role.yaml"),
    ),
    (
        "08-creds-watcher-rolebinding.yaml",
        include_str!("../../data/openstack/ccm/08-creds-watcher-rolebinding.yaml"),
    ),
];

const CLOUD_CONF_PATH: &str = "manifests/ccm/10-cloud-conf.yaml";
const CREDENTIALS_PATH: &str = "manifests/ccm/11-cloud-credentials.yaml";
const DEPLOYMENT_PATH: &str = "manifests/ccm/20-deployment.yaml";
const APP: &str = "openstack-cloud-controller-manager";
const PORT: u16 = 10258;

/// Writes the in-cluster CCM manifests on OpenStack.
#[derive(Debug)]
pub struct CcmAsset {
    image: String,
}

impl CcmAsset {
    /// `image` is the CCM image (`--ccm-image`).
    pub fn new(image: impl Into<String>) -> CcmAsset {
        CcmAsset { image: image.into() }
    }
}

impl Asset for CcmAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "Cloud Controller Manager"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, cluster_id::ID, cloud_conf::ID, credentials::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(install_config::ID)?;
        let id: cluster_id::ClusterId = parents.get(cluster_id::ID)?;
        let provider: Option<CloudProviderConfig> = parents.get(cloud_conf::ID)?;
        let creds: Option<Credentials> = parents.get(credentials::ID)?;
        let (Some(provider), Some(creds)) = (provider, creds) else {
            return Ok(Output::default());
        };
        let cloud_conf = cloud_conf::in_cluster(&provider.config)
            .map_err(|e| format!("{}: data.config: {e}", cloud_conf::PATH))?;
        let mut output = Output::default();
        for (name, text) in STATIC {
            output = output.with_file(File::new(format!("manifests/ccm/{name}"), *text));
        }
        let mut data = json!({"cloud.conf": cloud_conf});
        if let Some(ca) = &provider.ca_bundle {
            data["ca-bundle.pem"] = Value::from(ca.as_str());
        }
        let map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cloud-conf", "namespace": NAMESPACE},
            "data": data,
        });
        output = output.with_file(File::new(CLOUD_CONF_PATH, to_yaml(&map)?));
        if let Some(clouds) = &creds.clouds_yaml {
            let secret = json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "openstack-cloud-credentials", "namespace": NAMESPACE},
                "type": "Opaque",
                "stringData": {"clouds.yaml": clouds},
            });
            output = output.with_file(File::secret(CREDENTIALS_PATH, to_yaml(&secret)?));
        }
        let hash = crate::graph::state::sha256(
            [
                cloud_conf.as_str(),
                creds.clouds_yaml.as_deref().unwrap_or(""),
                provider.ca_bundle.as_deref().unwrap_or(""),
            ]
            .join("\0")
            .as_bytes(),
        );
        let replicas = if config.control_plane_replicas() == 1 { 1 } else { 2 };
        let deployment = deployment(&self.image, &id.infra_id, replicas, &hash);
        Ok(output.with_file(File::new(DEPLOYMENT_PATH, to_yaml(&deployment)?)))
    }
}

fn deployment(image: &str, infra_id: &str, replicas: u32, hash: &str) -> Value {
    let labels = json!({"app": APP});
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"labels": labels, "name": APP, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            // hostNetwork pods hold a host port: never run two on one node during a rollout.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": {
                "metadata": {"annotations": {"ccm-assets.io/config-hash": hash}, "labels": labels},
                "spec": {
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": labels},
                        "topologyKey": "kubernetes.io/hostname",
                    }]}},
                    "containers": [{
                        "name": "cloud-controller-manager",
                        "image": image,
                        "command": ["/bin/openstack-cloud-controller-manager"],
                        "args": [
                            "--cloud-provider=openstack",
                            "--cloud-config=/etc/openstack/config/cloud.conf",
                            format!("--cluster-name={infra_id}"),
                            "--leader-elect=true",
                            format!("--leader-elect-resource-namespace={NAMESPACE}"),
                            "--leader-elect-resource-name=cloud-controller-manager",
                            format!("--secure-port={PORT}"),
                            "--v=2",
                        ],
                        "ports": [{"containerPort": PORT, "name": "https", "protocol": "TCP"}],
                        "livenessProbe": {
                            "httpGet": {"path": "/healthz", "port": PORT, "scheme": "HTTPS"},
                            "initialDelaySeconds": 10,
                            "periodSeconds": 10,
                        },
                        "resources": {"requests": {"cpu": "200m", "memory": "50Mi"}},
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                        "volumeMounts": [
                            {"mountPath": "/etc/openstack/config", "name": "config", "readOnly": true},
                            {"mountPath": "/etc/openstack/secret", "name": "secret", "readOnly": true},
                            {"mountPath": "/etc/kubernetes", "name": "host-etc-kube", "readOnly": true},
                        ],
                    }],
                    "hostNetwork": true,
                    "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "cloud-controller-manager",
                    "tolerations": tolerations(),
                    "volumes": [
                        {"name": "config", "configMap": {"name": "cloud-conf", "items": [{"key": "cloud.conf", "path": "cloud.conf"}]}},
                        {"name": "secret", "secret": {"secretName": "openstack-cloud-credentials", "items": [{"key": "clouds.yaml", "path": "clouds.yaml"}]}},
                        {"name": "host-etc-kube", "hostPath": {"path": "/etc/kubernetes", "type": "Directory"}},
                    ],
                },
            },
        },
    })
}

/// What a CCM must tolerate to run before any node is initialized.
pub fn tolerations() -> Value {
    json!([
        {"effect": "NoSchedule", "key": "node.cloudprovider.kubernetes.io/uninitialized", "operator": "Exists"},
        {"effect": "NoSchedule", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
        {"effect": "NoSchedule", "key": "node-role.kubernetes.io/master", "operator": "Exists"},
        {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane", "operator": "Exists"},
    ])
}
