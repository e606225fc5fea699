use serde_json::json;

use super::*;

#[test]
fn a_node_view_carries_every_label_of_the_cached_node() {
    let node: CachedNode = serde_json::from_value(json!({
        "metadata": {"name": "w", "labels": {"node.kubernetes.io/exclude-from-external-load-balancers": "",
            "disk": "ssd"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
            "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap();
    let view = node_view(&node);
    let labels: Vec<(&str, &str)> =
        view.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(labels, [("disk", "ssd"), (desired::EXCLUDE_LABEL, "")]);
    assert!(view.ready && !view.deleting);
    assert_eq!(view.internal_ip.as_deref(), Some("10.0.0.5"));
}
