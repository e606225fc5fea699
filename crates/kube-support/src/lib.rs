//! What both binaries need of a Kubernetes API server: a client, Events, and a Lease to elect a
//! leader.
//!
//! [`client`] builds a `kube::Client` from a kubeconfig, else from the in-cluster service
//! account, over kube-rs's own HTTP stack except that the kubeconfig's client certificate is
//! presented as given, so that an X.509 v1 one works as it does with kubectl. [`events`] writes
//! Events as client-go does, one per distinct message. [`lease`] is client-go's leader election
//! on a `coordination.k8s.io/v1` Lease, which the holder releases on shutdown. The controller
//! adds its rate limit and refusal recorder to the client; the generator's operator mode uses
//! them as they are.

pub mod client;
pub mod events;
pub mod lease;
