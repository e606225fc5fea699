//! The controller's one integration-test binary: the real binary against the fake API server,
//! and (ignored by default) the real Keystone, Nova and Neutron of scripts/openstack-up.sh.

mod binary;
mod downgrade;
mod end_to_end;
mod guarded_writes;
mod in_cluster;
mod killed_mid_create;
mod lb_turns;
mod leader_migration;
mod live_config;
mod load_balancer;
mod load_balancer_ip;
mod load_balancer_settings;
mod member_hold;
mod member_subnet;
mod oracle;
mod proxy;
mod purge;
mod real_kube_bootstrap;
mod real_kube_hand_back;
mod real_kube_leader;
mod real_kube_metrics_auth;
mod real_kube_nodes;
mod real_kube_rbac;
mod real_kube_restart;
mod real_kube_services;
mod real_kube_v1_cert;
mod real_openstack;
mod request_pattern;
mod round_trip;
mod route_controller;
mod short_tokens;
mod support;
mod takeover;
mod tls;
mod upgrade;
mod upgrade_faults;
mod vip_port;

// The scale benchmark's replay of Nova and Neutron (and its request classifier), for the
// request-pattern tests; the benchmark uses the rest of them.
#[allow(dead_code, reason = "shared with benches/scale, which uses the rest")]
#[path = "../../benches/scale/ops.rs"]
mod ops;
#[allow(dead_code, reason = "shared with benches/scale, which uses the rest")]
#[path = "../../benches/scale/replay.rs"]
mod replay;
// The scale benchmark's server booting on the real stack (quotas raised, builds in waves,
// failed ones booted again), for the route controller's requests at N = 20.
#[allow(dead_code, reason = "shared with benches/scale, which uses the rest")]
#[path = "../../benches/scale/real.rs"]
mod real;
// The soak's member-list rule (benches/soak has no test harness): its unit tests run here.
#[allow(dead_code, reason = "the soak's member-list rule; its tests run here")]
#[path = "../../benches/soak/batches.rs"]
mod soak_batches;
