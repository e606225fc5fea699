//! Micro-benchmarks of the generator: graph resolution of the OpenStack example and the writers
//! every run uses. `cargo bench --bench generator` (scripts/bench.sh records the figures).

use std::path::{Path, PathBuf};

use ccm_assets::assets::MANIFEST_TARGETS;
use ccm_assets::assets::openstack::Cloud;
use ccm_assets::assets::openstack::cloud_conf;
use ccm_assets::assets::openstack::lookup::CloudFacts;
use ccm_assets::create::{self, Env, Request, inputs};
use ccm_assets::graph::{Graph, store};
use ccm_assets::installconfig::{self, clouds};
use ccm_formats::{gcfg, yaml};

fn main() {
    divan::main();
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/examples/openstack")
}

fn cloud() -> Cloud {
    inputs::cloud(clouds::load(&[example().join("clouds.yaml")], "demo").unwrap()).unwrap()
}

/// The OpenStack example's graph, as `create manifests --offline --infra-id demo-x7k2p` builds
/// it (inputs read from the example directory, which is never written).
fn graph() -> Graph {
    let vars = [("OS_CLIENT_CONFIG_FILE", example().join("clouds.yaml"))];
    let env = Env::from_vars(
        |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone().into()),
        example(),
    );
    let request = Request {
        offline: true,
        infra_id: Some("demo-x7k2p".into()),
        ..Request::new(example(), env)
    };
    create::prepare(&request).unwrap().graph
}

/// Parsing, defaulting and validating the example install-config.
#[divan::bench]
fn install_config_parse() -> installconfig::Loaded {
    let text = std::fs::read_to_string(example().join("install-config.yaml")).unwrap();
    installconfig::parse(divan::black_box(&text), "install-config.yaml", &Default::default())
        .unwrap()
}

/// Every asset of the OpenStack example generated and reconciled against an empty directory
/// (certificates minted, as on a first run); nothing is written.
#[divan::bench]
fn graph_resolve_cold(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    bencher
        .with_inputs(graph)
        .bench_values(|graph| store::resolve(&graph, dir.path(), MANIFEST_TARGETS, &[]).unwrap());
}

/// The same against a directory already holding the output: the no-op rerun.
#[divan::bench]
fn graph_resolve_noop(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph(), dir.path(), MANIFEST_TARGETS, &[]).unwrap();
    bencher.with_inputs(graph).bench_values(|graph| {
        let resolution = store::resolve(&graph, dir.path(), MANIFEST_TARGETS, &[]).unwrap();
        assert!(resolution.plan.is_empty());
        resolution
    });
}

/// The installer's cloud.conf writer.
#[divan::bench]
fn cloud_conf_write(bencher: divan::Bencher) {
    let cloud = cloud();
    let facts = CloudFacts { floating_network_id: Some("6d8a7b3c".into()), load_balancer: true };
    bencher.bench(|| cloud_conf::cloud_conf(divan::black_box(&cloud), &facts));
}

/// The in-cluster transform: gcfg parse, edit, write.
#[divan::bench]
fn cloud_conf_in_cluster(bencher: divan::Bencher) {
    let text = cloud_conf::cloud_conf(
        &cloud(),
        &CloudFacts { floating_network_id: None, load_balancer: true },
    );
    bencher.bench(|| cloud_conf::in_cluster(divan::black_box(&text)).unwrap());
}

/// gcfg parsing of a cloud.conf with every section.
#[divan::bench]
fn gcfg_parse(bencher: divan::Bencher) {
    let text = "[Global]\nuse-clouds = true\nclouds-file = /etc/openstack/secret/clouds.yaml\n\
                cloud = openstack\nregion = \"Region#1\"\n\n[Networking]\npublic-network-name = a\n\
                public-network-name = b\n\n[LoadBalancer]\nfloating-network-id = x\nmax-shared-lb = 1\n";
    bencher.bench(|| gcfg::parse(divan::black_box(text)).unwrap());
}

/// The one YAML writer on a Deployment-sized manifest.
#[divan::bench]
fn yaml_write_manifest(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    store::create(&graph(), dir.path(), MANIFEST_TARGETS, &[]).unwrap();
    let text =
        std::fs::read_to_string(dir.path().join("manifests/ccm/20-deployment.yaml")).unwrap();
    let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    bencher.bench(|| yaml::to_yaml(divan::black_box(&value)).unwrap());
}
