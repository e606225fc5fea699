//! The Kubernetes side: client construction, Node patches and events.

pub(crate) mod rate_limit;
pub(crate) mod refusals;
pub mod secret;

use std::path::Path;
use std::sync::Arc;

pub(crate) use refusals::{Refusals, Refused};

pub(crate) use rate_limit::RateLimit;

/// An error building the Kubernetes client.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
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
    /// The client could not be built.
    #[error("cannot build the Kubernetes client")]
    Client(#[source] ::kube::Error),
}

/// A client from `--kubeconfig`, else the in-cluster config (service account), whose every
/// request passes `limit` (`--kube-api-qps`/`--kube-api-burst`; `None`: no limit) and has its
/// refusals (403) recorded in `refused`.
pub(crate) async fn client(
    kubeconfig: Option<&Path>,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> Result<::kube::Client, Error> {
    let config = match kubeconfig {
        Some(path) => {
            let err = |source| Error::Kubeconfig { path: path.display().to_string(), source };
            let file = ::kube::config::Kubeconfig::read_from(path).map_err(err)?;
            ::kube::Config::from_custom_kubeconfig(
                file,
                &::kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(err)?
        }
        None => ::kube::Config::incluster().map_err(Error::InCluster)?,
    };
    build(config, limit, refused)
}

/// A client for `config`: kube-rs's default service stack, its refusals recorded in `refused`,
/// under the rate limit, if any.
pub(crate) fn build(
    config: ::kube::Config,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> Result<::kube::Client, Error> {
    let builder = ::kube::client::ClientBuilder::try_from(config)
        .map_err(Error::Client)?
        .with_layer(&Refusals(refused));
    Ok(match limit {
        Some(limit) => builder.with_layer(&limit).build(),
        None => builder.build(),
    })
}
