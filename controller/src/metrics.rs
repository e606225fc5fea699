//! The prometheus-client registry: every OpenStack call, reconcile results and readiness.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::controllers::name::ControllerName;

/// Labels of one OpenStack call; values are fixed strings, never object data.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabels {
    /// `compute`, `network`, `identity`.
    pub(crate) service: &'static str,
    /// `server_get`, `server_list`, `port_list`, …
    pub(crate) operation: &'static str,
    /// `ok` or an error kind.
    pub(crate) result: &'static str,
}

/// Labels of a call's latency.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OperationLabels {
    /// Service.
    pub(crate) service: &'static str,
    /// Operation.
    pub(crate) operation: &'static str,
}

/// Labels of a reconcile outcome.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ReconcileLabels {
    /// `cloud-node` or `cloud-node-lifecycle`.
    pub(crate) controller: &'static str,
    /// `initialized`, `deleted`, `tainted`, `error_<kind>`, …
    pub(crate) result: &'static str,
}

/// Every metric, and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<OperationLabels, Histogram, fn() -> Histogram>,
    reconciles: Family<ReconcileLabels, Counter>,
    openstack_connected: Gauge,
    leader: Family<LeaseLabels, Gauge>,
    config_reload_success: Gauge,
    config_generation: Gauge,
}

/// Labels of `occm_leader`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    /// The Lease's name: the main one, or the leader-migration one.
    lease: String,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("occm");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "openstack_api_requests",
            "OpenStack API calls by service, operation and result",
            calls.clone(),
        );
        let latency = Family::<OperationLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(0.005, 2.0, 14))) as fn() -> Histogram,
        );
        registry.register(
            "openstack_api_request_duration_seconds",
            "OpenStack API call latency",
            latency.clone(),
        );
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Node reconciles by controller and result",
            reconciles.clone(),
        );
        let openstack_connected = Gauge::default();
        registry.register(
            "openstack_connected",
            "1 when an OpenStack session is established",
            openstack_connected.clone(),
        );
        let leader = Family::<LeaseLabels, Gauge>::default();
        registry.register(
            "leader",
            "1 while this process holds the lease, by lease",
            leader.clone(),
        );
        let config_reload_success = Gauge::default();
        registry.register(
            "config_last_reload_success",
            "1 when the last change of the cloud config was applied, 0 when it was refused",
            config_reload_success.clone(),
        );
        config_reload_success.set(1);
        let config_generation = Gauge::default();
        registry.register(
            "config_generation",
            "The cloud config generation in use: 1 at start, one more per change applied",
            config_generation.clone(),
        );
        config_generation.set(1);
        Metrics {
            registry,
            calls,
            latency,
            reconciles,
            openstack_connected,
            leader,
            config_reload_success,
            config_generation,
        }
    }
}

impl Metrics {
    /// A shared registry.
    pub fn shared() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Counts one OpenStack call.
    pub(crate) fn call(
        &self,
        service: &'static str,
        operation: &'static str,
        result: &'static str,
        took: Duration,
    ) {
        self.calls.get_or_create(&CallLabels { service, operation, result }).inc();
        self.latency
            .get_or_create(&OperationLabels { service, operation })
            .observe(took.as_secs_f64());
    }

    /// How many calls were counted with these labels.
    pub fn calls(
        &self,
        service: &'static str,
        operation: &'static str,
        result: &'static str,
    ) -> u64 {
        self.calls.get_or_create(&CallLabels { service, operation, result }).get()
    }

    /// Counts one reconcile outcome.
    pub(crate) fn reconcile(&self, controller: ControllerName, result: &'static str) {
        let labels = ReconcileLabels { controller: controller.as_str(), result };
        self.reconciles.get_or_create(&labels).inc();
    }

    /// Records a look at a changed cloud config: applied as `generation`, or refused (`None`:
    /// the generation in use stays).
    pub(crate) fn config_reloaded(&self, generation: Option<u64>) {
        self.config_reload_success.set(i64::from(generation.is_some()));
        if let Some(generation) = generation {
            self.config_generation.set(i64::try_from(generation).unwrap_or(i64::MAX));
        }
    }

    /// Records whether the OpenStack session is up.
    pub(crate) fn set_connected(&self, up: bool) {
        self.openstack_connected.set(i64::from(up));
    }

    /// Records leadership of `lease`.
    pub(crate) fn set_leader(&self, lease: &str, leader: bool) {
        self.leader.get_or_create(&LeaseLabels { lease: lease.to_owned() }).set(i64::from(leader));
    }

    /// OpenMetrics text.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_encoded_with_service_operation_and_result() {
        let metrics = Metrics::default();
        metrics.call("compute", "server_list", "ok", Duration::from_millis(20));
        let text = metrics.encode();
        assert!(
            text.contains(r#"occm_openstack_api_requests_total{service="compute",operation="server_list",result="ok"} 1"#),
            "{text}"
        );
    }
}
