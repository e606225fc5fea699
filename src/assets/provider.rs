//! What one platform contributes: the contract the platform-neutral assets ask.
//!
//! Each platform module implements [`Provider`]; the platform table (`assets::platform`) maps
//! an install-config platform to its provider. The neutral assets (`cloud-provider-config`,
//! `credentials`, `infrastructure`, `ccm`, `bootstrap/ccm`) hold the shared shapes and never
//! switch over platforms. Every method has a default meaning "nothing here", so `none` and
//! `baremetal` implement almost nothing.
//!
//! What the contract carries (`cloud_access`, `cloud_facts`, `options`) is defined below it,
//! so this module names no platform, and every platform can name it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cloud_access::{AccessRequest, CloudAccess, LoadedAccess};
use super::cloud_facts::CloudFacts;
use super::options::Options;
use crate::graph::{AssetError, File};
use crate::installconfig::InstallConfig;

/// What a provider may read: the resolved inputs of one run.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The install-config with defaults applied.
    pub config: &'a InstallConfig,
    /// The infrastructure ID.
    pub infra_id: &'a str,
    /// What the command loaded to reach the cloud (credentials, the OpenStack cloud).
    pub access: &'a CloudAccess,
    /// What the OpenStack cloud told us (`None` elsewhere).
    pub facts: Option<&'a CloudFacts>,
    /// Command-line choices that change the output.
    pub options: &'a Options,
}

/// The cloud-provider ConfigMap's content; also what dependents read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloudProviderConfig {
    /// Key `config`: the cloud config in the platform's format.
    pub config: String,
    /// Key `ca-bundle.pem`: a CA the CCM must trust, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// Where the upstream CCMs read the in-cluster `cloud-conf` (OpenShift's mount point).
pub const CONFIG_DIR: &str = "/etc/kubernetes-cloud-config";

/// The plaintext data of a Secret (the writer base64-encodes it).
pub type SecretData = BTreeMap<String, String>;

/// The Secret the in-cluster CCM reads in its own namespace, mounted as files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretMount {
    /// Its name in `openshift-cloud-controller-manager`.
    pub name: &'static str,
    /// Where it is mounted; `None` when the CCM reads it through the API.
    pub dir: Option<&'static str>,
    /// The keys mounted (each as a file of the same name).
    pub keys: &'static [&'static str],
}

/// How a platform's CCM runs: everything the Deployment and the static pod differ in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcmSpec {
    /// The app label, Deployment, ClusterRole and static-pod name
    /// (`openstack-cloud-controller-manager`).
    pub app: &'static str,
    /// How its container starts: our own image's entrypoint, or an upstream image's binary.
    pub binary: Binary,
    /// `--cloud-provider=` value.
    pub cloud_provider: &'static str,
    /// The directory the in-cluster `cloud-conf` ConfigMap is mounted at; the CCM reads
    /// `<dir>/cloud.conf`.
    pub config_dir: &'static str,
    /// The in-cluster credentials Secret, when the CCM reads one from files.
    pub secret: Option<SecretMount>,
    /// Whether the in-cluster CCM reads the `kube-system` credentials Secret through the API
    /// (vSphere), so its service account is bound to the reader and watcher Roles too.
    pub reads_credentials_secret: bool,
    /// Whether the CCM reads its credentials only from its cloud config (Azure): an init
    /// container (`ccm-assets inject-azure-credentials`) merges the mounted Secret into a
    /// copy of the config, which is all the CCM mounts.
    pub inject_credentials: bool,
    /// Whether the CCM takes a change of its cloud config, its credentials and its CA bundle
    /// while it runs (our OpenStack CCM: issue 38), so that their contents stay out of the pod
    /// template and an edit never rolls the Deployment (`ccm::config_hash`). Upstream CCMs
    /// read them at start: rolling the pods is how an edit reaches them. No effect with
    /// [`CcmSpec::inject_credentials`], whose merged config is made once, at pod start.
    pub reloads_config: bool,
    /// Extra environment of the CCM container.
    pub env: &'static [(&'static str, &'static str)],
    /// A per-node companion DaemonSet (`azure-cloud-node-manager`): its name and binary.
    pub node_manager: Option<(&'static str, &'static str)>,
}

impl CcmSpec {
    /// The CCM container's environment: [`CcmSpec::env`], and for a CCM that reloads its
    /// config live its own Pod's namespace and name from the downward API (`POD_NAMESPACE`,
    /// `POD_NAME`: where it tells a refused config edit). `None` when there is none.
    pub fn container_env(&self) -> Option<Value> {
        let fixed =
            self.env.iter().map(|(name, value)| serde_json::json!({"name": name, "value": value}));
        let field = |name: &str, path: &str| serde_json::json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
        let pod =
            [field("POD_NAMESPACE", "metadata.namespace"), field("POD_NAME", "metadata.name")];
        let pod = pod.into_iter().filter(|_| self.reloads_config);
        let env: Vec<Value> = fixed.chain(pod).collect();
        (!env.is_empty()).then_some(Value::Array(env))
    }

    /// An upstream CCM as OpenShift runs it: config mounted at [`CONFIG_DIR`] and read at
    /// start, no Secret mounted, no extra environment, no companion.
    pub const fn upstream(
        app: &'static str,
        command: &'static str,
        cloud_provider: &'static str,
    ) -> CcmSpec {
        CcmSpec {
            app,
            binary: Binary::Command(command),
            cloud_provider,
            config_dir: CONFIG_DIR,
            secret: None,
            reads_credentials_secret: false,
            inject_credentials: false,
            reloads_config: false,
            env: &[],
            node_manager: None,
        }
    }
}

/// How a CCM container starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// ccm-assets' own image (`scripts/image.sh`), whose entrypoint is
    /// `openstack-cloud-controller-manager`: the container gives only `args`, and runs as the
    /// image's non-root user on a read-only root filesystem, as the image is built for.
    OwnImage,
    /// An upstream image: this binary as `command`, as the image's own user (its image, its
    /// rules: nothing is assumed about it).
    Command(&'static str),
}

impl Binary {
    /// Sets how `container` (a Pod container object) starts.
    pub fn configure(self, container: &mut Value) {
        match self {
            Binary::OwnImage => container["securityContext"] = own_image_security_context(),
            Binary::Command(command) => container["command"] = serde_json::json!([command]),
        }
    }
}

/// The security context of a container running ccm-assets' own image: its numeric user
/// ([`USER`](super::images::USER)), nothing writable, no privilege to gain.
pub fn own_image_security_context() -> Value {
    let user = super::images::USER;
    serde_json::json!({
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": true,
        "runAsGroup": user,
        "runAsNonRoot": true,
        "runAsUser": user,
    })
}

/// The format of a platform's cloud config, checked before a (possibly edited) config is
/// passed on to a CCM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// gcfg/INI (OpenStack, AWS, GCP, IBM Cloud, PowerVS, vSphere's legacy form).
    Gcfg,
    /// JSON (Azure, Nutanix).
    Json,
    /// Not checked (vSphere, whose YAML and INI forms are both accepted by its CCM).
    Unchecked,
}

impl Syntax {
    /// `Ok` when `config` parses in this syntax.
    pub fn check(self, config: &str) -> Result<(), AssetError> {
        match self {
            Syntax::Gcfg => drop(ccm_formats::gcfg::parse(config)?),
            Syntax::Json => drop(serde_json::from_str::<Value>(config)?),
            Syntax::Unchecked => {}
        }
        Ok(())
    }
}

/// What one platform contributes. Every method defaults to "nothing".
pub trait Provider: Sync + std::fmt::Debug {
    /// Loads what the platform needs to reach its cloud (credentials, the OpenStack cloud) from
    /// the environment and files; the one provider method that does I/O (each platform's
    /// `access` module). Platforms without cloud access load nothing.
    fn load_access(&self, _: &AccessRequest<'_>) -> anyhow::Result<LoadedAccess> {
        Ok(LoadedAccess::default())
    }

    /// The cloud-provider ConfigMap content; `None` when the platform has no cloud config.
    fn cloud_provider_config(
        &self,
        _: &Context<'_>,
    ) -> Result<Option<CloudProviderConfig>, AssetError> {
        Ok(None)
    }

    /// Further manifests that go with the cloud config (GCP's `ingress-uid` ConfigMap).
    fn extra_manifests(&self, _: &Context<'_>) -> Result<Vec<File>, AssetError> {
        Ok(Vec::new())
    }

    /// The format of `config`.
    fn syntax(&self) -> Syntax {
        Syntax::Unchecked
    }

    /// The in-cluster CCM's config, derived from the (possibly edited) ConfigMap's `config`:
    /// by default the same text, once it parses.
    fn in_cluster_config(&self, config: &str) -> Result<String, AssetError> {
        self.syntax().check(config)?;
        Ok(config.to_owned())
    }

    /// The bootstrap CCM's config, derived the same way (also run by `render`).
    fn bootstrap_config(&self, config: &str) -> Result<String, AssetError> {
        self.in_cluster_config(config)
    }

    /// The bootstrap CCM's config with the credentials Secret's data merged in, for a CCM that
    /// reads its credentials from its config only ([`CcmSpec::inject_credentials`]).
    fn config_with_credentials(
        &self,
        config: &str,
        _credentials: &SecretData,
    ) -> Result<String, AssetError> {
        Ok(config.to_owned())
    }

    /// The name of the `kube-system` credentials Secret; its reader Role is always written.
    fn secret_name(&self) -> Option<&'static str> {
        None
    }

    /// The credentials Secret's data (not called with `credentialsMode: Manual`).
    fn secret_data(&self, _: &Context<'_>) -> Result<SecretData, AssetError> {
        Ok(SecretData::new())
    }

    /// The data of the in-cluster CCM's Secret ([`CcmSpec::secret`]), derived from the
    /// `kube-system` Secret's data.
    fn in_cluster_secret(&self, _: &SecretData) -> SecretData {
        SecretData::new()
    }

    /// The in-cluster CCM's platform flags (none by default), from facts `create manifests`
    /// and `ccm-assets operator` both have: `cloud_conf`, the in-cluster CCM's cloud config
    /// ([`Provider::in_cluster_config`]'s output), and the cluster networks' CIDRs
    /// (install-config `networking.clusterNetwork[].cidr`; on a running cluster
    /// `Network/cluster` `spec.clusterNetwork[].cidr`). So both render the same flags.
    fn ccm_args(&self, _cloud_conf: &str, _cluster_networks: &[String]) -> Vec<String> {
        Vec::new()
    }

    /// How the CCM runs; `None` when the platform has no CCM of ours.
    fn ccm(&self) -> Option<CcmSpec> {
        None
    }

    /// Whether the platform's CCM takes part in leader migration (KEP-2436): it accepts
    /// `--enable-leader-migration` and `--leader-migration-config` and runs the migrated
    /// controllers only while it holds the migration lease. Only then may `create manifests
    /// --leader-migration` be used. Opt in only for a CCM known to do so: otherwise
    /// kube-controller-manager and the CCM could run the same controllers at once.
    fn leader_migration(&self) -> bool {
        false
    }

    /// The Infrastructure's `platformSpec` and `platformStatus` blocks, each under the
    /// platform's install-config name (`openstack`, `ibmcloud`, …, as openshift/api names them
    /// too). A `Null` side is left out (the installer writes no spec block for Azure or GCP).
    fn infrastructure(&self, _: &InstallConfig, _: &str) -> Option<(Value, Value)> {
        None
    }
}
