//! What IBM Cloud VPC and PowerVS share, owned by neither: the g2 cloud config writer
//! (`cloud_conf`), the API key and the account it belongs to (`access`, `iam`), the VPC
//! regions and their zones (`regions`), and the IBM CCM both platforms run ([`CCM`]).
//!
//! ```text
//!  ibmcloud ─┐
//!            ├─ ibm: cloud_conf, access → iam (account ID), regions, CCM
//!  powervs ──┘
//! ```
//! Everything here is pure but `access` and `iam::online`: the CLI reads the environment
//! and asks IAM for the account before the graph runs, so the account is part of
//! `cloud-access`.

pub(crate) mod access;
pub(crate) mod cloud_conf;
pub mod iam;
pub mod regions;

use crate::assets::cloud_access::{CloudAccess, IbmAccess};
use crate::assets::provider::{Binary, CcmSpec, Context, SecretMount};
use crate::graph::AssetError;

/// The account the cloud config names, from what the command loaded.
pub fn account_id<'a>(ctx: &Context<'a>) -> Result<&'a str, AssetError> {
    match ctx.access {
        CloudAccess::Ibm(IbmAccess { account_id: Some(id), .. }) => Ok(id),
        _ => Err("no IBM Cloud account ID: give it with --ibm-account-id".into()),
    }
}

/// The IBM CCM, reading the API key from `/etc/vpc`, as IBM Cloud runs it (PowerVS runs the
/// same binary under its own name).
pub const CCM: CcmSpec = CcmSpec {
    app: "ibm-cloud-controller-manager",
    binary: Binary::Command("/bin/ibm-cloud-controller-manager"),
    cloud_provider: "ibm",
    config_dir: "/etc/ibm",
    secret: Some(SecretMount {
        name: "ibm-cloud-credentials",
        dir: Some("/etc/vpc"),
        keys: &["ibmcloud_api_key"],
    }),
    reads_credentials_secret: false,
    inject_credentials: false,
    reloads_config: false,
    env: &[],
    node_manager: None,
};
