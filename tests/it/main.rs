//! The one integration-test binary (see STYLE.md: tests/it).

mod azure_credentials;
mod bootstrap;
mod cli;
mod create;
mod fake_iam;
mod gcfg_oracle;
mod ibm_account;
mod installconfig;
mod layers;
mod leader_migration;
mod openstack;
mod platforms;
mod readback;
mod real_kube_admission;
mod real_kube_crds;
mod real_kube_operator;
mod real_kube_operator_ccm;
mod real_kube_operator_rbac;
mod real_openstack;
mod support;
mod tls;
mod validators;
