//! A Kubernetes client from a kubeconfig, else the in-cluster configuration (service account).
//!
//! The HTTP stack under it is kube-rs's own except for the client certificate, presented as
//! given so that an X.509 v1 one works ([`transport`]). [`client`] is that client as it is;
//! [`builder`] leaves the last step to a caller that adds layers of its own (the controller's
//! rate limit and refusal recorder). Errors about a kubeconfig name its path and the current
//! context's user.

pub mod transport;

use std::path::Path;

use ::kube::client::ClientBuilder;

pub use transport::Stack;

/// An error building the Kubernetes client.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig could not be read.
    #[error("cannot load kubeconfig {path}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: ::kube::config::KubeconfigError,
    },
    /// No kubeconfig given and no in-cluster configuration.
    #[error("no --kubeconfig given and no in-cluster configuration")]
    InCluster(#[source] ::kube::config::InClusterError),
    /// The client could not be built from what the kubeconfig's user or cluster says.
    #[error("cannot build the Kubernetes client from kubeconfig {path} (user {user:?})")]
    FromKubeconfig {
        /// The file.
        path: String,
        /// The current context's user.
        user: String,
        /// Why.
        #[source]
        source: Box<transport::Error>,
    },
    /// The client could not be built.
    #[error("cannot build the Kubernetes client")]
    Client(#[source] Box<transport::Error>),
}

/// A client from `kubeconfig`, else the in-cluster config (service account), with no layers
/// beyond kube-rs's own (no rate limit).
pub async fn client(kubeconfig: Option<&Path>) -> Result<::kube::Client, Error> {
    Ok(builder(kubeconfig).await?.build())
}

/// A client from `kubeconfig`, else the in-cluster config, without kube-rs's own retry of
/// 429, 503 and 504 answers: every answer reaches the caller at once, and the caller retries on
/// its own schedule. kube-rs retries those up to 15 times with a backoff doubling from 5 ms,
/// about 160 s in all, so that a request made during an outage of a minute may come back long
/// after the outage, and a Lease renewal may return after its renew deadline has passed while
/// its holder still acts as the leader. The operator mode uses this one.
pub async fn client_failing_fast(kubeconfig: Option<&Path>) -> Result<::kube::Client, Error> {
    Ok(builder_with(kubeconfig, false).await?.build())
}

/// A client builder from `kubeconfig`, else the in-cluster config (service account), for a
/// caller that adds its own layers before it builds.
pub async fn builder(kubeconfig: Option<&Path>) -> Result<ClientBuilder<Stack>, Error> {
    builder_with(kubeconfig, true).await
}

/// [`builder`], with kube-rs's retry of 429, 503 and 504 answers or without.
async fn builder_with(
    kubeconfig: Option<&Path>,
    retry: bool,
) -> Result<ClientBuilder<Stack>, Error> {
    let Some(path) = kubeconfig else {
        let mut config = ::kube::Config::incluster().map_err(Error::InCluster)?;
        config.default_retry = retry;
        return transport::builder(config).map_err(|e| Error::Client(Box::new(e)));
    };
    let err = |source| Error::Kubeconfig { path: path.display().to_string(), source };
    let file = ::kube::config::Kubeconfig::read_from(path).map_err(err)?;
    let user = current_user(&file);
    let options = ::kube::config::KubeConfigOptions::default();
    let mut config = ::kube::Config::from_custom_kubeconfig(file, &options).await.map_err(err)?;
    config.default_retry = retry;
    transport::builder(config).map_err(|e| Error::FromKubeconfig {
        path: path.display().to_string(),
        user,
        source: Box::new(e),
    })
}

/// The user of the kubeconfig's current context, for errors about its credentials.
fn current_user(file: &::kube::config::Kubeconfig) -> String {
    let context = file.current_context.as_deref().and_then(|current| {
        file.contexts.iter().find(|c| c.name == current).and_then(|c| c.context.as_ref())
    });
    context.and_then(|c| c.user.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests;
