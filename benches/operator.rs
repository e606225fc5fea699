//! `ccm-assets operator` against the real Kubernetes of scripts/kube-up.sh (issue 39), with
//! OpenShift's config kinds from our CRDs (tests/crds), set up as tests/it/real_kube_operator.rs
//! sets it up: the generated OpenStack example's Infrastructure, cloud-provider-config and
//! credentials Secret, a Network and a Proxy. The operator runs as its own user (a client
//! certificate, CN `ccm-assets-operator-bench`, in `system:masters`), and so does the benchmark
//! once the cluster is set up, so that the API server's audit log tells their requests apart.
//! Those tests use the same fixed names: the run waits while another one writes them, and a
//! write by anyone else meanwhile (`foreign_writes`) fails it.
//!
//! `CCM_KUBE_ENV=… cargo bench --bench operator` (scripts/bench.sh --operator builds the
//! release binary and names it in `CCM_BENCH_BIN`; without it, the binary cargo built for this
//! benchmark), with `--leader-elect-retry-period 1s` as the tests run it:
//! - the time from the operator's start to everything written and quiet;
//! - S seconds idle once converged (default 300; `CCM_BENCH_IDLE_SECONDS`): its writes other
//!   than the Lease's renewals (goal 0), the Lease's requests apart, RSS before and after;
//! - N events of ConfigMaps of `openshift-config` other than cloud-provider-config (default
//!   1,000; `CCM_BENCH_IDLE_EVENTS`): creates of 20, then updates in turn; the operator
//!   watches by name and must not even see them: its requests meanwhile, RSS after;
//! - E edits of `[LoadBalancer] monitor-delay` in `openshift-config/cloud-provider-config`
//!   (default 50; `CCM_BENCH_EDITS`), a new value each: the time from the edit's write
//!   returning to the event of a kube-rs watch of `cloud-conf` that carries the new value,
//!   p50 and p99; the operator's requests per edit by verb and resource; RSS after.
//!
//! Everything the run made is deleted at the end, after a panic too (the CRDs stay: every
//! test shares them). Prints the figures; a release build also writes
//! `target/bench/operator.json`.

#[path = "operator/setup.rs"]
mod setup;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::{Value, json};
use testkit::create::CreateManifests;
use testkit::kube_stack::{AuditLog, request};

use setup::{
    CCM_NAMESPACE, CONFIG_NAMESPACE, Cluster, DEPLOYMENT, OPERATOR_NAMESPACE, Operator, env_number,
    millis, percentile,
};

/// The operator's user: its requests are the audit log's events with this `user.username`.
const USER: &str = "ccm-assets-operator-bench";
/// The benchmark's own user once the cluster is set up (its edits and other ConfigMaps).
const DRIVER: &str = "ccm-assets-operator-bench-driver";
/// How many ConfigMaps the events of other ConfigMaps are spread over.
const OTHER_MAPS: usize = 20;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var_os(testkit::kube_stack::VAR).is_none() {
        eprintln!(
            "operator: needs the real Kubernetes: run scripts/bench.sh --operator (or set \
             CCM_KUBE_ENV to the env file of scripts/kube-up.sh)"
        );
        std::process::exit(2);
    }
    let counts = Counts {
        edits: env_number("CCM_BENCH_EDITS", 50).max(1),
        events: env_number("CCM_BENCH_IDLE_EVENTS", 1000),
        idle: Duration::from_secs(env_number("CCM_BENCH_IDLE_SECONDS", 300) as u64),
    };
    let bin = std::env::var_os("CCM_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ccm-assets")), PathBuf::from);
    let example = testkit::repo().join("assets/examples/openstack");
    let cluster = Cluster::new(&bin, &example, &CreateManifests::offline(), None, |_| {});
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut figures = runtime.block_on(measure(&cluster, &bin, &counts));
    drop(cluster);
    let log = figures["operator_log"].take();
    let log = log.as_str().unwrap_or_default();
    let warnings: Vec<&str> =
        log.lines().filter(|l| l.starts_with("WARN") || l.starts_with("ERROR")).collect();
    figures["operator_log"] = json!({"lines": log.lines().count(), "warnings": warnings.len()});
    let text = serde_json::to_string_pretty(&figures).expect("JSON") + "\n";
    print!("{text}");
    for line in warnings.iter().take(20) {
        eprintln!("operator: its log: {line}");
    }
    let foreign = figures["foreign_writes"].as_object().map_or(0, |f| f.len());
    assert!(
        foreign == 0,
        "another run wrote the operator's objects meanwhile (foreign_writes): these figures do \
         not measure the operator alone; run again when no operator test runs"
    );
    if !cfg!(debug_assertions) {
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
        std::fs::create_dir_all(&out).expect("target/bench");
        std::fs::write(out.join("operator.json"), text).expect("write operator.json");
        std::fs::write(out.join("operator.log"), log).expect("write operator.log");
    }
}

/// How much of each phase.
struct Counts {
    edits: usize,
    events: usize,
    idle: Duration,
}

/// The operator's requests in an audit log, split into the Lease's and the rest. A watch is
/// logged when its response starts and again when it ends: it counts where it started, so that
/// a watch the phase saw end (kube-rs ends each after 290 s, then watches again) is not counted
/// twice.
#[derive(Default)]
struct Requests {
    lease: BTreeMap<String, usize>,
    other: BTreeMap<String, usize>,
}

impl Requests {
    fn of(audit: &AuditLog) -> Requests {
        let mut out = Requests::default();
        for event in audit.by(USER) {
            if event["verb"] == "watch" && event["stage"] != "ResponseStarted" {
                continue;
            }
            let side = if event["objectRef"]["resource"] == "leases" {
                &mut out.lease
            } else {
                &mut out.other
            };
            *side.entry(request(&event)).or_default() += 1;
        }
        out
    }

    /// The writes among `requests` (create, update, patch, delete).
    fn writes(requests: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
        let write = |r: &str| {
            ["create ", "update ", "patch ", "delete ", "deletecollection "]
                .iter()
                .any(|verb| r.starts_with(verb))
        };
        requests.iter().filter(|(r, _)| write(r)).map(|(r, n)| (r.clone(), *n)).collect()
    }
}

fn total(requests: &BTreeMap<String, usize>) -> usize {
    requests.values().sum()
}

/// Waits until the operator has made no request but the Lease's for `quiet`, at most `limit`;
/// whether it went quiet.
async fn settle(audit: &AuditLog, quiet: Duration, limit: Duration) -> bool {
    let start = Instant::now();
    let mut last = (usize::MAX, Instant::now());
    loop {
        let count = total(&Requests::of(audit).other);
        if count != last.0 {
            last = (count, Instant::now());
        } else if last.1.elapsed() >= quiet {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The ClusterOperator's condition `kind`, when there is one.
async fn condition(operators: &Api<DynamicObject>, kind: &str) -> Option<Value> {
    let operator = operators.get_opt("cloud-controller-manager").await.ok()??;
    let conditions = operator.data["status"]["conditions"].as_array()?.clone();
    conditions.into_iter().find(|c| c["type"] == kind)
}

/// Everything the operator writes is there and the ClusterOperator says Available.
async fn converged(admin: &kube::Client) -> bool {
    let maps: Api<ConfigMap> = Api::namespaced(admin.clone(), CCM_NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), CCM_NAMESPACE);
    let gvk = GroupVersionKind::gvk("config.openshift.io", "v1", "ClusterOperator");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clusteroperators");
    let operators: Api<DynamicObject> = Api::all_with(admin.clone(), &resource);
    fn present<K>(found: Result<Option<K>, kube::Error>) -> bool {
        matches!(found, Ok(Some(_)))
    }
    present(maps.get_opt("cloud-conf").await)
        && present(maps.get_opt("ccm-trusted-ca").await)
        && present(deployments.get_opt(DEPLOYMENT).await)
        && condition(&operators, "Available").await.is_some_and(|c| c["status"] == "True")
}

/// Every `cloud.conf` a watch of `cloud-conf` delivers, with when it came.
fn watch_cloud_conf(
    admin: &kube::Client,
) -> tokio::sync::mpsc::UnboundedReceiver<(Instant, String)> {
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), CCM_NAMESPACE);
    let config = watcher::Config::default().fields("metadata.name=cloud-conf");
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut events = std::pin::pin!(watcher(api, config).default_backoff().applied_objects());
        while let Some(event) = events.next().await {
            let Ok(map) = event else { continue };
            let at = Instant::now();
            let text = map.data.and_then(|mut d| d.remove("cloud.conf")).unwrap_or_default();
            if sender.send((at, text)).is_err() {
                return;
            }
        }
    });
    receiver
}

/// The requests of a phase as figures: each `verb resource` per `per` (an edit, a period).
fn per(requests: &BTreeMap<String, usize>, per: usize) -> Value {
    let per = per.max(1) as f64;
    requests
        .iter()
        .map(|(r, n)| (r.clone(), json!((*n as f64 / per * 100.0).round() / 100.0)))
        .collect()
}

async fn measure(cluster: &Cluster, bin: &Path, counts: &Counts) -> Value {
    let stack = &cluster.stack;
    let driver = stack.client_kubeconfig(cluster.dir.path(), DRIVER, &["system:masters"]);
    let admin = kube_support::client::client(Some(&driver)).await.expect("the driver's client");
    let kubeconfig = stack.client_kubeconfig(cluster.dir.path(), USER, &["system:masters"]);

    // Start → converged and quiet.
    let start_audit = stack.audit();
    let started = Instant::now();
    let operator = Operator::start(bin, &kubeconfig, cluster.dir.path());
    while !converged(&admin).await {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not converged within 60 s:\n{}",
            operator.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let written = started.elapsed();
    let quiet = settle(&start_audit, Duration::from_secs(5), Duration::from_secs(60)).await;
    let startup = Requests::of(&start_audit);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_converged = operator.rss();

    // Idle.
    let idle_audit = stack.audit();
    tokio::time::sleep(counts.idle).await;
    let idle = Requests::of(&idle_audit);
    let rss_idle = operator.rss();

    // Events of other ConfigMaps of openshift-config.
    let others: Api<ConfigMap> = Api::namespaced(admin.clone(), CONFIG_NAMESPACE);
    let events_audit = stack.audit();
    let events_started = Instant::now();
    for i in 0..counts.events {
        let name = format!("bench-other-{}", i % OTHER_MAPS);
        if i < OTHER_MAPS {
            let map: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": name}, "data": {"n": i.to_string()}}))
            .expect("a ConfigMap");
            others.create(&PostParams::default(), &map).await.expect("create a ConfigMap");
        } else {
            let patch = json!({"data": {"n": i.to_string()}});
            others
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("update a ConfigMap");
        }
    }
    let events_took = events_started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during_events = Requests::of(&events_audit);
    let rss_events = operator.rss();

    // Edits of cloud-provider-config → the cloud-conf event carrying the edit.
    let provider: Api<ConfigMap> = Api::namespaced(admin.clone(), CONFIG_NAMESPACE);
    let original = provider.get("cloud-provider-config").await.expect("cloud-provider-config");
    let original = original.data.and_then(|mut d| d.remove("config")).expect("its config key");
    assert!(original.contains("[LoadBalancer]\n"), "no [LoadBalancer] section:\n{original}");
    let mut cloud_conf = watch_cloud_conf(&admin);
    // Its first item is the listed cloud-conf: the watch is established before the first edit.
    let listed = tokio::time::timeout(Duration::from_secs(30), cloud_conf.recv()).await;
    assert!(matches!(listed, Ok(Some(_))), "the cloud-conf watch listed nothing in 30 s");
    let edits_audit = stack.audit();
    let mut latencies = Vec::with_capacity(counts.edits);
    for i in 0..counts.edits {
        let line = format!("monitor-delay = {}s", 10 + i);
        let config = original.replace("[LoadBalancer]\n", &format!("[LoadBalancer]\n{line}\n"));
        while cloud_conf.try_recv().is_ok() {}
        let patch = json!({"data": {"config": config}});
        provider
            .patch("cloud-provider-config", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("edit cloud-provider-config");
        let edited = Instant::now();
        let deadline = tokio::time::sleep(Duration::from_secs(30));
        let mut deadline = std::pin::pin!(deadline);
        let at = loop {
            tokio::select! {
                event = cloud_conf.recv() => {
                    let (at, text) = event.expect("the cloud-conf watch runs");
                    if text.lines().any(|l| l.trim() == line) {
                        break at;
                    }
                }
                () = &mut deadline => panic!("edit {i} not in cloud-conf within 30 s:\n{}", operator.log()),
            }
        };
        latencies.push(at.saturating_duration_since(edited).as_secs_f64());
        // Whatever else the edit makes the operator do ends before the next one.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    settle(&edits_audit, Duration::from_secs(2), Duration::from_secs(30)).await;
    let during_edits = Requests::of(&edits_audit);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_edits = operator.rss();
    latencies.sort_by(f64::total_cmp);

    let log = operator.log();
    drop(operator);
    let foreign = interference(&start_audit);
    json!({
        "foreign_writes": foreign,
        "binary": bin.display().to_string(),
        "binary_bytes": std::fs::metadata(bin).map_or(0, |m| m.len()),
        "start_to_converged_s": (written.as_secs_f64() * 1000.0).round() / 1000.0,
        "went_quiet_after_start": quiet,
        "startup_requests": startup.other,
        "idle": {
            "seconds": counts.idle.as_secs(),
            "writes": Requests::writes(&idle.other),
            "requests": idle.other,
            "lease_requests": idle.lease,
        },
        "other_config_map_events": {
            "events": counts.events,
            "seconds": (events_took.as_secs_f64() * 100.0).round() / 100.0,
            "operator_requests": during_events.other,
            "lease_requests": during_events.lease,
        },
        "edits": {
            "count": counts.edits,
            "edit_to_cloud_conf_event_ms": {
                "p50": millis(percentile(&latencies, 0.5)),
                "p99": millis(percentile(&latencies, 0.99)),
                "min": millis(latencies[0]),
                "max": millis(*latencies.last().expect("an edit")),
            },
            "requests_per_edit": per(&during_edits.other, counts.edits),
            "writes_per_edit": per(&Requests::writes(&during_edits.other), counts.edits),
            "lease_requests": during_edits.lease,
        },
        "rss_kib": {
            "converged": rss_converged,
            "after_idle": rss_idle,
            "after_other_config_map_events": rss_events,
            "after_edits": rss_edits,
        },
        "operator_log": log,
    })
}

/// Writes to what the operator reads or writes by anyone but the operator, the benchmark and
/// Kubernetes' own controllers (another run's test or operator): `user verb resource` counted.
fn interference(audit: &AuditLog) -> BTreeMap<String, usize> {
    let ours = [CONFIG_NAMESPACE, CCM_NAMESPACE, OPERATOR_NAMESPACE];
    let mut out = BTreeMap::new();
    for event in audit.events() {
        let user = event["user"]["username"].as_str().unwrap_or_default();
        let object = &event["objectRef"];
        let verb = event["verb"].as_str().unwrap_or_default();
        let watched = ours.contains(&object["namespace"].as_str().unwrap_or_default())
            || object["apiGroup"] == "config.openshift.io"
            || object["name"] == DEPLOYMENT
            || object["name"] == "openstack-credentials";
        let write = ["create", "update", "patch", "delete"].contains(&verb);
        let kubernetes = user.starts_with("system:");
        if write && watched && !kubernetes && user != USER && user != DRIVER {
            let key = format!("{user} {}", request(&event));
            *out.entry(key).or_default() += 1;
        }
    }
    out
}
