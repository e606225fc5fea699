//! The Kubernetes side: client construction, Node patches and events; `fake` is the test API server.

pub mod fake;
pub mod secret;

use std::path::Path;

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
    /// The client could not be built.
    #[error("cannot build the Kubernetes client")]
    Client(#[source] ::kube::Error),
}

/// A client from `--kubeconfig`, else the in-cluster config (service account).
pub async fn client(kubeconfig: Option<&Path>) -> Result<::kube::Client, Error> {
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
    ::kube::Client::try_from(config).map_err(Error::Client)
}
