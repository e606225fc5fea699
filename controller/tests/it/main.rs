//! The controller's one integration-test binary: the real binary against the fake API server,
//! and (ignored by default) the real Keystone, Nova and Neutron of scripts/openstack-up.sh.

mod binary;
mod end_to_end;
mod load_balancer;
mod load_balancer_settings;
mod oracle;
mod proxy;
mod real_openstack;
mod support;
mod tls;
