//! Test support shared by every crate's tests and benchmarks (a dev-dependency only: no
//! release binary contains it).
//!
//! ```text
//!  stack           the env file of scripts/openstack-up.sh (CCM_OPENSTACK_ENV)
//!  sweep           a real-OpenStack test's guard: what it made is deleted when it ends
//!  tools           the validators and oracles of scripts/test-tools.sh (CCM_TEST_TOOLS)
//!  install_config  the examples in assets/examples as typed values, edited through serde
//!  create          `create manifests`: its command line, and the library run
//!  kube            Node and Service fixtures, a kubeconfig for the fake API server
//!  tls             a private CA, and TLS servers with a wrong certificate on purpose
//!  openssl         v1 client certificates as users mint them, and a client-certificate server
//!  cluster         the fake-kube-apiserver binary driven with real kubectl
//!  kube_stack      the real Kubernetes of scripts/kube-up.sh (CCM_KUBE_ENV), its audit log
//!  heartbeat       a test's Nodes kept Ready on that cluster (their Leases renewed)
//!  image           the image of scripts/image.sh, imported into the cluster's containerd
//!  installer       generated files put in that cluster as an installer would, for the operator
//!  ccm_pod         the operator's CCM run as a pod on a cloud node with a real server
//!  kube_front      a slow HTTP front for either API server: delays the answers a test chooses
//!  signal          a signal sent the moment a test chooses, without the delay of kill(1)
//!  mount           a ConfigMap volume as the kubelet lays it out and swaps it on an update
//!  wait            a probe polled until it answers, with context on a timeout
//! ```
//!
//! Helpers panic with a message that says how to fix the setup: a missing tool or stack fails
//! the test that needs it, never skips it.

pub mod ccm_pod;
pub mod cluster;
pub mod create;
pub mod heartbeat;
pub mod image;
pub mod install_config;
pub mod installer;
pub mod kube;
pub mod kube_front;
pub mod kube_stack;
pub mod mount;
pub mod openssl;
pub mod scene;
pub mod signal;
pub mod stack;
pub mod sweep;
pub mod tls;
pub mod tools;
pub mod wait;

use std::path::PathBuf;

/// The workspace root (examples, fixtures and scripts are read from here).
pub fn repo() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.join("../..").canonicalize().expect("the workspace root exists")
}
