//! File formats the generator reads and writes: pure functions, no I/O.

pub mod clouds_yaml;
pub mod gcfg;
pub mod kubeconfig;
pub mod pem;
pub mod yaml;
