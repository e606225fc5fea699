//! The Kubernetes side: the client (`kube_support`'s, under this binary's rate limit and
//! refusal recorder), Node patches and events.

pub(crate) mod rate_limit;
pub(crate) mod refusals;
pub mod secret;

use std::path::Path;
use std::sync::Arc;

use ::kube::client::ClientBuilder;
use kube_support::client::Stack;

pub(crate) use refusals::{Refusals, Refused};

pub(crate) use rate_limit::RateLimit;

/// An error building the Kubernetes client (naming the kubeconfig and its user, if any).
pub(crate) use kube_support::client::Error;

/// A client from `--kubeconfig`, else the in-cluster config (service account), whose every
/// request passes `limit` (`--kube-api-qps`/`--kube-api-burst`; `None`: no limit) and has its
/// refusals (403) recorded in `refused`.
pub(crate) async fn client(
    kubeconfig: Option<&Path>,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> Result<::kube::Client, Error> {
    Ok(layered(kube_support::client::builder(kubeconfig).await?, limit, refused))
}

/// A client for `config`, with the layers [`client`] adds.
#[cfg(test)]
pub(crate) fn build(
    config: ::kube::Config,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> Result<::kube::Client, Error> {
    let builder =
        kube_support::client::transport::builder(config).map_err(|e| Error::Client(Box::new(e)))?;
    Ok(layered(builder, limit, refused))
}

/// The client of `builder` (`kube_support`'s stack, the client certificate presented as
/// given) with its refusals recorded in `refused`, under the rate limit, if any.
fn layered(
    builder: ClientBuilder<Stack>,
    limit: Option<RateLimit>,
    refused: Arc<Refused>,
) -> ::kube::Client {
    let builder = builder.with_layer(&Refusals(refused));
    match limit {
        Some(limit) => builder.with_layer(&limit).build(),
        None => builder.build(),
    }
}
