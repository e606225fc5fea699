//! ccm-assets: from an install-config to everything an external cloud-controller-manager needs.
//!
//! The command line ([`cli`]) resolves flags and environment once, loads the inputs
//! ([`installconfig`]: install-config.yaml with the installer's defaults and validation, and on
//! OpenStack the selected clouds.yaml entry), and hands them to the asset registry ([`assets`]).
//! The [`graph`] engine resolves the requested targets depth-first, generating each asset once
//! from its declared parents, reconciles the result with the files and state already in the
//! asset directory (keeping user edits whose inputs did not change), and commits everything
//! atomically. [`ccm_formats`] holds the pure writers and
//! readers every asset shares (and the controller too).
//!
//! ```text
//!  install-config.yaml ─┐                          ┌─ manifests/*.yaml
//!  clouds.yaml ─────────┼─ installconfig ─ assets ─┤  (graph::store: generate once,
//!  flags + env ─────────┘   (cli::resolve)         │   keep edits, commit atomically)
//!                                                  └─ .ccm-assets-state.json
//! ```

pub mod assets;
pub mod cli;
pub mod create;
pub(crate) mod files;
pub mod graph;
pub mod installconfig;
pub mod operator;
pub(crate) mod render;
pub(crate) mod templates;
pub(crate) mod uuid;
