//! Neutron writes guarded by the object's revision (`revision-if-match`): a read-modify-write
//! sends `If-Match: revision_number=N` with the revision it read, and a 412 (someone else wrote
//! first) comes back as [`Written::Stale`] for the caller to read again and redo. The one place
//! for that: the route controller's routers and address pairs, the service controller's member
//! ports' security groups and its floating IPs use it.

use osauth::services::{NETWORK, NetworkService};
use osauth::{ErrorKind, ServiceRequestBuilder};
use reqwest::StatusCode;
use serde::Deserialize;

use crate::cloud::limit::Noted as _;

use super::{Error, OpenStack, Result};

/// The marker of a write Neutron refused because the object's revision moved (412): only
/// [`guarded`] sets it, and [`is_stale`] reads it.
const STALE_KIND: ErrorKind = ErrorKind::OperationFailed;

/// The outcome of a write guarded by a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written<T> {
    /// Written; the object as Neutron answered.
    Done(T),
    /// Someone else wrote first (412): read again and redo.
    Stale,
}

/// The guard for an object read at `revision`: Neutron reports `revision_number` only with its
/// revisions plugin, which also honours `If-Match`; without it (0, absent) the write goes
/// unguarded.
pub fn guard(revision: u64) -> Option<u64> {
    (revision > 0).then_some(revision)
}

/// True when a guarded write found the revision moved (see [`STALE_KIND`]).
pub(crate) fn is_stale(error: &Error) -> bool {
    matches!(error, Error::Call { source, .. } if source.kind() == STALE_KIND)
}

/// Maps a guarded write's 412 to [`Written::Stale`] (counted as a failed request).
pub(crate) fn stale_to_written<T>(result: Result<T>) -> Result<Written<T>> {
    match result {
        Ok(done) => Ok(Written::Done(done)),
        Err(error) if is_stale(&error) => Ok(Written::Stale),
        Err(error) => Err(error),
    }
}

#[derive(Deserialize)]
struct PortRoot<T> {
    port: T,
}

/// One port with these `fields` (its revision among them): read again after a 412.
pub(crate) async fn port<T>(cloud: &OpenStack, id: &str, fields: &[(&str, &str)]) -> Result<T>
where
    T: serde::de::DeserializeOwned + Send,
{
    let what = format!("port {id}");
    let root: PortRoot<T> = cloud
        .call("network", "port_get", &what, |s| async move {
            s.get(NETWORK, &["ports", id]).query(fields).fetched().await
        })
        .await?;
    Ok(root.port)
}

/// Sends a write, with `If-Match: revision_number=N` when `revision` is given, and decodes the
/// answer; a 412 becomes the [`STALE_KIND`] error, any other failure osauth's own.
pub(crate) async fn guarded<T: serde::de::DeserializeOwned + Send>(
    request: ServiceRequestBuilder<NetworkService>,
    revision: Option<u64>,
) -> Result<T, osauth::Error> {
    let request = match revision {
        Some(n) => request.header("If-Match", format!("revision_number={n}")),
        None => request,
    };
    let response = request.send_unchecked().await?;
    crate::cloud::limit::note(&response);
    if response.status() == StatusCode::PRECONDITION_FAILED {
        let text = response.text().await.unwrap_or_default();
        return Err(osauth::Error::new(STALE_KIND, format!("revision changed: {text}")));
    }
    let response = osauth::client::check(response).await?;
    response.json::<T>().await.map_err(osauth::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_marked_failure_counts_as_stale() {
        let stale =
            Error::Call { operation: "port_update", source: osauth::Error::new(STALE_KIND, "x") };
        assert!(is_stale(&stale));
        let other = osauth::Error::new(ErrorKind::InvalidInput, "Constrained to 1");
        assert!(!is_stale(&Error::Call { operation: "port_update", source: other }));
        assert_eq!(stale_to_written::<()>(Err(stale)).unwrap(), Written::Stale);
    }

    #[test]
    fn a_revision_guards_only_when_neutron_reports_one() {
        assert_eq!(guard(7), Some(7));
        assert_eq!(guard(0), None);
    }
}
