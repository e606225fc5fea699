//! The controller at scale: the real binary against a recorded-response OpenStack replay
//! (replay.rs) and the wire-level fake API server, both in this process, with N tainted nodes.
//!
//! `cargo bench --bench scale` (release; N = 1,000 and 5,000) prints the figures and a table
//! against the upstream CCM's documented per-node pattern; `cargo test --bench scale` (debug,
//! N = 20, short periods) only checks that it still runs. scripts/bench.sh runs both ways.
//!
//! Per N: time until no node carries the uninitialized taint; replay requests per node init;
//! requests per address resync; requests per lifecycle tick once 10% of the nodes are NotReady;
//! the process's VmRSS/VmHWM and CPU time from /proc.

mod replay;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::watcher;
use occm::kube::fake::FakeApiServer;
use serde_json::{Value, json};

use replay::Replay;

const BIN: &str = env!("CARGO_BIN_EXE_openstack-cloud-controller-manager");
const TAINT: &str = "node.cloudprovider.kubernetes.io/uninitialized";

/// One run's settings.
struct Settings {
    nodes: usize,
    /// `--node-status-update-frequency`.
    resync: Duration,
    /// `--node-monitor-period`.
    monitor: Duration,
    /// Address resyncs to observe.
    resyncs: usize,
    /// Lifecycle ticks to observe.
    ticks: usize,
}

/// One run's figures.
struct Figures {
    nodes: usize,
    init: Duration,
    init_calls: BTreeMap<&'static str, usize>,
    init_cpu: Duration,
    resync_calls: f64,
    resync_detail: BTreeMap<&'static str, usize>,
    resyncs: usize,
    idle_tick_calls: usize,
    tick_calls: f64,
    ticks: usize,
    not_ready: usize,
    rss_kib: u64,
    hwm_kib: u64,
    steady_cpu: Duration,
    steady_wall: Duration,
    total_cpu: Duration,
    node_bytes: usize,
    bursts: Vec<usize>,
    retries: BTreeMap<String, usize>,
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --bench scale` passes nothing: quick mode.
    let full = std::env::args().any(|a| a == "--bench");
    let runs: Vec<Settings> = if full {
        // 20: the fixed cost, to tell it from the per-node cost.
        [20, 1000, 5000]
            .into_iter()
            .map(|nodes| Settings {
                nodes,
                resync: Duration::from_secs(10),
                monitor: Duration::from_secs(5),
                resyncs: 2,
                ticks: 3,
            })
            .collect()
    } else {
        vec![Settings {
            nodes: 20,
            resync: Duration::from_secs(2),
            monitor: Duration::from_millis(500),
            resyncs: 1,
            ticks: 2,
        }]
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let figures: Vec<Figures> = runs.iter().map(|s| runtime.block_on(run(s))).collect();
    print_report(&figures, full);
}

fn node_object(template: &Value, i: usize) -> Value {
    let name = replay::server_name(i);
    let mut node = template.clone();
    node["metadata"]["name"] = json!(name);
    node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
    node["status"]["addresses"] = json!([{"type": "Hostname", "address": name}]);
    node
}

fn ready(node: &Node) -> bool {
    !node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == TAINT))
}

async fn run(s: &Settings) -> Figures {
    let n = s.nodes;
    let replay = Replay::start(n).await;
    let fake = FakeApiServer::start().await.expect("fake API server");
    let template: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/fixtures/node.json"
        ))
        .expect("node.json"),
    )
    .expect("JSON");
    let node_bytes = node_object(&template, 0).to_string().len();
    for i in 0..n {
        fake.create("v1", "nodes", "", node_object(&template, i));
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("cloud.conf");
    std::fs::write(
        &conf,
        format!(
            "[Global]\nauth-url = {}\nusername = ccm-user\npassword = bench-pass\ntenant-name = ccm\n\
             domain-name = Default\nregion = RegionOne\n",
            replay.auth_url()
        ),
    )
    .expect("write cloud.conf");
    let kubeconfig = write_kubeconfig(dir.path(), &fake.url());
    let log = std::fs::File::create(dir.path().join("occm.log")).expect("log file");

    // Watch the nodes from here (event-driven, no polling of the fake's store).
    let (tx, mut initialized) = tokio::sync::watch::channel(0usize);
    let api: Api<Node> = Api::all(fake.client());
    let watch = tokio::spawn(async move {
        let mut done = HashSet::new();
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        while let Some(Ok(event)) = stream.next().await {
            if let watcher::Event::Apply(node) | watcher::Event::InitApply(node) = event
                && ready(&node)
            {
                done.insert(node.metadata.name.unwrap_or_default());
                tx.send_replace(done.len());
            }
        }
    });

    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args([
            "--cloud-provider=openstack".to_owned(),
            format!("--cloud-config={}", conf.display()),
            format!("--kubeconfig={}", kubeconfig.display()),
            "--leader-elect=false".to_owned(),
            "--secure-port=0".to_owned(),
            // The Kubernetes side is not what is measured: client-go's default 20 qps would make
            // initialization take N/10 s (two writes per node) whatever the cloud does.
            "--kube-api-qps=-1".to_owned(),
            format!("--node-status-update-frequency={}ms", s.resync.as_millis()),
            format!("--node-monitor-period={}ms", s.monitor.as_millis()),
        ])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the controller binary");
    let pid = child.id();

    let limit = Duration::from_secs(60 + n as u64 / 5);
    let all = tokio::time::timeout(limit, initialized.wait_for(|&done| done >= n)).await;
    let init = started.elapsed();
    if all.is_err() {
        stop(&mut child);
        let text = std::fs::read_to_string(dir.path().join("occm.log")).unwrap_or_default();
        panic!("{n} nodes not initialized within {limit:?}; controller log:\n{text}");
    }
    let init_cpu = cpu(pid);
    let init_calls = replay.counts(0);

    // Address resyncs: count from the first one that starts after initialization.
    let mark = replay.hits().len();
    let resync_wait = s.resync * (s.resyncs as u32 + 1) + Duration::from_secs(2);
    tokio::time::sleep(resync_wait).await;
    let during = replay.counts(mark);
    let resyncs = during.get("network/port_list_all").copied().unwrap_or(0);
    let resync_ops = ["compute/server_list_page", "network/port_list_all", "compute/flavor_get"];
    let resync_detail: BTreeMap<_, _> =
        during.iter().filter(|(k, _)| resync_ops.contains(k)).map(|(k, v)| (*k, *v)).collect();
    let resync_total: usize = resync_detail.values().sum();
    let idle_tick_calls = during.get("compute/server_get").copied().unwrap_or(0)
        + during.get("compute/server_list_by_name").copied().unwrap_or(0);

    // Lifecycle: 10% of the nodes go NotReady (as the node-lifecycle controller marks them).
    let not_ready = n.div_ceil(10);
    let steady_start = (Instant::now(), cpu(pid));
    let mark = replay.hits().len();
    for i in 0..not_ready {
        let status = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown",
            "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}]}});
        fake.patch("v1", "nodes", "", &replay::server_name(i * 10), status);
    }
    tokio::time::sleep(s.monitor * (s.ticks as u32 + 1) + s.monitor / 2).await;
    let gets: Vec<Instant> = replay.hits()[mark..]
        .iter()
        .filter(|h| h.operation == "compute/server_get")
        .map(|h| h.at)
        .collect();
    // A tick is a burst of GETs; bursts are separated by (almost) a whole period.
    let mut bursts: Vec<usize> = Vec::new();
    let mut last: Option<Instant> = None;
    for at in gets {
        match last {
            Some(prev) if at.duration_since(prev) < s.monitor / 2 => {
                *bursts.last_mut().expect("a burst") += 1
            }
            _ => bursts.push(1),
        }
        last = Some(at);
    }
    // The first burst may have seen only part of the NotReady updates: count complete ones.
    let complete: Vec<usize> = bursts.iter().skip(1).copied().collect();
    let complete = if complete.is_empty() { bursts.clone() } else { complete };
    let tick_calls = complete.iter().sum::<usize>() as f64 / complete.len().max(1) as f64;
    let (rss_kib, hwm_kib) = memory(pid);
    let steady_cpu = cpu(pid).saturating_sub(steady_start.1);
    let steady_wall = steady_start.0.elapsed();
    let total_cpu = cpu(pid);

    let exited = child.try_wait().expect("wait");
    stop(&mut child);
    let text = std::fs::read_to_string(dir.path().join("occm.log")).unwrap_or_default();
    let mut retries = BTreeMap::new();
    for line in text.lines().filter(|l| l.contains("WARN")) {
        // The message, without the node name: `initialization failed; will retry` and the cause.
        let cause = line.split_once(": occm::").map_or(line, |(_, c)| c);
        let words = cause.split_whitespace().filter(|w| !w.contains("worker-"));
        let cause: String = words.collect::<Vec<_>>().join(" ").chars().take(160).collect();
        *retries.entry(cause).or_default() += 1;
    }
    watch.abort();
    assert!(exited.is_none(), "the controller exited early: {exited:?}");
    let others = replay.counts(0).get("other").copied().unwrap_or(0);
    assert_eq!(others, 0, "requests the replay does not serve: see the replay's `other`");
    Figures {
        nodes: n,
        init,
        init_calls,
        init_cpu,
        resync_calls: resync_total as f64 / resyncs.max(1) as f64,
        resync_detail,
        resyncs,
        idle_tick_calls,
        tick_calls,
        ticks: complete.len(),
        not_ready,
        rss_kib,
        hwm_kib,
        steady_cpu,
        steady_wall,
        total_cpu,
        node_bytes,
        bursts,
        retries,
    }
}

fn write_kubeconfig(dir: &Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {url}\n\
         contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
         current-context: fake\nusers:\n- name: fake\n  user: {{}}\n"
    );
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

/// SIGTERM by PID, then wait (SIGKILL after 10 s).
fn stop(child: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// utime + stime of a process (clock ticks of 10 ms, as on every Linux we run on).
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<u64> = rest.split_whitespace().filter_map(|f| f.parse().ok()).collect();
    // rest starts at field 3 (state, not numeric, dropped): utime and stime are fields 14 and 15.
    let ticks = fields.get(10).copied().unwrap_or(0) + fields.get(11).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// VmRSS and VmHWM in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn print_report(all: &[Figures], full: bool) {
    for f in all {
        let n = f.nodes;
        let per_node: BTreeMap<_, _> = f
            .init_calls
            .iter()
            .filter(|(k, _)| !k.contains("discovery") && **k != "identity/authenticate")
            .map(|(k, v)| (*k, *v as f64 / n as f64))
            .collect();
        let per_node_total: f64 = per_node.values().sum();
        println!("## N = {n} nodes (node object {} bytes as JSON)", f.node_bytes);
        println!();
        println!("| figure | value |");
        println!("|---|---|");
        println!(
            "| time to initialize all nodes (process start → last taint gone) | {:.2} s |",
            f.init.as_secs_f64()
        );
        println!("| CPU time of the controller until then | {:.2} s |", f.init_cpu.as_secs_f64());
        let detail: Vec<String> = per_node.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
        println!(
            "| OpenStack requests per node init | {per_node_total:.2} ({}) |",
            detail.join(", ")
        );
        let fixed: Vec<String> = f
            .init_calls
            .iter()
            .filter(|(k, _)| k.contains("discovery") || **k == "identity/authenticate")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!("| once per process | {} |", fixed.join(", "));
        let detail: Vec<String> = f.resync_detail.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!(
            "| OpenStack requests per address resync | {:.1} ({} over {} resyncs) |",
            f.resync_calls,
            detail.join(", "),
            f.resyncs
        );
        println!(
            "| requests per lifecycle tick, all nodes Ready | {} over {} resync periods |",
            f.idle_tick_calls, f.resyncs
        );
        println!(
            "| requests per lifecycle tick, {} NotReady (10%) | {:.1} server_get ({} complete ticks) |",
            f.not_ready, f.tick_calls, f.ticks
        );
        println!("| steady RSS (VmRSS) / peak (VmHWM) | {} / {} |", mib(f.rss_kib), mib(f.hwm_kib));
        println!(
            "| CPU in steady state | {:.2} s over {:.1} s ({:.1}%) |",
            f.steady_cpu.as_secs_f64(),
            f.steady_wall.as_secs_f64(),
            100.0 * f.steady_cpu.as_secs_f64() / f.steady_wall.as_secs_f64()
        );
        println!("| CPU total | {:.2} s |", f.total_cpu.as_secs_f64());
        println!("| lifecycle bursts (server_get per tick, in order) | {:?} |", f.bursts);
        for (cause, count) in &f.retries {
            println!("| controller warnings: {cause} | {count} |");
        }
        println!();
    }
    if !full {
        return;
    }
    println!("## Against the upstream CCM's documented pattern (reference §B.4)");
    println!();
    println!("| event | N | upstream OCCM (documented) | this controller (measured) |");
    println!("|---|---|---|---|");
    for f in all.iter().filter(|f| f.nodes >= 1000) {
        let n = f.nodes;
        let init: f64 = f
            .init_calls
            .iter()
            .filter(|(k, _)| !k.contains("discovery") && **k != "identity/authenticate")
            .map(|(_, v)| *v as f64)
            .sum();
        println!(
            "| init of all N tainted nodes | {n} | {} (server GET or list by name + flavor GET + ports list, each node) | {init:.0} |",
            3 * n
        );
        println!(
            "| one address resync | {n} | {} (the same three per node, every 5 min) | {:.1} |",
            3 * n,
            f.resync_calls
        );
        println!(
            "| one lifecycle tick, 10% NotReady | {n} | {} (two server GETs per NotReady node, every 5 s) | {:.1} |",
            2 * f.not_ready,
            f.tick_calls
        );
    }
}
