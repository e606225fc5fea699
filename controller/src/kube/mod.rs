//! The Kubernetes side: client construction, Node patches and events.

pub(crate) mod rate_limit;
pub(crate) mod refusals;
pub mod secret;
pub(crate) mod transport;

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

/// A client from `--kubeconfig`, else the in-cluster config (service account), whose every
/// request passes `limit` (`--kube-api-qps`/`--kube-api-burst`; `None`: no limit) and has its
/// refusals (403) recorded in `refused`.
pub(crate) async fn client(
    kubeconfig: Option<&Path>,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> Result<::kube::Client, Error> {
    let Some(path) = kubeconfig else {
        let config = ::kube::Config::incluster().map_err(Error::InCluster)?;
        return build(config, limit, refused);
    };
    let err = |source| Error::Kubeconfig { path: path.display().to_string(), source };
    let file = ::kube::config::Kubeconfig::read_from(path).map_err(err)?;
    let user = current_user(&file);
    let options = ::kube::config::KubeConfigOptions::default();
    let config = ::kube::Config::from_custom_kubeconfig(file, &options).await.map_err(err)?;
    build(config, limit, refused).map_err(|e| match e {
        Error::Client(source) => {
            Error::FromKubeconfig { path: path.display().to_string(), user, source }
        }
        other => other,
    })
}

/// The user of the kubeconfig's current context, for errors about its credentials.
fn current_user(file: &::kube::config::Kubeconfig) -> String {
    let context = file.current_context.as_deref().and_then(|current| {
        file.contexts.iter().find(|c| c.name == current).and_then(|c| c.context.as_ref())
    });
    context.and_then(|c| c.user.clone()).unwrap_or_default()
}

/// A client for `config`: kube-rs's default service stack with the client certificate
/// presented as given ([`transport`]), its refusals recorded in `refused`, under the rate
/// limit, if any.
pub(crate) fn build(
    config: ::kube::Config,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> Result<::kube::Client, Error> {
    let builder = transport::builder(config)
        .map_err(|e| Error::Client(Box::new(e)))?
        .with_layer(&Refusals(refused));
    Ok(match limit {
        Some(limit) => builder.with_layer(&limit).build(),
        None => builder.build(),
    })
}
