//! Registry-wide invariants.

use super::*;
use crate::graph::store;

fn example_inputs() -> Inputs {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/examples/openstack");
    let text = std::fs::read_to_string(dir.join("install-config.yaml")).unwrap();
    let loaded = crate::installconfig::parse(&text, "install-config.yaml", &Default::default())
        .expect("the example is valid");
    let openstack = loaded.config.platform.openstack.as_ref().unwrap();
    let selected = crate::installconfig::clouds::load(&[dir.join("clouds.yaml")], &openstack.cloud)
        .expect("the example's cloud");
    let cloud = openstack::Cloud {
        name: selected.name,
        entry: selected.entry,
        ca_bundle: None,
        trust_bundle: None,
    };
    Inputs {
        install_config: Some(loaded.config),
        access: cloud_access::CloudAccess::OpenStack(Box::new(cloud)),
        infra_id: Some("demo-x7k2p".into()),
        lookup: Some(Box::new(openstack::lookup::Offline)),
        ..Inputs::default()
    }
}

#[test]
fn every_asset_reads_every_parent_it_declares() {
    let graph = graph(example_inputs()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let resolution = store::resolve(&graph, dir.path(), graph.ids(), &[]).unwrap();
    assert_eq!(resolution.unread, []);
}

#[test]
fn manifest_targets_cover_every_asset() {
    let graph = graph(Inputs::default()).unwrap();
    let mut reached = graph.topological(MANIFEST_TARGETS).unwrap();
    reached.sort_unstable();
    let mut all = graph.ids().to_vec();
    all.sort_unstable();
    assert_eq!(reached, all);
}

#[test]
fn every_platform_has_exactly_one_table_row() {
    let mut names: Vec<_> = platform::PLATFORMS.iter().map(|p| p.name).collect();
    names.dedup();
    assert_eq!(names.len(), platform::PLATFORMS.len());
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, so duplicates are adjacent");
}
