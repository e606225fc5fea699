//! The one integration-test binary (see STYLE.md: tests/it).

mod bootstrap;
mod cli;
mod create;
mod gcfg_oracle;
mod installconfig;
mod openstack;
mod platforms;
mod real_openstack;
mod support;
mod validators;
