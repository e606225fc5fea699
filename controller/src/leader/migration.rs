//! Leader migration (KEP-2436): which controllers run only while this process also holds the
//! migration lease, so that at no instant do kube-controller-manager (with the in-tree provider)
//! and this CCM both run one.
//!
//! `--leader-migration-config` names a `LeaderMigrationConfiguration`
//! (`controllermanager.config.k8s.io/v1`, decoded strictly: an unknown field is an error, as
//! upstream's strict decoder makes it); without it, upstream's default: the lease
//! `cloud-provider-extraction-migration` and the route, service and cloud-node-lifecycle
//! controllers for any component (`*`). A controller listed for this component or `*` runs only
//! under the migration lease; one listed for another component never runs here; an unlisted
//! one runs under the main lease alone.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::controllers::ControllerName;

/// This binary's component name in the file.
pub(crate) const COMPONENT: &str = "cloud-controller-manager";
/// Upstream's default migration lease.
pub(crate) const DEFAULT_LEADER_NAME: &str = "cloud-provider-extraction-migration";
const API_VERSION: &str = "controllermanager.config.k8s.io/v1";
const KIND: &str = "LeaderMigrationConfiguration";

/// The file, as upstream's v1 type has it (no `resourceLock`: v1 always uses leases).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    leader_name: String,
    #[serde(default)]
    controller_leaders: Vec<Leader>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Leader {
    name: String,
    component: String,
}

/// Where a controller runs under leader migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Listed for this component (or `*`): only while this process holds the migration lease.
    Migrated,
    /// Listed for another component: never here.
    Elsewhere,
}

/// A parsed configuration: the migration lease and where each listed controller runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Migration {
    /// The migration lease (in the main lease's namespace).
    pub(crate) leader_name: String,
    /// The listed controllers this binary knows.
    pub(crate) placements: BTreeMap<&'static str, (ControllerName, Placement)>,
}

impl Migration {
    /// Upstream's default configuration (`DefaultLeaderMigrationConfiguration`).
    pub(crate) fn default_config() -> Migration {
        let text = format!(
            "apiVersion: {API_VERSION}\nkind: {KIND}\nleaderName: {DEFAULT_LEADER_NAME}\n\
             controllerLeaders:\n- {{name: route-controller, component: '*'}}\n\
             - {{name: service-controller, component: '*'}}\n\
             - {{name: cloud-node-lifecycle-controller, component: '*'}}\n"
        );
        let (migration, unknown) = Migration::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        debug_assert!(unknown.is_empty());
        migration
    }

    /// Reads `path`, or returns the default when there is none. Errors name the file.
    pub(crate) fn load(path: Option<&Path>) -> anyhow::Result<Migration> {
        let Some(path) = path else { return Ok(Migration::default_config()) };
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--leader-migration-config {}: {e}", path.display()))?;
        let (migration, unknown) = Migration::parse(&text)
            .map_err(|e| anyhow::anyhow!("--leader-migration-config {}: {e}", path.display()))?;
        for name in unknown {
            tracing::warn!(file = %path.display(), controller = %name,
                "leader migration names a controller this binary does not have; ignored");
        }
        Ok(migration)
    }

    /// Decodes the file strictly; the second value lists the controller names it does not know.
    pub(crate) fn parse(text: &str) -> Result<(Migration, Vec<String>), String> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if file.api_version != API_VERSION || file.kind != KIND {
            return Err(format!(
                "apiVersion/kind is {}/{}, expected {API_VERSION}/{KIND}",
                file.api_version, file.kind
            ));
        }
        let leader_name = if file.leader_name.is_empty() {
            DEFAULT_LEADER_NAME.to_owned()
        } else {
            file.leader_name
        };
        let mut placements = BTreeMap::new();
        let mut unknown = Vec::new();
        for leader in file.controller_leaders {
            let placement = match leader.component.as_str() {
                "*" | COMPONENT => Placement::Migrated,
                "" => return Err(format!("controllerLeaders {}: component is empty", leader.name)),
                _ => Placement::Elsewhere,
            };
            match controller(&leader.name) {
                Some(name) => {
                    if placements.insert(name.as_str(), (name, placement)).is_some() {
                        return Err(format!("controller {} is listed twice", leader.name));
                    }
                }
                None => unknown.push(leader.name),
            }
        }
        Ok((Migration { leader_name, placements }, unknown))
    }

    /// Where `name` runs: `None` when it is not listed (main lease only).
    pub(crate) fn placement(&self, name: ControllerName) -> Option<Placement> {
        self.placements.get(name.as_str()).map(|(_, placement)| *placement)
    }
}

/// A controller name in any of the forms the file may use: the canonical names of
/// k8s.io/cloud-provider (`service-lb-controller`, `node-route-controller`,
/// `cloud-node-lifecycle-controller`, `cloud-node-controller`), their aliases (`service`,
/// `route`, `cloud-node-lifecycle`, `cloud-node`) and the `*-controller` forms of upstream's
/// default file (`service-controller`, `route-controller`). Matching all of them is what makes
/// the default file migrate the service controller too.
fn controller(name: &str) -> Option<ControllerName> {
    match name {
        "service-lb-controller" | "service-controller" | "service" => Some(ControllerName::Service),
        "node-route-controller" | "route-controller" | "route" => Some(ControllerName::Route),
        "cloud-node-lifecycle-controller" | "cloud-node-lifecycle" => {
            Some(ControllerName::CloudNodeLifecycle)
        }
        "cloud-node-controller" | "cloud-node" => Some(ControllerName::CloudNode),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
