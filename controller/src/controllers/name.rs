//! Controller names as upstream spells them (`--controllers`, metric labels, task names).

use std::fmt;
use std::str::FromStr;

/// A controller upstream's cloud-controller-manager knows (all four run here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ControllerName {
    /// `cloud-node`: initializes tainted Nodes and refreshes addresses.
    CloudNode,
    /// `cloud-node-lifecycle`: deletes Nodes whose server is gone, taints `SHUTOFF` ones.
    CloudNodeLifecycle,
    /// `service`: Octavia load balancers for `type: LoadBalancer` Services.
    Service,
    /// `route`: pod CIDRs routed through a Neutron router.
    Route,
}

/// A name that is not one of [`ControllerName::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown controller {0:?}")]
pub(crate) struct UnknownController(pub String);

impl ControllerName {
    /// Every name, in the order help and error messages list them.
    pub(crate) const ALL: [ControllerName; 4] = [
        ControllerName::CloudNode,
        ControllerName::CloudNodeLifecycle,
        ControllerName::Service,
        ControllerName::Route,
    ];

    /// The upstream name, verbatim (also the `controller` metric label).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ControllerName::CloudNode => "cloud-node",
            ControllerName::CloudNodeLifecycle => "cloud-node-lifecycle",
            ControllerName::Service => "service",
            ControllerName::Route => "route",
        }
    }

    /// k8s.io/cloud-provider's canonical name, which `--controllers` also accepts.
    pub(crate) fn canonical(self) -> &'static str {
        match self {
            ControllerName::CloudNode => "cloud-node-controller",
            ControllerName::CloudNodeLifecycle => "cloud-node-lifecycle-controller",
            ControllerName::Service => "service-lb-controller",
            ControllerName::Route => "node-route-controller",
        }
    }
}

impl FromStr for ControllerName {
    type Err = UnknownController;

    /// The alias (`route`) or the canonical name (`node-route-controller`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|name| name.as_str() == text || name.canonical() == text)
            .ok_or_else(|| UnknownController(text.to_owned()))
    }
}

impl fmt::Display for ControllerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_itself_and_others_are_unknown() {
        for name in ControllerName::ALL {
            assert_eq!(name.as_str().parse(), Ok(name));
            assert_eq!(name.canonical().parse(), Ok(name));
        }
        assert_eq!("node-route-controller".parse(), Ok(ControllerName::Route));
        assert_eq!(
            "cloud-nod".parse::<ControllerName>(),
            Err(UnknownController("cloud-nod".into()))
        );
        assert!("*".parse::<ControllerName>().is_err(), "`*` is a selector, not a name");
    }
}
