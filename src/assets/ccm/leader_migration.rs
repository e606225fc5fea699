//! `--leader-migration`: what a running cluster needs to hand the cloud controllers from the
//! in-tree provider of kube-controller-manager over to the platform's CCM without the two ever
//! running one at the same time (KEP-2436). Only for a platform whose CCM takes part
//! ([`Provider::leader_migration`]). See: issue 26.
//!
//! Both managers take the migration lease in the namespace of their main lease, and
//! kube-controller-manager's is `kube-system`: so the in-cluster CCM takes its leases there too.
//!
//! Written:
//! * `manifests/ccm/12-leader-migration-config.yaml`: the ConfigMap the CCM mounts, holding its
//!   `LeaderMigrationConfiguration`;
//! * `manifests/ccm/13-…`, `14-…`: Role and RoleBinding on the migration lease, for both managers;
//! * `manifests/ccm/15-…`, `16-…`: the same on the CCM's main lease in `kube-system`;
//! * `leader-migration/kube-controller-manager.yaml`: kube-controller-manager N's file, for an
//!   operator to place on the control-plane nodes, and
//!   `leader-migration/cloud-controller-manager.yaml`, the ConfigMap's, for reference.
//!
//! A raw `LeaderMigrationConfiguration` never goes under `manifests/`: an installer applies
//! every file there, and the API server has no such kind.
//!
//! [`Provider::leader_migration`]: crate::assets::provider::Provider::leader_migration

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::NAMESPACE;
use super::rbac;
use crate::assets::install_config;
use crate::assets::options::{self, Options};
use crate::assets::platform::{self, PLATFORMS, Platform};
use crate::assets::provider::CcmSpec;
use crate::graph::{Asset, AssetError, AssetId, File, Key, Output, Parents};
use crate::installconfig::InstallConfig;
use ccm_formats::yaml::to_yaml;

/// Asset id.
pub const ID: AssetId = "ccm/leader-migration";
/// [`ID`] with its content type (`None` with the switch off), for `Parents::get`.
pub const KEY: Key<Option<LeaderMigration>> = Key::new(ID);

/// The migration lease (the upstream default `leaderName`).
pub const LEADER_NAME: &str = "cloud-provider-extraction-migration";
/// Where both managers take their leases: kube-controller-manager's namespace.
pub const LEASE_NAMESPACE: &str = "kube-system";
/// Where the CCM's container mounts the ConfigMap holding its configuration.
pub const MOUNT_DIR: &str = "/etc/kubernetes-leader-migration";

const CONFIG_MAP: &str = "leader-migration-config";
const CONFIG_KEY: &str = "leader-migration.yaml";
const CONFIG_MAP_PATH: &str = "manifests/ccm/12-leader-migration-config.yaml";
const KCM_FILE: &str = "leader-migration/kube-controller-manager.yaml";
const CCM_FILE: &str = "leader-migration/cloud-controller-manager.yaml";
const KCM: &str = "kube-controller-manager";
const CCM: &str = "cloud-controller-manager";
/// The controllers kube-controller-manager runs for an in-tree provider, by the names its
/// releases that still had the in-tree OpenStack provider (up to 1.25) give them: a name it does
/// not know is not migrated, and would run under both managers. (The `*-controller` forms came
/// with 1.27; our CCM accepts those, the canonical names and these.)
const CONTROLLERS: [&str; 3] = ["route", "service", "cloud-node-lifecycle"];
/// The user kube-controller-manager authenticates as.
const KCM_USER: &str = "system:kube-controller-manager";

const KCM_HEADER: &str = "\
# LeaderMigrationConfiguration for kube-controller-manager at version N, which still runs the
# in-tree provider: place it on every control-plane node and start kube-controller-manager with
#   --enable-leader-migration --leader-migration-config=<this file>
# Not applied to the cluster; written by `ccm-assets create manifests --leader-migration`.
";
const CCM_HEADER: &str = "\
# LeaderMigrationConfiguration of the cloud-controller-manager at version N+1, for reference:
# the in-cluster CCM reads this from ConfigMap leader-migration-config in
# openshift-cloud-controller-manager (manifests/ccm/12-leader-migration-config.yaml).
# Not applied to the cluster; written by `ccm-assets create manifests --leader-migration`.
";

/// What the CCM Deployment needs: the content of this asset when the switch is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderMigration {
    /// The CCM's `LeaderMigrationConfiguration`, as its ConfigMap holds it (possibly edited);
    /// part of the Deployment's config hash, so a change rolls the pods.
    pub config: String,
}

/// `--leader-migration` on a platform whose CCM does not take part.
#[derive(Debug, thiserror::Error)]
#[error(
    "--leader-migration is not supported on platform {platform:?}: only the CCM of {supported} \
     is known to take the migration lease (without it, kube-controller-manager and the CCM \
     could run the same controllers at once)"
)]
pub struct Unsupported {
    platform: &'static str,
    supported: String,
}

/// The edited ConfigMap has no `LeaderMigrationConfiguration` under its key.
#[derive(Debug, thiserror::Error)]
#[error("{CONFIG_MAP_PATH}: expected a ConfigMap with a `data.{CONFIG_KEY}` key")]
pub struct ShapeError(#[source] Option<serde_saphyr::Error>);

/// The CCM of `platform` when it takes part in leader migration.
pub fn supported_ccm(platform: &Platform) -> Result<CcmSpec, Unsupported> {
    match platform.provider.ccm() {
        Some(spec) if platform.provider.leader_migration() => Ok(spec),
        _ => Err(Unsupported {
            platform: platform.name,
            supported: PLATFORMS
                .iter()
                .filter(|p| p.provider.leader_migration())
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The CCM container's flags.
pub fn args() -> [String; 2] {
    [
        "--enable-leader-migration".to_owned(),
        format!("--leader-migration-config={MOUNT_DIR}/{CONFIG_KEY}"),
    ]
}

/// The CCM container's mount of the ConfigMap.
pub fn volume_mount() -> Value {
    json!({"mountPath": MOUNT_DIR, "name": "leader-migration", "readOnly": true})
}

/// The Pod's volume of the ConfigMap.
pub fn volume() -> Value {
    json!({"name": "leader-migration", "configMap": {"name": CONFIG_MAP,
        "items": [{"key": CONFIG_KEY, "path": CONFIG_KEY}]}})
}

/// The `LeaderMigrationConfiguration` that gives the migrated controllers to `component`.
fn configuration(component: &str) -> Value {
    let leaders: Vec<Value> =
        CONTROLLERS.iter().map(|name| json!({"name": name, "component": component})).collect();
    json!({
        "apiVersion": "controllermanager.config.k8s.io/v1",
        "kind": "LeaderMigrationConfiguration",
        "leaderName": LEADER_NAME,
        "controllerLeaders": leaders,
    })
}

/// The manifests, each with its path, in apply order.
fn manifests(app: &str, config: &str) -> Vec<(&'static str, Value)> {
    let ns = Some(LEASE_NAMESPACE);
    let kcm = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": KCM_USER});
    let election = format!("{app}-leader-election");
    vec![
        (
            CONFIG_MAP_PATH,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
                "data": {CONFIG_KEY: config},
            }),
        ),
        (
            "manifests/ccm/13-leader-migration-role.yaml",
            rbac::role(
                "Role",
                LEADER_NAME,
                ns,
                json!(rbac::lease_rules(&["get", "list", "update"], LEADER_NAME)),
            ),
        ),
        (
            "manifests/ccm/14-leader-migration-rolebinding.yaml",
            rbac::binding("RoleBinding", LEADER_NAME, ns, json!([kcm, rbac::service_account()])),
        ),
        (
            "manifests/ccm/15-leader-election-role.yaml",
            // Only OpenStack takes part (`Unsupported`), and its CCM is ours.
            rbac::role("Role", &election, ns, json!(rbac::main_lease_rules(true))),
        ),
        (
            "manifests/ccm/16-leader-election-rolebinding.yaml",
            rbac::binding("RoleBinding", &election, ns, json!([rbac::service_account()])),
        ),
    ]
}

/// Reads the CCM's configuration back from a (possibly edited) ConfigMap.
fn read_config_map(text: &str) -> Result<String, ShapeError> {
    #[derive(Deserialize)]
    struct ConfigMap {
        data: BTreeMap<String, String>,
    }
    let mut map: ConfigMap = serde_saphyr::from_str(text).map_err(|e| ShapeError(Some(e)))?;
    map.data.remove(CONFIG_KEY).ok_or(ShapeError(None))
}

/// Writes the leader-migration files when `--leader-migration` is on; `null` content (and
/// nothing written) otherwise.
#[derive(Debug)]
pub struct LeaderMigrationAsset;

impl Asset for LeaderMigrationAsset {
    fn id(&self) -> AssetId {
        ID
    }
    fn name(&self) -> &'static str {
        "CCM Leader Migration"
    }
    fn dependencies(&self) -> &'static [AssetId] {
        &[install_config::ID, options::ID]
    }
    fn generate(&self, parents: &Parents<'_>) -> Result<Output, AssetError> {
        let config: InstallConfig = parents.get(&install_config::KEY)?;
        let options: Options = parents.get(&options::KEY)?;
        if !options.leader_migration {
            return Ok(Output::default());
        }
        let spec = supported_ccm(platform::of(&config)?)?;
        let ccm = to_yaml(&configuration(CCM))?;
        let kcm = to_yaml(&configuration(KCM))?;
        let mut output = Output::new(&LeaderMigration { config: ccm.clone() })?;
        for (path, object) in manifests(spec.app, &ccm) {
            output = output.with_file(File::new(path, to_yaml(&object)?));
        }
        Ok(output
            .with_file(File::new(KCM_FILE, format!("{KCM_HEADER}{kcm}")))
            .with_file(File::new(CCM_FILE, format!("{CCM_HEADER}{ccm}"))))
    }
    fn load(&self, files: &[File]) -> Option<Result<Value, AssetError>> {
        let file = files.iter().find(|f| f.path == CONFIG_MAP_PATH)?;
        Some(
            std::str::from_utf8(&file.bytes)
                .map_err(AssetError::from)
                .and_then(|text| Ok(read_config_map(text)?))
                .and_then(|config| Ok(serde_json::to_value(LeaderMigration { config })?)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_manager_gets_the_three_migrated_controllers() {
        for component in [KCM, CCM] {
            let config = configuration(component);
            assert_eq!(config["leaderName"], LEADER_NAME);
            let leaders = config["controllerLeaders"].as_array().unwrap();
            let names: Vec<&str> = leaders.iter().map(|l| l["name"].as_str().unwrap()).collect();
            assert_eq!(names, CONTROLLERS);
            assert!(leaders.iter().all(|l| l["component"] == component), "{config}");
        }
    }

    #[test]
    fn an_edited_config_map_is_read_back() {
        let (_, map) = manifests("app", "kind: LeaderMigrationConfiguration\n").remove(0);
        let text = to_yaml(&map).unwrap();
        assert_eq!(read_config_map(&text).unwrap(), "kind: LeaderMigrationConfiguration\n");
        let err = read_config_map("kind: ConfigMap\ndata: {}\n").unwrap_err().to_string();
        assert_eq!(
            err,
            format!("{CONFIG_MAP_PATH}: expected a ConfigMap with a `data.{CONFIG_KEY}` key")
        );
    }

    #[test]
    fn only_platforms_whose_ccm_takes_part_are_supported() {
        let supported: Vec<&str> =
            PLATFORMS.iter().filter(|p| supported_ccm(p).is_ok()).map(|p| p.name).collect();
        assert_eq!(supported, ["openstack"]);
        let aws = supported_ccm(platform::find("aws").unwrap()).unwrap_err().to_string();
        assert!(
            aws.starts_with(
                "--leader-migration is not supported on platform \"aws\": only the CCM of openstack"
            ),
            "{aws}"
        );
    }
}
