//! File formats the generator and the controller share: pure functions, no I/O.
//!
//! [`gcfg`] is the cloud.conf model (parse with line numbers, write with gcfg quoting),
//! [`clouds_yaml`] the OpenStack clouds.yaml model, [`pem`] and [`kubeconfig`] the certificate
//! and kubeconfig writers, [`yaml`] the one YAML writer every manifest goes through.

pub mod clouds_yaml;
pub mod gcfg;
pub mod kubeconfig;
pub mod pem;
pub mod yaml;
