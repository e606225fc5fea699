//! What a running CCM does with each cloud config generation outside its controllers: the
//! OpenStack session takes the new credentials (merged with the Secret's when `[Global]
//! secret-name` names one) and request timeout, logging in again only when they changed; and
//! every look at a changed file is told once: a log line, the reload metrics, and for a refused
//! edit a Warning Event on the CCM's own Pod (or, outside a pod, on its Lease).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube_support::events::{EventType, Recorder, Reporter};

use crate::cloud::OpenStack;
use crate::config::live::{Current, Outcome};
use crate::config::{Values, credentials};
use crate::kube::secret;
use crate::metrics::Metrics;

/// Keeps the session's credentials and request timeout those of the current generation, until
/// the config's sender is gone.
pub async fn feed_cloud(client: kube::Client, mut current: Current, cloud: Arc<OpenStack>) {
    let apply = |c| cloud.set_credentials(c);
    let mut from_secret: secret::Last = None;
    let mut from_file: Option<(Values, [u8; 32])> = None;
    loop {
        let settings = current.borrow_and_update().clone();
        cloud.set_request_timeout(settings.config.metadata.request_timeout);
        match secret::secret_of(&settings.config) {
            Some(named) => {
                from_file = None;
                secret::watch(client.clone(), named, current.clone(), &apply, &mut from_secret)
                    .await;
                // Another Secret, or none: its watch starts over from the current generation.
                if current.has_changed().is_err() {
                    return;
                }
            }
            None => {
                from_secret = None;
                let global = (settings.values().section("Global"), settings.files);
                if from_file.as_ref() != Some(&global) {
                    if from_file.is_some() {
                        tracing::info!(
                            generation = settings.generation,
                            "[Global], clouds.yaml or a file they name changed; using the new \
                             credentials"
                        );
                    }
                    from_file = Some(global);
                    apply(credentials(settings.values()));
                }
                if current.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Where a refused edit is told: the CCM's Pod (`POD_NAMESPACE`, `POD_NAME`, from the downward
/// API), else the Lease it elects itself with, else nowhere but the log.
#[derive(Clone)]
pub(crate) struct Teller {
    recorder: Recorder,
    object: Option<ObjectReference>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Teller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teller").field("object", &self.object).finish_non_exhaustive()
    }
}

impl Teller {
    pub(crate) fn new(
        client: kube::Client,
        metrics: Arc<Metrics>,
        pod: Option<(String, String)>,
        lease: Option<(String, String)>,
    ) -> Teller {
        let reporter =
            Reporter { controller: "openstack-cloud-controller-manager".into(), instance: None };
        let object = match (pod, lease) {
            (Some((namespace, name)), _) => Some(reference("v1", "Pod", namespace, name)),
            (None, Some((namespace, name))) => {
                Some(reference("coordination.k8s.io/v1", "Lease", namespace, name))
            }
            (None, None) => None,
        };
        Teller { recorder: Recorder::new(client, reporter), object, metrics }
    }

    /// Tells one outcome (each is told once per distinct content by the watch).
    pub(crate) fn tell(&self, outcome: &Outcome) {
        match outcome {
            Outcome::Applied { generation, warnings } => {
                self.metrics.config_reloaded(Some(*generation));
                tracing::info!(generation, "cloud config changed: applied");
                for warning in warnings {
                    tracing::warn!(generation, "cloud config: {warning}");
                }
            }
            Outcome::Rejected { file, errors } => {
                self.metrics.config_reloaded(None);
                let note = format!(
                    "cloud config {file} changed but is not applied (the last good one stays in \
                     use): {}",
                    errors.join("; ")
                );
                tracing::error!("{note}");
                let Some(object) = self.object.clone() else { return };
                let recorder = self.recorder.clone();
                tokio::spawn(async move {
                    let (type_, reason) = (EventType::Warning, "CloudConfigRejected");
                    let published =
                        crate::controllers::publish(&recorder, &object, type_, reason, note).await;
                    if let Err(error) = published {
                        tracing::warn!(%error, "cannot record the event of a refused cloud config");
                    }
                });
            }
        }
    }
}

fn reference(api_version: &str, kind: &str, namespace: String, name: String) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.to_owned()),
        kind: Some(kind.to_owned()),
        namespace: Some(namespace),
        name: Some(name),
        ..ObjectReference::default()
    }
}
