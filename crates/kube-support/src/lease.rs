//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go elects (its defaults:
//! 15 s lease, 10 s renew deadline, 2 s retry period).
//!
//! Expiry is judged by when *this* process last saw the record change (as client-go does),
//! not by `renewTime`, so clock skew between nodes does not matter. [`Elector::hold`] returns
//! when the lease is lost; the caller should then stop all it does as leader (the controller
//! exits, since a restart is the only safe way to stop work that may be mid-write), and
//! [`Elector::release`] on a clean shutdown lets the next candidate take over at once.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

/// An error of one acquire/renew attempt.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API call failed.
    #[error("lease {name}: API call failed")]
    Api {
        /// Lease name.
        name: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The lease was not renewed within the renew deadline.
    #[error("lease {name}: lost (not renewed within {deadline:?})")]
    Lost {
        /// Lease name.
        name: String,
        /// The renew deadline.
        deadline: Duration,
    },
}

/// Timing and identity.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Lease namespace.
    pub namespace: String,
    /// Lease name.
    pub name: String,
    /// This process's identity (`holderIdentity`).
    pub identity: String,
    /// How long a lease lasts unrenewed (`--leader-elect-lease-duration`).
    pub lease_duration: Duration,
    /// How long the holder keeps trying to renew before it counts the lease lost
    /// (`--leader-elect-renew-deadline`).
    pub renew_deadline: Duration,
    /// How long between attempts (`--leader-elect-retry-period`).
    pub retry_period: Duration,
}

/// One candidate.
#[derive(Debug)]
pub struct Elector {
    api: Api<Lease>,
    settings: Settings,
    /// The last record seen (holder, renewTime text) and when it was seen.
    observed: Option<(String, String, Instant)>,
}

impl Elector {
    /// A candidate for the Lease in `settings`.
    pub fn new(client: kube::Client, settings: Settings) -> Self {
        let api = Api::namespaced(client, &settings.namespace);
        Elector { api, settings, observed: None }
    }

    /// Waits until this process holds the lease.
    pub async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.settings.name, identity = %self.settings.identity, "acquired lease");
                    return;
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(error = %ccm_tls_explain::chain(&error), "lease acquire attempt failed")
                }
            }
            tokio::time::sleep(self.settings.retry_period).await;
        }
    }

    /// Renews every retry period; returns when the lease could not be renewed within the deadline.
    pub async fn hold(&mut self) -> Error {
        let mut last_renew = Instant::now();
        loop {
            tokio::time::sleep(self.settings.retry_period).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => last_renew = Instant::now(),
                Ok(false) => {
                    return Error::Lost {
                        name: self.settings.name.clone(),
                        deadline: self.settings.renew_deadline,
                    };
                }
                Err(error) => {
                    tracing::warn!(error = %ccm_tls_explain::chain(&error), "lease renew attempt failed")
                }
            }
            if last_renew.elapsed() > self.settings.renew_deadline {
                return Error::Lost {
                    name: self.settings.name.clone(),
                    deadline: self.settings.renew_deadline,
                };
            }
        }
    }

    /// Gives the lease up if this process holds it (client-go's `ReleaseOnCancel`), so the
    /// next candidate need not wait a lease duration.
    pub async fn release(&self) -> Result<bool, Error> {
        let s = &self.settings;
        let api_error = |source| Error::Api { name: s.name.clone(), source };
        let Some(mut lease) = self.api.get_opt(&s.name).await.map_err(api_error)? else {
            return Ok(false);
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(s.identity.as_str()) {
            return Ok(false);
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        lease.spec = Some(spec);
        match self.api.replace(&s.name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(source) => Err(api_error(source)),
        }
    }

    /// One client-go style attempt: create, take over an expired lease, or renew our own.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, Error> {
        let s = &self.settings;
        let api_error = |source| Error::Api { name: s.name.clone(), source };
        let now = MicroTime(jiff::Timestamp::now());
        let seconds = i32::try_from(s.lease_duration.as_secs()).unwrap_or(i32::MAX).max(1);
        let Some(mut lease) = self.api.get_opt(&s.name).await.map_err(api_error)? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(s.name.clone()),
                    namespace: Some(s.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(s.identity.clone()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(source) => Err(api_error(source)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let renew_text = spec.renew_time.as_ref().map(|t| t.0.to_string()).unwrap_or_default();
        let seen_at = match &self.observed {
            Some((h, r, at)) if *h == holder && *r == renew_text => *at,
            _ => Instant::now(),
        };
        self.observed = Some((holder.clone(), renew_text, seen_at));
        let ours = holder == s.identity;
        let duration = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(seconds)).unwrap_or(15),
        );
        if !ours && !holder.is_empty() && seen_at.elapsed() < duration {
            return Ok(false);
        }
        let mut next = spec;
        if !ours {
            next.acquire_time = Some(now.clone());
            next.lease_transitions = Some(next.lease_transitions.unwrap_or(0) + 1);
        }
        next.holder_identity = Some(s.identity.clone());
        next.lease_duration_seconds = Some(seconds);
        next.renew_time = Some(now);
        lease.spec = Some(next);
        // replace() carries the resourceVersion we read: a concurrent writer makes this a 409.
        match self.api.replace(&s.name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(source) => Err(api_error(source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fake_kube_apiserver::FakeApiServer;

    fn settings(identity: &str) -> Settings {
        Settings {
            namespace: "kube-system".into(),
            name: "cloud-controller-manager".into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    #[tokio::test]
    async fn first_candidate_wins_and_the_second_waits_for_expiry() {
        let fake = FakeApiServer::start().await.unwrap();
        let mut a = Elector::new(fake.client(), settings("a"));
        let mut b = Elector::new(fake.client(), settings("b"));
        assert!(a.try_acquire_or_renew().await.unwrap());
        assert!(!b.try_acquire_or_renew().await.unwrap());
        assert!(a.try_acquire_or_renew().await.unwrap(), "the holder renews");
        let lease = fake
            .get("coordination.k8s.io/v1", "leases", "kube-system", "cloud-controller-manager")
            .unwrap();
        assert_eq!(lease["spec"]["holderIdentity"], "a");
        assert_eq!(lease["spec"]["leaseDurationSeconds"], 15);
        // b has now observed a's record; once it has not changed for a lease duration, b takes over.
        assert!(!b.try_acquire_or_renew().await.unwrap());
        if let Some((_, _, at)) = &mut b.observed {
            *at -= Duration::from_secs(16);
        }
        assert!(b.try_acquire_or_renew().await.unwrap());
        let lease = fake
            .get("coordination.k8s.io/v1", "leases", "kube-system", "cloud-controller-manager")
            .unwrap();
        assert_eq!(lease["spec"]["holderIdentity"], "b");
        assert_eq!(lease["spec"]["leaseTransitions"], 1);
    }

    #[tokio::test]
    async fn a_released_lease_is_taken_at_once_by_the_next_candidate() {
        let fake = FakeApiServer::start().await.unwrap();
        let mut a = Elector::new(fake.client(), settings("a"));
        let mut b = Elector::new(fake.client(), settings("b"));
        assert!(a.try_acquire_or_renew().await.unwrap());
        assert!(!b.release().await.unwrap(), "only the holder releases");
        assert!(a.release().await.unwrap());
        assert!(b.try_acquire_or_renew().await.unwrap());
    }

    #[tokio::test]
    async fn holder_loses_the_lease_when_another_identity_takes_it() {
        let fake = FakeApiServer::start().await.unwrap();
        let mut a = Elector::new(
            fake.client(),
            Settings { retry_period: Duration::from_millis(20), ..settings("a") },
        );
        tokio::time::timeout(Duration::from_secs(10), a.acquire())
            .await
            .expect("the free lease is acquired within 10 s");
        fake.patch(
            "coordination.k8s.io/v1",
            "leases",
            "kube-system",
            "cloud-controller-manager",
            serde_json::json!({"spec": {"holderIdentity": "intruder", "renewTime": "2030-01-01T00:00:00.000000Z"}}),
        );
        let lost = tokio::time::timeout(Duration::from_secs(10), a.hold())
            .await
            .expect("the lost lease is noticed within 10 s");
        assert!(matches!(lost, Error::Lost { .. }), "{lost}");
    }
}
