//! The fake API server as its clients see it: the kube crate's client in-process, and real
//! kubectl against the `fake-kube-apiserver` binary.

mod api_checks;
mod kube_client;
mod kubectl;
