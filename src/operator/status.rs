//! `ClusterOperator/cloud-controller-manager`'s status from what each controller last did: the
//! condition types CCCMO writes (monitors, `oc adm upgrade` and ARO read them by name), with
//! the real error of a bad edit in the message, and written only when it changed.
//!
//! A failure is *terminal* when only an edit fixes it (a config that cannot be transformed): it
//! shows at once. Any other failure (5xx, timeouts, a lost watch) shows only after
//! [`TRANSIENT_GRACE`] of failing without a success in between, so that an API server's restart
//! during an upgrade never marks the operator Degraded.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The ClusterOperator's name.
pub const NAME: &str = "cloud-controller-manager";

/// How long transient failures may last before they show.
pub const TRANSIENT_GRACE: Duration = Duration::from_secs(120);

/// The controllers, in the order their conditions are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    /// `cloud-conf` from the cloud-provider config.
    CloudConfig,
    /// `ccm-trusted-ca`.
    TrustedCa,
    /// The CCM's own objects.
    Ccm,
}

impl Controller {
    /// Every controller.
    pub const ALL: [Controller; 3] =
        [Controller::CloudConfig, Controller::TrustedCa, Controller::Ccm];

    /// The name used in messages, logs, metrics and `/readyz`.
    pub fn name(self) -> &'static str {
        match self {
            Controller::CloudConfig => "CloudConfigController",
            Controller::TrustedCa => "TrustedCABundleController",
            Controller::Ccm => "CCMController",
        }
    }

    /// The prefix of its own condition types (CCCMO's spelling, "ControllerController"
    /// included); `None` for the CCM controller, which reports through the operator's own.
    fn condition_prefix(self) -> Option<&'static str> {
        match self {
            Controller::CloudConfig => Some("CloudConfigController"),
            Controller::TrustedCa => Some("TrustedCABundleControllerController"),
            Controller::Ccm => None,
        }
    }

    /// The message of a working controller (CCCMO's words).
    fn fine(self) -> &'static str {
        match self {
            Controller::CloudConfig => "Cloud Config Controller works as expected",
            Controller::TrustedCa => "Trusted CA Bundle Controller works as expected",
            Controller::Ccm => "The cloud controller manager's objects are as rendered",
        }
    }
}

/// What every task reports: each controller's record, and what the CCM controller applied.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// In [`Controller::ALL`] order.
    pub records: [Record; 3],
    /// `relatedObjects` beyond the namespaces and the ClusterOperator.
    pub related: Vec<super::world::Key>,
    /// Switched off: everything deleted, only reporting.
    pub removed: bool,
}

/// Why an attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The condition reason, CamelCase (`CloudConfigInvalid`, `APIError`).
    pub reason: String,
    /// The exact error.
    pub message: String,
    /// Whether only an edit can fix it (shown at once), or it may pass (shown after
    /// [`TRANSIENT_GRACE`]).
    pub terminal: bool,
}

/// What one controller did last.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// Whether an attempt has ever succeeded.
    ok_once: bool,
    /// The last attempt's failure, and since when attempts have failed without a success.
    failing: Option<(Failure, Instant)>,
    /// The CCM controller only: the Deployment still rolling out, and how far.
    pub rolling: Option<String>,
}

impl Record {
    /// Records an attempt.
    pub fn attempt(&mut self, result: Result<(), Failure>, now: Instant) {
        match result {
            Ok(()) => {
                self.ok_once = true;
                self.failing = None;
            }
            Err(failure) => {
                let since = self.failing.as_ref().map_or(now, |(_, since)| *since);
                self.failing = Some((failure, since));
            }
        }
    }

    /// The failure `/readyz` names: the last attempt's, whatever its kind.
    pub fn last_failure(&self) -> Option<&Failure> {
        self.failing.as_ref().map(|(failure, _)| failure)
    }

    /// What the conditions show at `now`.
    fn shown(&self, now: Instant) -> Shown<'_> {
        match &self.failing {
            Some((failure, since)) if failure.terminal || now - *since >= TRANSIENT_GRACE => {
                Shown::Degraded(failure)
            }
            _ if self.ok_once => Shown::Fine,
            _ => Shown::Pending,
        }
    }
}

enum Shown<'a> {
    Pending,
    Fine,
    Degraded(&'a Failure),
}

/// One condition.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Condition {
    kind: String,
    status: bool,
    reason: String,
    message: String,
}

impl Condition {
    fn new(kind: impl Into<String>, status: bool, reason: &str, message: &str) -> Condition {
        Condition {
            kind: kind.into(),
            status,
            reason: reason.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// Everything the status says.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    /// Each controller's record, in [`Controller::ALL`] order.
    pub records: [&'a Record; 3],
    /// `status.versions[operator]`.
    pub version: &'a str,
    /// `status.relatedObjects`: `(group, resource, namespace, name)`.
    pub related: &'a [(String, String, String, String)],
    /// Switched off: what it applied is deleted, and it only reports.
    pub removed: bool,
}

fn conditions(inputs: &Inputs<'_>, now: Instant) -> Vec<Condition> {
    let mut out = Vec::new();
    let mut degraded: Vec<(Controller, &Failure)> = Vec::new();
    for (controller, record) in Controller::ALL.into_iter().zip(inputs.records) {
        let shown = record.shown(now);
        if let Shown::Degraded(failure) = shown {
            degraded.push((controller, failure));
        }
        let Some(prefix) = controller.condition_prefix() else {
            continue;
        };
        let (available, degraded) = match shown {
            Shown::Pending => (
                Condition::new("", false, "Initializing", "has not synced yet"),
                Condition::new("", false, "AsExpected", "has not synced yet"),
            ),
            Shown::Fine => (
                Condition::new("", true, "AsExpected", controller.fine()),
                Condition::new("", false, "AsExpected", controller.fine()),
            ),
            Shown::Degraded(f) => (
                Condition::new("", false, &f.reason, &f.message),
                Condition::new("", true, &f.reason, &f.message),
            ),
        };
        out.push(Condition { kind: format!("{prefix}Available"), ..available });
        out.push(Condition { kind: format!("{prefix}Degraded"), ..degraded });
    }
    let version = inputs.version;
    let ccm = inputs.records[2];
    out.push(match ccm.ok_once {
        _ if inputs.removed => Condition::new(
            "Available",
            false,
            "Removed",
            "Switched off (annotation operator.ccm-assets.io/management-state: Removed on this \
             ClusterOperator): the cloud controller manager and its configuration are deleted",
        ),
        true => Condition::new(
            "Available",
            true,
            "AsExpected",
            &format!("Cluster Cloud Controller Manager Operator is available at {version}"),
        ),
        false => Condition::new(
            "Available",
            false,
            "Initializing",
            "The cloud controller manager has not been deployed yet",
        ),
    });
    out.push(match &ccm.rolling {
        Some(how) if !inputs.removed => Condition::new("Progressing", true, "Deploying", how),
        _ => Condition::new("Progressing", false, "AsExpected", ""),
    });
    let (reason, message) = match degraded.as_slice() {
        [] => ("AsExpected".to_owned(), String::new()),
        [(_, one)] => (one.reason.clone(), one.message.clone()),
        many => {
            let text: Vec<String> =
                many.iter().map(|(c, f)| format!("{}: {}", c.name(), f.message)).collect();
            ("MultipleControllersDegraded".to_owned(), text.join("; "))
        }
    };
    let is_degraded = !degraded.is_empty();
    out.push(Condition::new("Degraded", is_degraded, &reason, &message));
    out.push(match is_degraded {
        true => Condition::new("Upgradeable", false, &reason, &message),
        false => Condition::new("Upgradeable", true, "AsExpected", ""),
    });
    out
}

/// The status to write, or `None` when `live` (the ClusterOperator's current `status`) already
/// says it. A condition keeps its `lastTransitionTime` while its status does not change.
pub fn desired(
    inputs: &Inputs<'_>,
    live: Option<&Value>,
    now: Instant,
    stamp: &str,
) -> Option<Value> {
    let live_conditions =
        live.and_then(|s| s["conditions"].as_array()).cloned().unwrap_or_default();
    let previous = |kind: &str| live_conditions.iter().find(|c| c["type"] == kind);
    let conditions: Vec<Value> = conditions(inputs, now)
        .into_iter()
        .map(|c| {
            let status = if c.status { "True" } else { "False" };
            let time = previous(&c.kind)
                .filter(|p| p["status"] == status)
                .and_then(|p| p["lastTransitionTime"].as_str())
                .unwrap_or(stamp)
                .to_owned();
            let mut out = json!({"type": c.kind, "status": status, "reason": c.reason,
                "lastTransitionTime": time});
            if !c.message.is_empty() {
                out["message"] = Value::from(c.message);
            }
            out
        })
        .collect();
    let related: Vec<Value> = inputs
        .related
        .iter()
        .map(|(group, resource, namespace, name)| {
            let mut out = json!({"group": group, "resource": resource, "name": name});
            if !namespace.is_empty() {
                out["namespace"] = Value::from(namespace.as_str());
            }
            out
        })
        .collect();
    let status = json!({
        "conditions": conditions,
        "versions": [{"name": "operator", "version": inputs.version}],
        "relatedObjects": related,
    });
    let same = live.is_some_and(|live| {
        ["conditions", "versions", "relatedObjects"].iter().all(|k| live[k] == status[k])
    });
    (!same).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terminal(message: &str) -> Failure {
        Failure { reason: "CloudConfigInvalid".into(), message: message.into(), terminal: true }
    }

    fn transient() -> Failure {
        Failure {
            reason: "APIError".into(),
            message: "503 Service Unavailable".into(),
            terminal: false,
        }
    }

    fn status(records: [&Record; 3], live: Option<&Value>, now: Instant) -> Option<Value> {
        let inputs = Inputs { records, version: "0.1.0", related: &[], removed: false };
        desired(&inputs, live, now, "2026-11-29T00:00:00Z")
    }

    fn condition<'a>(status: &'a Value, kind: &str) -> &'a Value {
        status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == kind).unwrap()
    }

    fn fine() -> Record {
        let mut record = Record::default();
        record.attempt(Ok(()), Instant::now());
        record
    }

    #[test]
    fn a_bad_edit_shows_at_once_with_its_exact_error_and_blocks_upgrades() {
        let now = Instant::now();
        let mut config = fine();
        config.attempt(Err(terminal("[Global] secret-name: is set to a non-default value")), now);
        let (ca, ccm) = (fine(), fine());
        let status = status([&config, &ca, &ccm], None, now).expect("a status");
        for kind in ["Degraded", "CloudConfigControllerDegraded"] {
            let c = condition(&status, kind);
            assert_eq!(
                (c["status"].as_str(), c["reason"].as_str()),
                (Some("True"), Some("CloudConfigInvalid"))
            );
            assert_eq!(c["message"], "[Global] secret-name: is set to a non-default value");
        }
        assert_eq!(condition(&status, "Upgradeable")["status"], "False");
        assert_eq!(
            condition(&status, "Upgradeable")["message"],
            "[Global] secret-name: is set to a non-default value"
        );
        assert_eq!(condition(&status, "Available")["status"], "True");
    }

    #[test]
    fn transient_failures_show_only_after_two_minutes_without_a_success() {
        let start = Instant::now();
        let mut config = fine();
        let (ca, ccm) = (fine(), fine());
        config.attempt(Err(transient()), start);
        config.attempt(Err(transient()), start + Duration::from_secs(100));
        let early = status([&config, &ca, &ccm], None, start + Duration::from_secs(119)).unwrap();
        assert_eq!(condition(&early, "Degraded")["status"], "False");
        let late = status([&config, &ca, &ccm], None, start + TRANSIENT_GRACE).unwrap();
        assert_eq!(condition(&late, "Degraded")["status"], "True");
        assert_eq!(condition(&late, "Degraded")["reason"], "APIError");
        config.attempt(Ok(()), start + Duration::from_secs(121));
        config.attempt(Err(transient()), start + Duration::from_secs(122));
        let reset = status([&config, &ca, &ccm], None, start + Duration::from_secs(200)).unwrap();
        assert_eq!(
            condition(&reset, "Degraded")["status"],
            "False",
            "a success restarts the window"
        );
    }

    #[test]
    fn every_degraded_controller_is_named() {
        let now = Instant::now();
        let (mut config, mut ca, ccm) = (fine(), fine(), fine());
        config.attempt(Err(terminal("bad config")), now);
        ca.attempt(
            Err(Failure { reason: "CAInvalid".into(), message: "bad CA".into(), terminal: true }),
            now,
        );
        let status = status([&config, &ca, &ccm], None, now).unwrap();
        assert_eq!(condition(&status, "Degraded")["reason"], "MultipleControllersDegraded");
        assert_eq!(
            condition(&status, "Degraded")["message"],
            "CloudConfigController: bad config; TrustedCABundleController: bad CA"
        );
        assert_eq!(
            condition(&status, "TrustedCABundleControllerControllerDegraded")["status"],
            "True"
        );
    }

    #[test]
    fn an_unchanged_status_is_not_written_again_and_keeps_its_transition_times() {
        let now = Instant::now();
        let (config, ca, ccm) = (fine(), fine(), fine());
        let first = status([&config, &ca, &ccm], None, now).unwrap();
        let inputs = Inputs {
            records: [&config, &ca, &ccm],
            version: "0.1.0",
            related: &[],
            removed: false,
        };
        assert_eq!(desired(&inputs, Some(&first), now, "2027-01-01T00:00:00Z"), None);
        let mut failing = fine();
        failing.attempt(Err(terminal("bad")), now);
        let inputs = Inputs {
            records: [&failing, &ca, &ccm],
            version: "0.1.0",
            related: &[],
            removed: false,
        };
        let second = desired(&inputs, Some(&first), now, "2027-01-01T00:00:00Z").unwrap();
        assert_eq!(condition(&second, "Degraded")["lastTransitionTime"], "2027-01-01T00:00:00Z");
        assert_eq!(condition(&second, "Available")["lastTransitionTime"], "2026-11-29T00:00:00Z");
    }

    #[test]
    fn progressing_while_the_deployment_rolls() {
        let now = Instant::now();
        let (config, ca, mut ccm) = (fine(), fine(), fine());
        ccm.rolling = Some("1 of 2 replicas updated".into());
        let status = status([&config, &ca, &ccm], None, now).unwrap();
        assert_eq!(condition(&status, "Progressing")["status"], "True");
        assert_eq!(condition(&status, "Progressing")["message"], "1 of 2 replicas updated");
    }

    #[test]
    fn nothing_deployed_yet_is_not_available() {
        let now = Instant::now();
        let (config, ca, ccm) = (fine(), fine(), Record::default());
        let status = status([&config, &ca, &ccm], None, now).unwrap();
        assert_eq!(condition(&status, "Available")["status"], "False");
        assert_eq!(condition(&status, "Degraded")["status"], "False");
    }
}
