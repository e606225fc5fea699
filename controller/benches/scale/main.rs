//! The controller at scale: the real binary against a recorded-response OpenStack replay
//! (replay.rs) and the wire-level fake API server, both in this process, with N tainted nodes.
//!
//! `cargo bench --bench scale` (release; N = 20, 1,000 and 5,000) prints the figures and a table
//! against the upstream CCM's documented per-node pattern; `cargo test --bench scale` (debug,
//! N = 20, short periods) only checks that it still runs. scripts/bench.sh runs both ways.
//!
//! With `CCM_BENCH_REAL=1` the same measurements run against the real Keystone, Nova
//! (FakeDriver) and Neutron of scripts/openstack-up.sh (`CCM_OPENSTACK_ENV` names its env file):
//! N servers are booted there for each run (N = 5, 20 and 50; 2 in the quick mode) and deleted
//! after it, and the controller talks to the services through a counting proxy (real.rs).
//! `CCM_BENCH_NODES=5,20` overrides the node counts in either mode. `CCM_BENCH_WRAP` runs the
//! controller under a profiler (`CCM_BENCH_WRAP="heaptrack -o /tmp/occm"`); its memory and CPU
//! figures are then the wrapper's process, not the controller's. `CCM_BENCH_ARGS` adds flags
//! to the controller's command line (`CCM_BENCH_ARGS=--concurrent-node-syncs=4`).
//!
//! Per N: time until no node carries the uninitialized taint; OpenStack requests per node init
//! (named by ops.rs's classifier, the same for both); requests per address resync; requests per
//! lifecycle tick once 10% of the nodes are NotReady; the process's VmRSS/VmHWM and CPU time
//! from /proc.

mod ops;
mod real;
mod replay;

use std::collections::{BTreeMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fake_kube_apiserver::FakeApiServer;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::watcher;
use serde_json::{Value, json};
use testkit::kube::{UNINITIALIZED_TAINT, kubeconfig};
use testkit::stack::StackEnv;

use ops::Counter;
use real::Real;
use replay::Replay;

const BIN: &str = env!("CARGO_BIN_EXE_openstack-cloud-controller-manager");

/// What a lifecycle tick asks for: the listing's pages, a lookup of its own for a server the
/// listing lacks (none here: every server exists).
const LIFECYCLE_OPS: [&str; 3] =
    ["compute/server_list_page", "compute/server_get", "compute/server_list_by_name"];

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
    /// What answered the controller: `replay` or `real`.
    cloud: &'static str,
    nodes: usize,
    init: Duration,
    /// Where `init` went.
    init_profile: InitProfile,
    init_calls: BTreeMap<&'static str, usize>,
    init_cpu: Duration,
    /// Requests per incremental (`changes-since`) resync, the steady state.
    resync_calls: f64,
    /// Requests per full resync (the first, every 10th, after an error).
    full_resync_calls: f64,
    resync_detail: BTreeMap<&'static str, usize>,
    resyncs: usize,
    full_resyncs: usize,
    /// Nodes whose server was looked up more than once during initialization.
    double_inits: usize,
    idle_tick_calls: usize,
    tick_calls: f64,
    ticks: usize,
    not_ready: usize,
    rss_kib: u64,
    hwm_kib: u64,
    /// The steady RSS's heap and stacks (RssAnon) and mapped files, the binary's code (RssFile).
    anon_kib: u64,
    file_kib: u64,
    steady_cpu: Duration,
    steady_wall: Duration,
    total_cpu: Duration,
    node_bytes: usize,
    /// Requests per tick, in order, and the time from a tick's first request to its last.
    bursts: Vec<(usize, Duration)>,
    /// The mean of those times over the complete ticks.
    tick_span: Duration,
    retries: BTreeMap<String, usize>,
    /// Requests the classifier does not name, with their count.
    others: BTreeMap<String, usize>,
    /// Mean server-side time per operation over the whole run.
    mean_times: BTreeMap<&'static str, Duration>,
}

/// Where initialization's time went, each from the process's start: its first OpenStack
/// request (the login), its first request after the login, its first and last server lookups
/// (a node's own, or a page of the list answering many), the first node initialized (last:
/// `Figures::init`).
#[derive(Debug, Default, Clone, Copy)]
struct InitProfile {
    first_request: Duration,
    after_login: Duration,
    first_lookup: Duration,
    last_lookup: Duration,
    first_initialized: Duration,
}

impl InitProfile {
    /// From the requests `hits` and when the first node was initialized.
    fn of(hits: &[ops::Hit], started: Instant, first_initialized: Option<Instant>) -> Self {
        let since = |at: Instant| at.saturating_duration_since(started);
        // A node's own lookup, or the server list that answers many at once.
        let lookup = |h: &&ops::Hit| LIFECYCLE_OPS.contains(&h.operation);
        let first = |pick: &dyn Fn(&&ops::Hit) -> bool| {
            hits.iter().find(|h| pick(h)).map_or(Duration::ZERO, |h| since(h.at))
        };
        Self {
            first_request: first(&|_| true),
            after_login: first(&|h| !h.operation.starts_with("identity/")),
            first_lookup: first(&lookup),
            last_lookup: hits.iter().rfind(lookup).map_or(Duration::ZERO, |h| since(h.at)),
            first_initialized: first_initialized.map_or(Duration::ZERO, since),
        }
    }

    fn json(&self, init: Duration) -> Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
        json!({
            "first_request": ms(self.first_request),
            "after_login": ms(self.after_login),
            "first_lookup": ms(self.first_lookup),
            "first_initialized": ms(self.first_initialized),
            "last_lookup": ms(self.last_lookup),
            "all_initialized": ms(init),
        })
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --bench scale` passes nothing: quick mode.
    let full = std::env::args().any(|a| a == "--bench");
    let real = std::env::var("CCM_BENCH_REAL").is_ok_and(|v| !v.is_empty() && v != "0");
    // Panics at once (naming CCM_OPENSTACK_ENV) when real mode has no stack to use.
    let env = real.then(StackEnv::load);
    let nodes: Vec<usize> = match std::env::var("CCM_BENCH_NODES") {
        Ok(list) => list
            .split(',')
            .map(|n| n.trim().parse().unwrap_or_else(|e| panic!("CCM_BENCH_NODES={list}: {e}")))
            .collect(),
        // 20: the fixed cost, to tell it from the per-node cost. The real stack (one compute
        // host, SQLite) boots 50 servers in about two minutes: tens of servers, not thousands.
        Err(_) => match (full, real) {
            (true, false) => vec![20, 1000, 5000],
            (true, true) => vec![5, 20, 50],
            (false, false) => vec![20],
            (false, true) => vec![2],
        },
    };
    let runs: Vec<Settings> = nodes
        .into_iter()
        .map(|nodes| {
            if full {
                Settings {
                    nodes,
                    resync: Duration::from_secs(10),
                    monitor: Duration::from_secs(5),
                    resyncs: 2,
                    ticks: 3,
                }
            } else {
                Settings {
                    nodes,
                    resync: Duration::from_secs(2),
                    monitor: Duration::from_millis(500),
                    resyncs: 1,
                    ticks: 2,
                }
            }
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // Each run's figures as soon as it ends: a later failure does not lose them.
    let figures: Vec<Figures> = runs
        .iter()
        .map(|s| {
            let figures = runtime.block_on(async {
                match &env {
                    None => run_replay(s).await,
                    Some(env) => run_real(s, env.clone()).await,
                }
            });
            print_run(&figures);
            figures
        })
        .collect();
    if full {
        print_comparison(&figures);
    }
    write_json(&figures);
}

/// `target/bench/scale.json` (under `CARGO_TARGET_DIR` when set): one object per N.
fn write_json(all: &[Figures]) {
    let per_init = |f: &Figures| -> f64 {
        let fixed = |k: &&str| k.contains("discovery") || *k == "identity/authenticate";
        let calls = f.init_calls.iter().filter(|(k, _)| !fixed(k)).map(|(_, v)| *v);
        calls.sum::<usize>() as f64 / f.nodes as f64
    };
    let rows: Vec<Value> = all
        .iter()
        .map(|f| {
            json!({
                "cloud": f.cloud,
                "nodes": f.nodes,
                "init_seconds": f.init.as_secs_f64(),
                "init_profile_ms": f.init_profile.json(f.init),
                "requests_per_init": per_init(f),
                "requests_per_resync": f.resync_calls,
                "requests_per_full_resync": f.full_resync_calls,
                "requests_per_lifecycle_tick": f.tick_calls,
                "double_inits": f.double_inits,
                "rss_mib": f.rss_kib as f64 / 1024.0,
                "hwm_mib": f.hwm_kib as f64 / 1024.0,
                "rss_anon_mib": f.anon_kib as f64 / 1024.0,
                "rss_file_mib": f.file_kib as f64 / 1024.0,
                "cpu_seconds_to_init": f.init_cpu.as_secs_f64(),
            })
        })
        .collect();
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_owned());
    let dir = std::path::Path::new(&target).join("bench");
    let path = dir.join("scale.json");
    let text = serde_json::to_string_pretty(&rows).expect("JSON");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text + "\n")) {
        Ok(()) => println!("figures written to {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}

/// cloud.conf for the controller: password login to `auth_url`.
fn cloud_conf(auth_url: &str, [user, password, project, domain]: [&str; 4]) -> String {
    format!(
        "[Global]\nauth-url = {auth_url}\nusername = {user}\npassword = {password}\n\
         tenant-name = {project}\ndomain-name = {domain}\nregion = RegionOne\n"
    )
}

async fn run_replay(s: &Settings) -> Figures {
    let replay = Replay::start(s.nodes).await;
    let names: Vec<String> = (0..s.nodes).map(replay::server_name).collect();
    let conf = cloud_conf(&replay.auth_url(), ["ccm-user", "bench-pass", "ccm", "Default"]);
    let figures = measure(s, "replay", &conf, &replay.counter, &names, "worker-").await;
    assert!(figures.others.is_empty(), "requests the replay does not serve: {:?}", figures.others);
    figures
}

/// Boots N servers on the real stack, measures, and deletes them (after a failure too).
async fn run_real(s: &Settings, env: StackEnv) -> Figures {
    let real = Real::start(env).await;
    let prefix = format!("occm-bench-{}-n{}", std::process::id(), s.nodes);
    let servers = real.create_servers(&prefix, s.nodes).await;
    // Nodes are named as their servers: initialization finds each server by exact name.
    let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    let conf = cloud_conf(&real.auth_url(), real.member());
    let node_prefix = format!("{prefix}-");
    let result = AssertUnwindSafe(measure(s, "real", &conf, &real.counter, &names, &node_prefix))
        .catch_unwind()
        .await;
    real.delete_servers(&prefix, &servers).await;
    result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn node_object(template: &Value, name: &str) -> Value {
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
        .is_some_and(|t| t.iter().any(|t| t.key == UNINITIALIZED_TAINT))
}

async fn measure(
    s: &Settings,
    cloud: &'static str,
    cloud_conf: &str,
    counter: &Counter,
    names: &[String],
    // What every node name starts with (left out of the warnings' summary).
    node_prefix: &str,
) -> Figures {
    let n = s.nodes;
    assert_eq!(names.len(), n);
    let fake = FakeApiServer::start().await.expect("fake API server");
    let template: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/fixtures/node.json"
        ))
        .expect("node.json"),
    )
    .expect("JSON");
    let node_bytes = node_object(&template, &names[0]).to_string().len();
    for name in names {
        fake.create("v1", "nodes", "", node_object(&template, name));
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("cloud.conf");
    std::fs::write(&conf, cloud_conf).expect("write cloud.conf");
    let kubeconfig = kubeconfig(dir.path(), &fake.url());
    let log = std::fs::File::create(dir.path().join("occm.log")).expect("log file");

    // Watch the nodes from here (event-driven, no polling of the fake's store).
    let (tx, mut initialized) = tokio::sync::watch::channel(0usize);
    let first_done = std::sync::Arc::new(std::sync::OnceLock::new());
    let api: Api<Node> = Api::all(fake.client());
    let first = first_done.clone();
    let watch = tokio::spawn(async move {
        let mut done = HashSet::new();
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        while let Some(Ok(event)) = stream.next().await {
            if let watcher::Event::Apply(node) | watcher::Event::InitApply(node) = event
                && ready(&node)
            {
                done.insert(node.metadata.name.unwrap_or_default());
                first.get_or_init(Instant::now);
                tx.send_replace(done.len());
            }
        }
    });

    let started = Instant::now();
    let wrap = std::env::var("CCM_BENCH_WRAP").unwrap_or_default();
    let mut command = wrap.split_whitespace().chain([BIN]);
    let mut child = Command::new(command.next().unwrap_or(BIN))
        .args(command)
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
        .args(std::env::var("CCM_BENCH_ARGS").unwrap_or_default().split_whitespace())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the controller binary");
    let pid = child.id();

    let limit = Duration::from_secs(60 + n as u64 / 5);
    // `wait_for` answers a borrow of the channel's value (a read lock): it must end in this
    // statement (consumed, not just shadowed), or the watch task's next `send_replace` blocks
    // its worker thread on the channel's lock, and with it the runtime's I/O.
    let all = tokio::time::timeout(limit, initialized.wait_for(|&done| done >= n))
        .await
        .is_ok_and(|waited| waited.is_ok());
    let init = started.elapsed();
    if !all {
        stop(&mut child);
        let text = std::fs::read_to_string(dir.path().join("occm.log")).unwrap_or_default();
        panic!("{n} nodes not initialized within {limit:?}; controller log:\n{text}");
    }
    let init_cpu = cpu(pid);
    let init_calls = counter.counts(0);
    let init_profile = InitProfile::of(&counter.hits(), started, first_done.get().copied());

    // Address resyncs: count from the first one that starts after initialization.
    let mark = counter.hits().len();
    let resync_wait = s.resync * (s.resyncs as u32 + 1) + Duration::from_secs(2);
    tokio::time::sleep(resync_wait).await;
    let during = counter.counts(mark);
    let count = |op: &str| during.get(op).copied().unwrap_or(0);
    // A full resync lists every port, an incremental one asks for changes-since: each once.
    let full_resyncs = count("network/port_list_all");
    let resyncs = count("compute/server_list_changes");
    let full_ops = ["compute/server_list_page", "network/port_list_all"];
    let incremental_ops = ["compute/server_list_changes", "network/port_list_by_device"];
    let resync_detail: BTreeMap<_, _> = during
        .iter()
        .filter(|(k, _)| full_ops.contains(k) || incremental_ops.contains(k))
        .map(|(k, v)| (*k, *v))
        .collect();
    let full_total: usize = full_ops.iter().map(|op| count(op)).sum();
    let resync_total: usize = incremental_ops.iter().map(|op| count(op)).sum();
    let idle_tick_calls = count("compute/server_get") + count("compute/server_list_by_name");
    let lookups = init_calls.get("compute/server_list_by_name").copied().unwrap_or(0)
        + init_calls.get("compute/server_get").copied().unwrap_or(0);
    let double_inits = lookups.saturating_sub(n);

    // Lifecycle: 10% of the nodes go NotReady (as the node-lifecycle controller marks them).
    let not_ready = n.div_ceil(10);
    let steady_start = (Instant::now(), cpu(pid));
    let mark = counter.hits().len();
    for i in 0..not_ready {
        let status = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown",
            "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}]}});
        fake.patch("v1", "nodes", "", &names[i * 10], status);
    }
    tokio::time::sleep(s.monitor * (s.ticks as u32 + 1) + s.monitor / 2).await;
    let gets = || -> Vec<Instant> {
        counter.hits()[mark..]
            .iter()
            .filter(|h| LIFECYCLE_OPS.contains(&h.operation))
            .map(|h| h.at)
            .collect()
    };
    // A tick still under way when the window closes would count short (against slow services
    // a tick's GETs take a while): let it end, at most one more period.
    let settle = Instant::now();
    while settle.elapsed() < s.monitor
        && gets().last().is_some_and(|at| at.elapsed() < s.monitor / 2)
    {
        tokio::time::sleep(s.monitor / 10).await;
    }
    // A tick is a burst of GETs; bursts are separated by (almost) a whole period.
    let mut bursts: Vec<(usize, Duration)> = Vec::new();
    let mut first = None;
    let mut last: Option<Instant> = None;
    for at in gets() {
        match (last, bursts.last_mut(), first) {
            (Some(prev), Some(burst), Some(start)) if at.duration_since(prev) < s.monitor / 2 => {
                *burst = (burst.0 + 1, at.duration_since(start))
            }
            _ => {
                bursts.push((1, Duration::ZERO));
                first = Some(at);
            }
        }
        last = Some(at);
    }
    // The first burst may have seen only part of the NotReady updates: count complete ones.
    let complete: Vec<(usize, Duration)> = bursts.iter().skip(1).copied().collect();
    let complete = if complete.is_empty() { bursts.clone() } else { complete };
    let ticks = complete.len().max(1);
    let tick_calls = complete.iter().map(|b| b.0).sum::<usize>() as f64 / ticks as f64;
    let tick_span = complete.iter().map(|b| b.1).sum::<Duration>() / ticks as u32;
    let Memory { rss_kib, hwm_kib, anon_kib, file_kib } = memory(pid);
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
        let words = cause.split_whitespace().filter(|w| !w.contains(node_prefix));
        let cause: String = words.collect::<Vec<_>>().join(" ").chars().take(160).collect();
        *retries.entry(cause).or_default() += 1;
    }
    watch.abort();
    assert!(exited.is_none(), "the controller exited early: {exited:?}");
    let mut others = BTreeMap::new();
    for request in counter.others() {
        *others.entry(request).or_default() += 1;
    }
    Figures {
        cloud,
        nodes: n,
        init,
        init_profile,
        init_calls,
        init_cpu,
        resync_calls: resync_total as f64 / resyncs.max(1) as f64,
        full_resync_calls: full_total as f64 / full_resyncs.max(1) as f64,
        resync_detail,
        resyncs,
        full_resyncs,
        double_inits,
        idle_tick_calls,
        tick_calls,
        ticks: complete.len(),
        not_ready,
        rss_kib,
        hwm_kib,
        anon_kib,
        file_kib,
        steady_cpu,
        steady_wall,
        total_cpu,
        node_bytes,
        bursts,
        tick_span,
        retries,
        others,
        mean_times: counter.mean_times(),
    }
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

/// A process's memory from /proc/PID/status, in KiB.
struct Memory {
    rss_kib: u64,
    hwm_kib: u64,
    anon_kib: u64,
    file_kib: u64,
}

fn memory(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
        anon_kib: field("RssAnon:"),
        file_kib: field("RssFile:"),
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn print_run(f: &Figures) {
    let n = f.nodes;
    let per_node: BTreeMap<_, _> = f
        .init_calls
        .iter()
        .filter(|(k, _)| !k.contains("discovery") && **k != "identity/authenticate")
        .map(|(k, v)| (*k, *v as f64 / n as f64))
        .collect();
    let per_node_total: f64 = per_node.values().sum();
    let cloud = match f.cloud {
        "real" => "real Keystone, Nova (FakeDriver) and Neutron through a counting proxy",
        _ => "OpenStack replay",
    };
    println!("## N = {n} nodes, {cloud} (node object {} bytes as JSON)", f.node_bytes);
    println!();
    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| time to initialize all nodes (process start → last taint gone) | {:.2} s |",
        f.init.as_secs_f64()
    );
    let p = &f.init_profile;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| where it went (ms from the process's start) | first request (login) {:.0}, first after the login {:.0}, first server lookup {:.0}, first node initialized {:.0}, last lookup {:.0}, last taint gone {:.0} |",
        ms(p.first_request),
        ms(p.after_login),
        ms(p.first_lookup),
        ms(p.first_initialized),
        ms(p.last_lookup),
        ms(f.init)
    );
    println!("| CPU time of the controller until then | {:.2} s |", f.init_cpu.as_secs_f64());
    let detail: Vec<String> = per_node.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
    println!("| OpenStack requests per node init | {per_node_total:.2} ({}) |", detail.join(", "));
    let fixed: Vec<String> = f
        .init_calls
        .iter()
        .filter(|(k, _)| k.contains("discovery") || **k == "identity/authenticate")
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("| once per process | {} |", fixed.join(", "));
    let detail: Vec<String> = f.resync_detail.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!(
        "| OpenStack requests per address resync, steady (changes-since) | {:.1} over {} resyncs |",
        f.resync_calls, f.resyncs
    );
    println!(
        "| requests per full resync (first, every 10th, after an error) | {:.1} over {} (all resync requests of the window: {}) |",
        f.full_resync_calls,
        f.full_resyncs,
        detail.join(", ")
    );
    println!("| nodes initialized twice (server looked up again) | {} |", f.double_inits);
    println!(
        "| requests per lifecycle tick, all nodes Ready | {} over {} resync periods |",
        f.idle_tick_calls, f.resyncs
    );
    println!(
        "| requests per lifecycle tick, {} NotReady (10%) | {:.1} ({} complete ticks) |",
        f.not_ready, f.tick_calls, f.ticks
    );
    println!("| steady RSS (VmRSS) / peak (VmHWM) | {} / {} |", mib(f.rss_kib), mib(f.hwm_kib));
    println!(
        "| steady RSS: anonymous / files (code) | {} / {} |",
        mib(f.anon_kib),
        mib(f.file_kib)
    );
    println!(
        "| CPU in steady state | {:.2} s over {:.1} s ({:.1}%) |",
        f.steady_cpu.as_secs_f64(),
        f.steady_wall.as_secs_f64(),
        100.0 * f.steady_cpu.as_secs_f64() / f.steady_wall.as_secs_f64()
    );
    println!("| CPU total | {:.2} s |", f.total_cpu.as_secs_f64());
    let bursts: Vec<usize> = f.bursts.iter().map(|b| b.0).collect();
    println!("| lifecycle bursts (requests per tick, in order) | {bursts:?} |");
    println!(
        "| lifecycle tick duration (first to last request, mean of complete ticks) | {:.0} ms |",
        f.tick_span.as_secs_f64() * 1e3
    );
    for (cause, count) in &f.retries {
        println!("| controller warnings: {cause} | {count} |");
    }
    let times: Vec<String> = f
        .mean_times
        .iter()
        .map(|(op, t)| format!("{op} {:.1} ms", t.as_secs_f64() * 1e3))
        .collect();
    println!("| mean answer time per request, server side, whole run | {} |", times.join(", "));
    for (request, count) in &f.others {
        println!("| requests no operation names (forwarded): {request} | {count} |");
    }
    println!();
}

fn print_comparison(all: &[Figures]) {
    if all.iter().all(|f| f.nodes < 1000) {
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
            "| one address resync | {n} | {} (the same three per node, every 5 min) | {:.1} ({:.0} every 10th, full) |",
            3 * n,
            f.resync_calls,
            f.full_resync_calls
        );
        println!(
            "| one lifecycle tick, 10% NotReady | {n} | {} (two server GETs per NotReady node, every 5 s) | {:.1} |",
            2 * f.not_ready,
            f.tick_calls
        );
    }
}
