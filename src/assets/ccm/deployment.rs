//! The in-cluster CCM Deployment (and Azure's per-node companion DaemonSet).
//!
//! Its rollout is `RollingUpdate` with `maxSurge: 0` and `maxUnavailable: 1`: an old pod is
//! stopped before its replacement starts (a host-network pod holds its port, and the
//! anti-affinity allows one per node), and one replica keeps running throughout. It never runs
//! two leaders' controllers at once, and needs no `Recreate` for that, because no replica runs
//! a controller without holding the Lease (leader election, `--leader-elect=true`): the
//! replicas that run side by side during a rollout are one leader and candidates. On SIGTERM
//! the leader stops its controllers and then releases the Lease, so a running candidate takes
//! it at its next attempt (one `--leader-elect-retry-period`, 2 s) instead of after a lease
//! duration (15 s). The pod template changes only with what the CCM reads at start
//! ([`Run::hash`]): an edit of a config the CCM takes live rolls nothing.

use serde_json::{Value, json};

use super::{NAMESPACE, ProxyEnv, leader_migration};
use crate::assets::provider::{CcmSpec, own_image_security_context};

const PORT: u16 = 10258;

/// Where the init container writes the config with the credentials merged in (an in-memory
/// `emptyDir`), when the CCM reads its credentials from its config.
pub const MERGED_CONFIG_DIR: &str = "/etc/kubernetes-cloud-config-merged";

/// One platform's CCM as the cluster runs it.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// How the platform's CCM runs.
    pub spec: &'a CcmSpec,
    /// The image.
    pub image: &'a str,
    /// ccm-assets' own image, for the init container of a CCM whose credentials are merged
    /// into its config ([`CcmSpec::inject_credentials`]).
    pub assets_image: &'a str,
    /// `--cluster-name`.
    pub infra_id: &'a str,
    /// Hash of what the CCM reads only at start (rolls the pods when any of it changes).
    pub hash: &'a str,
    /// Take part in leader migration: leases in `kube-system`, the migration flags and the
    /// mounted `LeaderMigrationConfiguration`.
    pub leader_migration: bool,
    /// The platform's flags ([`Provider::ccm_args`]).
    ///
    /// [`Provider::ccm_args`]: crate::assets::provider::Provider::ccm_args
    pub extra_args: &'a [String],
    /// The egress proxy, appended to the CCM container's environment.
    pub proxy: Option<&'a ProxyEnv>,
}

impl Run<'_> {
    /// The Deployment: leader-elected replicas on control-plane nodes, host network, the
    /// `cloud-conf` ConfigMap and (when the platform reads one) the credentials Secret mounted;
    /// or, when the CCM reads its credentials from its config, both mounted in an init
    /// container that writes the merged config the CCM reads.
    pub fn deployment(&self, replicas: u32) -> Value {
        let spec = self.spec;
        let labels = json!({"app": spec.app});
        let config_dir = if spec.inject_credentials { MERGED_CONFIG_DIR } else { spec.config_dir };
        let lease_namespace =
            if self.leader_migration { leader_migration::LEASE_NAMESPACE } else { NAMESPACE };
        let mut args = vec![
            format!("--cloud-provider={}", spec.cloud_provider),
            format!("--cloud-config={config_dir}/cloud.conf"),
            format!("--cluster-name={}", self.infra_id),
            "--leader-elect=true".to_owned(),
            format!("--leader-elect-resource-namespace={lease_namespace}"),
            "--leader-elect-resource-name=cloud-controller-manager".to_owned(),
        ];
        if self.leader_migration {
            args.extend(leader_migration::args());
        }
        args.extend(self.extra_args.iter().cloned());
        args.extend([format!("--secure-port={PORT}"), "--v=2".to_owned()]);
        let mut container = json!({
            "name": "cloud-controller-manager",
            "image": self.image,
            "args": args,
            "ports": [{"containerPort": PORT, "name": "https", "protocol": "TCP"}],
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": PORT, "scheme": "HTTPS"},
                "initialDelaySeconds": 10,
                "periodSeconds": 10,
            },
            "resources": {"requests": {"cpu": "200m", "memory": "50Mi"}},
            "terminationMessagePolicy": "FallbackToLogsOnError",
        });
        spec.binary.configure(&mut container);
        let mut env = match spec.container_env() {
            Some(Value::Array(env)) => env,
            _ => Vec::new(),
        };
        env.extend(self.proxy.map(ProxyEnv::env).unwrap_or_default());
        if !env.is_empty() {
            container["env"] = Value::Array(env);
        }
        let config_mount =
            json!({"mountPath": spec.config_dir, "name": "config", "readOnly": true});
        let mut mounts = vec![config_mount.clone()];
        let mut volumes = vec![json!({"name": "config", "configMap": {"name": "cloud-conf",
            "items": [{"key": "cloud.conf", "path": "cloud.conf"}]}})];
        let secret_dir = spec.secret.and_then(|s| s.dir);
        let secret_mount =
            secret_dir.map(|dir| json!({"mountPath": dir, "name": "secret", "readOnly": true}));
        if let Some(secret) = spec.secret.filter(|_| secret_dir.is_some()) {
            mounts.extend(secret_mount.clone());
            let items: Vec<Value> =
                secret.keys.iter().map(|k| json!({"key": k, "path": k})).collect();
            volumes.push(
                json!({"name": "secret", "secret": {"secretName": secret.name, "items": items}}),
            );
        }
        let mut init_containers = Vec::new();
        if let (true, Some(secret_dir), Some(secret_mount)) =
            (spec.inject_credentials, secret_dir, secret_mount)
        {
            // The CCM sees only the merged copy: neither the ConfigMap nor the Secret.
            mounts = vec![
                json!({"mountPath": MERGED_CONFIG_DIR, "name": "merged-config", "readOnly": true}),
            ];
            volumes.push(json!({"name": "merged-config", "emptyDir": {"medium": "Memory"}}));
            init_containers.push(json!({
                "name": "inject-credentials",
                "image": self.assets_image,
                "command": ["ccm-assets"],
                "args": [
                    "inject-azure-credentials",
                    format!("--cloud-config={}/cloud.conf", spec.config_dir),
                    format!("--credentials-dir={secret_dir}"),
                    format!("--output={MERGED_CONFIG_DIR}/cloud.conf"),
                ],
                "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                "securityContext": own_image_security_context(),
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "volumeMounts": [
                    config_mount,
                    secret_mount,
                    {"mountPath": MERGED_CONFIG_DIR, "name": "merged-config"},
                ],
            }));
        }
        if self.leader_migration {
            mounts.push(leader_migration::volume_mount());
            volumes.push(leader_migration::volume());
        }
        mounts.push(
            json!({"mountPath": "/etc/kubernetes", "name": "host-etc-kube", "readOnly": true}),
        );
        volumes.push(json!({"name": "host-etc-kube",
            "hostPath": {"path": "/etc/kubernetes", "type": "Directory"}}));
        container["volumeMounts"] = json!(mounts);
        let mut deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"labels": labels, "name": spec.app, "namespace": NAMESPACE},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                // hostNetwork pods hold a host port: never run two on one node during a
                // rollout. Leader election, not the strategy, keeps two leaders apart (above).
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                "template": {
                    "metadata": {"annotations": {"ccm-assets.io/config-hash": self.hash}, "labels": labels},
                    "spec": {
                        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname",
                        }]}},
                        "containers": [container],
                        "hostNetwork": true,
                        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                        "priorityClassName": "system-cluster-critical",
                        "serviceAccountName": "cloud-controller-manager",
                        "tolerations": tolerations(),
                        "volumes": volumes,
                    },
                },
            },
        });
        if !init_containers.is_empty() {
            deployment["spec"]["template"]["spec"]["initContainers"] = json!(init_containers);
        }
        deployment
    }

    /// The per-node companion DaemonSet, when the platform has one and an image for it.
    pub fn node_manager(&self, image: Option<&str>) -> Option<Value> {
        let (name, command) = self.spec.node_manager?;
        let image = image?;
        let labels = json!({"app": name});
        Some(json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"labels": labels, "name": name, "namespace": NAMESPACE},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [{
                            "name": "cloud-node-manager",
                            "image": image,
                            "command": [command],
                            "args": ["--node-name=$(NODE_NAME)", "--v=2"],
                            "env": [{"name": "NODE_NAME",
                                     "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                            "resources": {"requests": {"cpu": "50m", "memory": "50Mi"}},
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                        }],
                        "hostNetwork": true,
                        "priorityClassName": "system-node-critical",
                        "serviceAccountName": "cloud-controller-manager",
                        // Every node, whatever its taints: it is what initializes them.
                        "tolerations": [{"operator": "Exists"}],
                    },
                },
            },
        }))
    }
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
