//! Cloud config edits under a running CCM (issue 38), against the fake API server and the real
//! Octavia (no-op drivers) of scripts/openstack-up.sh, every request counted by scale/real.rs's
//! proxy. The config is a kubelet-style mount, swapped as the kubelet swaps it.
//!
//! `CCM_OPENSTACK_ENV=… cargo bench --bench live_config` (scripts/bench.sh --live-config starts
//! the stack when none is named), at the default flags but `--controllers=service`:
//! - E edits of `[LoadBalancer] lb-method` (default 20; `CCM_BENCH_EDITS`), ROUND_ROBIN and
//!   LEAST_CONNECTIONS in turn, with one Service converged: the time from each swap to the
//!   first request that uses the new value (the pool's update reaching Octavia), p50 and p99;
//! - then, the Service gone, M edits of `[LoadBalancer] monitor-delay` (default 1,000;
//!   `CCM_BENCH_IDLE_EDITS`), each waited for on `occm_config_generation`: the process's RSS
//!   before and after, so that a generation nothing holds shows as no growth.
//!
//! Prints and writes `target/bench/live_config.json`.

// scale/real.rs also boots servers, and ccm.rs serves other benchmarks too.
#![allow(dead_code)]

#[path = "common/ccm.rs"]
mod ccm;
#[path = "scale/ops.rs"]
mod ops;
#[path = "scale/real.rs"]
mod real;

use std::time::{Duration, Instant};

use fake_kube_apiserver::FakeApiServer;
use serde_json::json;
use testkit::kube::{NodeFixture, load_balancer_service};
use testkit::mount::KubeletMount;

use ccm::{Controller, Octavia, env_number, percentile, settle};

const CONF: &str = "cloud.conf";

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Ok(_) = std::env::var("CCM_OPENSTACK_ENV") else {
        eprintln!(
            "live_config: needs the real Octavia: run scripts/bench.sh --live-config (or set \
             CCM_OPENSTACK_ENV to the env file of scripts/openstack-up.sh)"
        );
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(run());
}

/// The process's resident set (`VmRSS`), in KiB.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).unwrap_or(0)
}

/// One gauge of the controller's /metrics, 0 until it answers.
async fn gauge(controller: &Controller, name: &str) -> u64 {
    let text = controller.metrics().await;
    let line = text.lines().find(|l| l.starts_with(&format!("{name} ")));
    line.and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0)
}

async fn run() {
    let edits = env_number("CCM_BENCH_EDITS", 20);
    let idle_edits = env_number("CCM_BENCH_IDLE_EDITS", 1000);
    let octavia = Octavia::start().await;
    let real = &octavia.real;
    let conf = |method: &str, delay: u32| {
        octavia.conf(&format!("lb-method = {method}\nmonitor-delay = {delay}s\n"))
    };
    let fake = FakeApiServer::start().await.expect("fake API server");
    let mut node = NodeFixture::initialized("live-bench-0").build();
    node["status"]["addresses"] = json!([{"type": "InternalIP", "address": "10.0.1.250"}]);
    fake.create("v1", "nodes", "", node);
    fake.create("v1", "services", "bench", load_balancer_service("bench", "web", &[(80, 30250)]));
    let cluster = format!("livebench{}", std::process::id());
    testkit::sweep::watch(&cluster);
    let mut mount = KubeletMount::new(&[(CONF, &conf("ROUND_ROBIN", 5))]);
    let flags = [format!("--cluster-name={cluster}"), "--controllers=service".to_owned()];
    let controller = Controller::start_at(&mount.path(CONF), mount.dir(), &fake, &flags);
    controller.until_reconciles(1, Duration::from_secs(180)).await;
    settle(&real.counter, Duration::from_secs(2), Duration::from_secs(120)).await;

    // Swap → the first pool update that carries the new method.
    let mut latencies = Vec::with_capacity(edits);
    for i in 0..edits {
        let method = if i % 2 == 0 { "LEAST_CONNECTIONS" } else { "ROUND_ROBIN" };
        let mark = real.counter.hits().len();
        mount.swap(&[(CONF, &conf(method, 5))]);
        let swapped = Instant::now();
        let deadline = swapped + Duration::from_secs(60);
        let at = loop {
            let hits = real.counter.hits();
            let update = hits[mark..].iter().find(|h| h.operation == "load-balancer/pool_update");
            if let Some(hit) = update {
                break hit.at;
            }
            assert!(
                Instant::now() < deadline,
                "no pool update 60 s after edit {i}:\n{}",
                controller.log()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        latencies.push(at.duration_since(swapped).as_secs_f64());
        settle(&real.counter, Duration::from_secs(2), Duration::from_secs(60)).await;
    }
    latencies.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));

    // Memory over idle generations: the Service gone, then edits nothing acts on.
    fake.delete("v1", "services", "bench", "web");
    let gone = Instant::now() + Duration::from_secs(180);
    while fake.get("v1", "services", "bench", "web").is_some() {
        assert!(Instant::now() < gone, "the Service is still there:\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    settle(&real.counter, Duration::from_secs(2), Duration::from_secs(60)).await;
    let pid = controller.child.id();
    let generation = gauge(&controller, "occm_config_generation").await;
    let before = rss(pid);
    let started = Instant::now();
    for i in 0..idle_edits {
        let delay = 6 + (i % 2) as u32;
        mount.swap(&[(CONF, &conf("ROUND_ROBIN", delay))]);
        let want = generation + 1 + i as u64;
        let deadline = Instant::now() + Duration::from_secs(30);
        while gauge(&controller, "occm_config_generation").await < want {
            assert!(
                Instant::now() < deadline,
                "generation {want} not applied:\n{}",
                controller.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let per_edit = started.elapsed().as_secs_f64() / idle_edits.max(1) as f64;
    // jemalloc returns freed pages within a second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss(pid);

    let figures = json!({
        "edits": edits,
        "swap_to_first_request_s": {"p50": round(p50), "p99": round(p99),
            "max": round(*latencies.last().unwrap_or(&0.0))},
        "idle_edits": idle_edits,
        "seconds_per_idle_edit": round(per_edit),
        "rss_kib": {"before": before, "after": after},
    });
    println!("{}", serde_json::to_string_pretty(&figures).expect("JSON"));
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    std::fs::create_dir_all(&out).expect("target/bench");
    let text = serde_json::to_string_pretty(&figures).expect("JSON") + "\n";
    std::fs::write(out.join("live_config.json"), text).expect("write live_config.json");
}

fn round(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}
