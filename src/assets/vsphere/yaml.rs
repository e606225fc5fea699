//! The YAML cloud config vsphere-cloud-provider reads (`CPIConfig` in openshift/library-go's
//! `pkg/cloudprovider/vsphere/yaml.go`, which the installer marshals).
//!
//! Written through [`to_yaml`], so keys are sorted: the installer's sigs.k8s.io/yaml sorts them
//! too, so the order matches it and no reader depends on another. Empty fields are left out,
//! as the Go types' `omitempty` does.

use serde_json::{Map, Value, json};

use super::{
    NodeNetworking, NodeNetworkingSpec, REGION_TAG_CATEGORY, SECRET_NAME, SECRET_NAMESPACE,
    ZONE_TAG_CATEGORY, datacenters,
};
use crate::installconfig::VspherePlatform;
use ccm_formats::yaml::to_yaml;

/// `global` (the credentials Secret, self-signed certificates accepted), one `vcenter` entry
/// per vCenter (keyed by server; `port` only when the install-config sets one), `labels` with
/// more than one failure domain, and `nodes`.
///
/// `insecureFlag` is written in `global` only, as the installer does: a vCenter entry inherits
/// it (an earlier issue asked for it per vCenter; the installer never wrote it there).
/// See: issue 19.
pub(super) fn render(p: &VspherePlatform, networking: &NodeNetworking) -> String {
    let vcenters: Map<String, Value> = p
        .vcenters
        .iter()
        .map(|vc| {
            let mut entry = json!({"server": vc.server});
            if let Some(port) = vc.port.filter(|port| *port != 0) {
                entry["port"] = json!(port);
            }
            let dcs = datacenters(p, vc);
            if !dcs.is_empty() {
                entry["datacenters"] = json!(dcs);
            }
            (vc.server.clone(), entry)
        })
        .collect();
    let mut config = json!({
        "global": {
            "secretName": SECRET_NAME,
            "secretNamespace": SECRET_NAMESPACE,
            "insecureFlag": true,
        },
        "nodes": nodes(networking),
    });
    if !vcenters.is_empty() {
        config["vcenter"] = Value::Object(vcenters);
    }
    if p.failure_domains.len() > 1 {
        config["labels"] = json!({"zone": ZONE_TAG_CATEGORY, "region": REGION_TAG_CATEGORY});
    }
    to_yaml(&config).expect("a JSON tree of strings, numbers and booleans always serializes")
}

/// The `nodes` section: each side's network name and comma-joined CIDRs, the empty ones left
/// out (the installer's `setNodes`).
fn nodes(networking: &NodeNetworking) -> Value {
    let mut nodes = Map::new();
    let sides: [(&str, &NodeNetworkingSpec); 2] =
        [("External", &networking.external), ("Internal", &networking.internal)];
    for (side, spec) in sides {
        for (key, value) in [
            (format!("{}VmNetworkName", side.to_lowercase()), spec.network.clone()),
            (
                format!("{}NetworkSubnetCidr", side.to_lowercase()),
                spec.network_subnet_cidr.join(","),
            ),
            (format!("exclude{side}NetworkSubnetCidr"), spec.exclude_network_subnet_cidr.join(",")),
        ] {
            if !value.is_empty() {
                nodes.insert(key, Value::String(value));
            }
        }
    }
    Value::Object(nodes)
}
