//! The service controller's share of the cloud config (`[LoadBalancer]` and the
//! `[LoadBalancerClass]` sections), one immutable value per config generation: a reconcile takes
//! the one current at its start (`reconcile`) and keeps it to its end, so that a change applies
//! to each Service whole, at its next reconcile (every Service is reconciled at once when the
//! settings change: `run`).

use std::collections::BTreeMap;

use super::annotations::Defaults;
use super::changes::Target;
use super::names::ServiceId;
use super::ownership::Maker;
use crate::cloud::octavia::LoadBalancerSpec;
use crate::config::{Config, LbClass};

/// What the service controller takes from one config generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LbSettings {
    /// Every Service's defaults (`[LoadBalancer]`).
    pub(crate) defaults: Defaults,
    /// `[LoadBalancerClass "name"]` by name.
    pub(crate) classes: BTreeMap<String, LbClass>,
    /// `provider-requires-serial-api-calls`: no fully-populated create.
    pub(crate) serial: bool,
    /// `manage-security-groups`: a security group on the members' ports.
    pub(crate) manage_security_groups: bool,
    /// `max-shared-lb`: how many Services one load balancer may serve.
    pub(crate) max_shared_lb: usize,
}

impl LbSettings {
    /// `None` with `[LoadBalancer] enabled = false` (the controller stays off, or stops).
    pub(crate) fn from_config(config: &Config) -> Option<LbSettings> {
        let lb = &config.load_balancer;
        if !lb.enabled {
            return None;
        }
        Some(LbSettings {
            defaults: Defaults::from_config(lb),
            classes: config.lb_classes.clone(),
            serial: lb.serial_api_calls,
            manage_security_groups: lb.manage_security_groups,
            max_shared_lb: usize::try_from(lb.max_shared_lb).unwrap_or(0),
        })
    }

    /// What `changes` plans for `spec` of Service `id` (`maker`: its own load balancer).
    pub(super) fn target<'a>(
        &self,
        spec: &'a LoadBalancerSpec,
        id: &'a ServiceId<'a>,
        maker: Option<Maker>,
        keep_members: bool,
    ) -> Target<'a> {
        let max_shared_lb = self.max_shared_lb;
        Target { spec, id, maker, keep_members, max_shared_lb }
    }
}
