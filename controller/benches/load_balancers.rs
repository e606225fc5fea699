//! The service controller against the real Octavia (no-op drivers) and Neutron of
//! scripts/openstack-up.sh, every request counted by scale/real.rs's proxy (ops.rs names them).
//!
//! `CCM_OPENSTACK_ENV=… cargo bench --bench load_balancers` (scripts/bench.sh --lb starts the
//! stack when none is named): S Services of 3 TCP ports (default 50; `CCM_BENCH_SERVICES`) on 20
//! Ready nodes, with `--concurrent-service-syncs` C (default 8, the controller's; upstream's
//! is 1; `CCM_BENCH_LB_CONCURRENCY`). Prints and writes `target/bench/load_balancers.json`:
//! - time from each Service's creation to its `status.loadBalancer.ingress` (p50, p99, max);
//! - requests per Service adopted from the in-tree provider (A Services, default 3;
//!   `CCM_BENCH_ADOPTED`: their load balancers made as the in-tree provider made them by
//!   scripts/openstack_scene.py before the controller starts, members already right);
//! - requests per Service created, per Service when one node is added, per Service when the
//!   controller restarts (nothing cached: a full check of each), and per Service resync with
//!   nothing changed, split into mutating and read requests. The resync figure averages
//!   WINDOW_PERIODS rounds of resyncs of every Service (so the full check of every 6th resync
//!   is in it), delimited by the controller's own `occm_reconciles_total` on /metrics, not by
//!   timing: a resync round of S Services may take longer than a quiet gap would allow;
//!
//! then stops the controller and runs `purge --cluster-name` on what it made (issue 41: the
//! time, and the requests per object deleted), and deletes the Services, their finalizer gone. Before the S Services, bursts of B Services created at once
//! (`CCM_BENCH_BURSTS`, default `1,20`), each burst timed to every ingress, counted and deleted
//! again before the next. Every phase also counts the answers 409 (a load balancer busy) and
//! 429 (throttled).

// scale/real.rs also boots servers, which this benchmark does not use.
#![allow(dead_code)]

#[path = "common/ccm.rs"]
mod ccm;
#[path = "scale/ops.rs"]
mod ops;
#[path = "scale/real.rs"]
mod real;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use fake_kube_apiserver::FakeApiServer;
use serde_json::{Value, json};
use testkit::kube::{NodeFixture, load_balancer_service};

use ccm::{Controller, Octavia, env_number, percentile, settle};
use ops::Counter;

const NODES: usize = 20;
const PORTS: [u16; 3] = [80, 443, 8080];
const NAMESPACE: &str = "bench";
/// The resync period of the steady-state window (shorter in the quick debug run of
/// `cargo test --bench`), and how many periods it lasts.
const RESYNC: Duration = Duration::from_secs(if cfg!(debug_assertions) { 2 } else { 10 });
const WINDOW_PERIODS: u32 = 6;

fn node(i: usize) -> Value {
    let mut node = NodeFixture::initialized(&format!("lbb-node-{i:02}")).build();
    node["status"]["addresses"] = json!([{"type": "InternalIP", "address": format!("10.0.1.{i}")}]);
    node
}

/// Service `adopt-<i>` and, as the in-tree provider left it, its load balancer (every node a
/// member of each pool).
fn in_tree_service(fake: &FakeApiServer, i: usize) {
    let base = 32000 + (i as u16) * 3;
    let ports: Vec<(u16, u16)> = PORTS.iter().zip(base..).map(|(p, n)| (*p, n)).collect();
    let name = format!("adopt-{i:03}");
    let svc =
        fake.create("v1", "services", NAMESPACE, load_balancer_service(NAMESPACE, &name, &ports));
    let uid = svc["metadata"]["uid"].as_str().expect("a UID").to_owned();
    let scene =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/openstack_scene.py");
    let mut args: Vec<String> = ["made-lb-create", "--by", "in-tree", "--namespace", NAMESPACE]
        .into_iter()
        .map(str::to_owned)
        .chain(["--service".into(), name, "--uid".into(), uid])
        .collect();
    for (port, node_port) in &ports {
        args.extend(["--port".to_owned(), format!("{port}:{node_port}")]);
    }
    for n in 0..NODES {
        args.extend(["--member".to_owned(), format!("10.0.1.{n}")]);
    }
    let mut command = Command::new(&scene);
    if let Some(ledger) = testkit::sweep::ledger() {
        command.env(testkit::sweep::LEDGER, ledger);
    }
    let out = command.args(&args).output().expect("run openstack_scene.py");
    assert!(out.status.success(), "openstack_scene.py: {}", String::from_utf8_lossy(&out.stderr));
}

fn service(i: usize) -> Value {
    service_named(&format!("svc-{i:03}"), 30000 + (i as u16) * 3)
}

/// Service `name` of [`PORTS`] on node ports from `base`.
fn service_named(name: &str, base: u16) -> Value {
    let ports: Vec<(u16, u16)> = PORTS.iter().zip(base..).map(|(p, n)| (*p, n)).collect();
    load_balancer_service(NAMESPACE, name, &ports)
}

/// Creates `services` at once and times each from its creation to its ingress: the times,
/// sorted.
async fn create_at_once(
    fake: &FakeApiServer,
    controller: &Controller,
    services: &[Value],
) -> Vec<f64> {
    let names: Vec<String> = services
        .iter()
        .map(|s| s["metadata"]["name"].as_str().expect("a name").to_owned())
        .collect();
    let posted: Vec<Instant> = services
        .iter()
        .map(|svc| {
            fake.create("v1", "services", NAMESPACE, svc.clone());
            Instant::now()
        })
        .collect();
    let mut took: Vec<Option<f64>> = vec![None; services.len()];
    let limit = Instant::now() + Duration::from_secs(120 + 30 * services.len() as u64);
    while took.iter().any(Option::is_none) {
        assert!(Instant::now() < limit, "not every Service got an ingress:\n{}", controller.log());
        for (i, slot) in took.iter_mut().enumerate().filter(|(_, t)| t.is_none()) {
            let svc = fake.get("v1", "services", NAMESPACE, &names[i]);
            if svc.is_some_and(|s| s.pointer("/status/loadBalancer/ingress/0/ip").is_some()) {
                *slot = Some(posted[i].elapsed().as_secs_f64());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut times: Vec<f64> = took.into_iter().flatten().collect();
    times.sort_by(f64::total_cmp);
    times
}

/// Deletes every Service and waits until all are gone (each finalizer goes only after its
/// load balancer).
async fn delete_all(fake: &FakeApiServer, controller: &Controller) {
    let services = fake.list("v1", "services");
    for svc in &services {
        let name = svc["metadata"]["name"].as_str().expect("a name");
        fake.delete("v1", "services", NAMESPACE, name);
    }
    let deadline = Instant::now() + Duration::from_secs(60 + 10 * services.len() as u64);
    while !fake.list("v1", "services").is_empty() {
        assert!(Instant::now() < deadline, "Services not deleted in time:\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// p50, p99 and max of sorted `times`.
fn spread(times: &[f64]) -> Value {
    json!({"p50": percentile(times, 0.5), "p99": percentile(times, 0.99), "max": times.last()})
}

/// Answers 409 and 429 since `mark`.
fn refusals(counter: &Counter, mark: usize) -> Value {
    json!({"409": counter.answers(409, mark), "429": counter.answers(429, mark)})
}

/// The controller process and the port of its /metrics; stopped (SIGTERM, then waited for)
/// when dropped, on a panic too.
/// Requests since `mark` per Service: (mutating, reads, by operation).
fn per_service(counter: &Counter, mark: usize, services: usize) -> Value {
    let counts = counter.counts(mark);
    let counts: BTreeMap<&str, usize> =
        counts.into_iter().filter(|(op, _)| !op.starts_with("identity/")).collect();
    let sum = |mutating: bool| -> usize {
        counts.iter().filter(|(op, _)| mutates(op) == mutating).map(|(_, n)| n).sum()
    };
    let each = |n: usize| (n as f64 / services as f64 * 100.0).round() / 100.0;
    let detail: BTreeMap<&str, f64> = counts.iter().map(|(op, n)| (*op, each(*n))).collect();
    json!({"mutating": each(sum(true)), "reads": each(sum(false)), "by_operation": detail})
}

/// Whether `operation` (as ops.rs names it) changes something in OpenStack.
fn mutates(operation: &str) -> bool {
    let verb = operation.rsplit('_').next().unwrap_or_default();
    matches!(verb, "create" | "update" | "delete" | "replace" | "tag")
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Ok(_) = std::env::var("CCM_OPENSTACK_ENV") else {
        eprintln!(
            "load_balancers: needs the real Octavia: run scripts/bench.sh --lb (or set \
             CCM_OPENSTACK_ENV to the env file of scripts/openstack-up.sh)"
        );
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(run());
}

async fn run() {
    let services = env_number("CCM_BENCH_SERVICES", 50);
    let adopted = env_number("CCM_BENCH_ADOPTED", 3);
    let concurrency = env_number("CCM_BENCH_LB_CONCURRENCY", 8);
    // What the run made (the adopted load balancers, what the controller made for the cluster)
    // is deleted when it ends, after a panic too.
    let octavia = Octavia::start().await;
    let (real, conf) = (&octavia.real, octavia.conf(""));
    let fake = FakeApiServer::start().await.expect("fake API server");
    for i in 0..NODES {
        fake.create("v1", "nodes", "", node(i));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = format!("lbbench{}", std::process::id());
    testkit::sweep::watch(&cluster);
    let flags = |resync: &str| {
        vec![
            format!("--cluster-name={cluster}"),
            format!("--concurrent-service-syncs={concurrency}"),
            format!("--load-balancer-resync-period={resync}"),
        ]
    };
    let n = services as u64;
    // What the in-tree provider left, adopted at the first start: from the controller's first
    // request until it is quiet, with its login and catalog reads left out (per_service).
    for i in 0..adopted {
        in_tree_service(&fake, i);
    }
    let mark = real.counter.hits().len();
    // Phases that count every request until the controller goes quiet run without resyncs.
    let controller = Controller::start(&dir, &fake, &conf, &flags("1h"));
    controller.until_reconciles(adopted as u64, Duration::from_secs(120)).await;
    settle(&real.counter, Duration::from_secs(2), Duration::from_secs(60)).await;
    let adoption = per_service(&real.counter, mark, adopted.max(1));
    for i in 0..adopted {
        fake.delete("v1", "services", NAMESPACE, &format!("adopt-{i:03}"));
    }
    settle(&real.counter, Duration::from_secs(2), Duration::from_secs(120)).await;

    // Bursts: B Services at once, timed, counted, deleted again.
    let sizes = std::env::var("CCM_BENCH_BURSTS").unwrap_or_else(|_| "1,20".to_owned());
    let mut bursts = Vec::new();
    for size in sizes.split(',').filter_map(|b| b.trim().parse::<usize>().ok()) {
        let burst: Vec<Value> = (0..size)
            .map(|i| service_named(&format!("burst{size}-{i:03}"), 31000 + (i as u16) * 3))
            .collect();
        let mark = real.counter.hits().len();
        let times = create_at_once(&fake, &controller, &burst).await;
        settle(&real.counter, Duration::from_secs(3), Duration::from_secs(120)).await;
        bursts.push(json!({
            "services": size,
            "ingress_seconds": spread(&times),
            "requests_per_service": per_service(&real.counter, mark, size),
            "answers": refusals(&real.counter, mark),
        }));
        delete_all(&fake, &controller).await;
        settle(&real.counter, Duration::from_secs(2), Duration::from_secs(120)).await;
    }

    // Creates: every Service posted at once, each timed to its ingress.
    let mark = real.counter.hits().len();
    let all: Vec<Value> = (0..services).map(service).collect();
    let times = create_at_once(&fake, &controller, &all).await;
    settle(&real.counter, Duration::from_secs(3), Duration::from_secs(120)).await;
    let created = per_service(&real.counter, mark, services);
    let created_answers = refusals(&real.counter, mark);

    // One node joins: every Service is reconciled once more and its pools gain a member.
    let mark = real.counter.hits().len();
    let before = controller.reconciles().await;
    fake.create("v1", "nodes", "", node(NODES));
    controller.until_reconciles(before + n, Duration::from_secs(120 + 30 * n)).await;
    settle(&real.counter, Duration::from_secs(3), Duration::from_secs(120)).await;
    let node_added = per_service(&real.counter, mark, services);
    drop(controller);

    // A restart: nothing cached, every Service checked in full once.
    let mark = real.counter.hits().len();
    let controller = Controller::start(&dir, &fake, &conf, &flags("1h"));
    controller.until_reconciles(n, Duration::from_secs(120 + 10 * n)).await;
    settle(&real.counter, Duration::from_secs(2), Duration::from_secs(120)).await;
    let restart = per_service(&real.counter, mark, services);
    drop(controller);

    // Resyncs with nothing changed: after the start's reconciles and a first resync round,
    // a window of WINDOW_PERIODS resyncs of every Service (so the full check of every 6th
    // resync is in the average), counted by the controller's own reconcile metric.
    let controller =
        Controller::start(&dir, &fake, &conf, &flags(&format!("{}s", RESYNC.as_secs())));
    let limit = Duration::from_secs(120 + 10 * n) + RESYNC * (WINDOW_PERIODS + 2);
    let first = controller.until_reconciles(2 * n, limit).await;
    let mark = real.counter.hits().len();
    let window = Instant::now();
    let last = controller.until_reconciles(first + u64::from(WINDOW_PERIODS) * n, limit).await;
    let window = window.elapsed();
    let resyncs = usize::try_from(last - first).expect("a count");
    let steady = per_service(&real.counter, mark, resyncs);

    // The cluster is torn down: the controller goes, purge deletes what it made.
    drop(controller);
    let mark = real.counter.hits().len();
    let (purge_took, lines) = ccm::purge(dir.path(), &fake, &cluster);
    let purged =
        lines.iter().filter(|l| l.starts_with("deleted ") || l.starts_with("released ")).count();
    assert!(
        purged >= services,
        "purge deleted {purged} objects for {services} Services: {lines:#?}"
    );
    let purge_requests = per_service(&real.counter, mark, purged);
    // Nothing holds the Services any more: they go at once.
    for svc in fake.list("v1", "services") {
        let name = svc["metadata"]["name"].as_str().expect("a name");
        fake.delete("v1", "services", NAMESPACE, name);
    }
    assert_eq!(fake.list("v1", "services"), Vec::<Value>::new(), "a Service kept a finalizer");

    let figures = json!({
        "services": services,
        "nodes": NODES,
        "ports": PORTS.len(),
        "concurrent_service_syncs": concurrency,
        "ingress_seconds": spread(&times),
        "answers_while_created": created_answers,
        "bursts": bursts,
        "services_adopted": adopted,
        "requests_per_service_adopted": adoption,
        "requests_per_service_created": created,
        "requests_per_service_per_node_added": node_added,
        "requests_per_service_at_restart": restart,
        "requests_per_resync": steady,
        "resyncs_in_window": resyncs,
        "window_seconds": (window.as_secs_f64() * 10.0).round() / 10.0,
        "purge": {
            "objects_deleted": purged,
            "seconds": (purge_took.as_secs_f64() * 100.0).round() / 100.0,
            "requests_per_object": purge_requests,
        },
    });
    print_table(&figures);
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    std::fs::create_dir_all(&out).expect("target/bench");
    let text = serde_json::to_string_pretty(&figures).expect("JSON");
    std::fs::write(out.join("load_balancers.json"), text + "\n").expect("write the figures");
}

fn print_table(f: &Value) {
    println!(
        "# Load balancers: {} Services x {} ports, {} nodes, --concurrent-service-syncs={}\n",
        f["services"], f["ports"], f["nodes"], f["concurrent_service_syncs"]
    );
    let t = &f["ingress_seconds"];
    println!(
        "Service created -> ingress: p50 {:.2} s, p99 {:.2} s, max {:.2} s\n",
        t["p50"].as_f64().unwrap_or_default(),
        t["p99"].as_f64().unwrap_or_default(),
        t["max"].as_f64().unwrap_or_default()
    );
    println!(
        "| Services at once | p50 s | p99 s | max s | requests per Service | 409 | 429 |\n\
         |---|---|---|---|---|---|---|"
    );
    let row = |n: &Value, t: &Value, requests: &Value, answers: &Value| {
        let total = requests["mutating"].as_f64().unwrap_or_default()
            + requests["reads"].as_f64().unwrap_or_default();
        println!(
            "| {n} | {:.2} | {:.2} | {:.2} | {total:.2} | {} | {} |",
            t["p50"].as_f64().unwrap_or_default(),
            t["p99"].as_f64().unwrap_or_default(),
            t["max"].as_f64().unwrap_or_default(),
            answers["409"],
            answers["429"]
        );
    };
    for burst in f["bursts"].as_array().into_iter().flatten() {
        row(
            &burst["services"],
            &burst["ingress_seconds"],
            &burst["requests_per_service"],
            &burst["answers"],
        );
    }
    row(
        &f["services"],
        &f["ingress_seconds"],
        &f["requests_per_service_created"],
        &f["answers_while_created"],
    );
    println!("\n| per Service | mutating | reads | by operation |\n|---|---|---|---|");
    for (label, key) in [
        ("adopted from the in-tree provider", "requests_per_service_adopted"),
        ("created", "requests_per_service_created"),
        ("one node added", "requests_per_service_per_node_added"),
        ("controller restarted", "requests_per_service_at_restart"),
        ("resync, nothing changed", "requests_per_resync"),
    ] {
        let row = &f[key];
        let ops: Vec<String> = row["by_operation"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| format!("{k} {v}")).collect())
            .unwrap_or_default();
        println!("| {label} | {} | {} | {} |", row["mutating"], row["reads"], ops.join(", "));
    }
    let purge = &f["purge"];
    let per = &purge["requests_per_object"];
    let ops: Vec<String> = per["by_operation"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k} {v}")).collect())
        .unwrap_or_default();
    println!(
        "\npurge: {} objects in {:.2} s; per object {} mutating, {} reads ({})",
        purge["objects_deleted"],
        purge["seconds"].as_f64().unwrap_or_default(),
        per["mutating"],
        per["reads"],
        ops.join(", ")
    );
}
