//! The one integration-test binary (see STYLE.md: tests/it).

mod bootstrap;
mod cli;
mod create;
mod installconfig;
mod openstack;
mod support;
mod validators;
