//! Operator mode: `ccm-assets operator` keeps a running cluster's CCM as `create` renders it.

pub mod render;
