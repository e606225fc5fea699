//! The chaos soak (issue 28): the CCM binary against the real Octavia and Neutron of
//! scripts/openstack-up.sh (through the counting proxy of scale/real.rs) and the fake API
//! server, while Services are created, changed and deleted at random, nodes join, leave and
//! flip Ready, the CCM is SIGKILLed (also right after an Octavia create answered, before the
//! status write) and restarted, and Octavia's API is stopped and started once. Then it waits
//! for the CCM to settle and checks the end state (check.rs), the decoys, and, after deleting
//! everything it made, that the project holds what it held before.
//!
//! Run by scripts/soak.sh, which brings a stack of its own (short tokens):
//! `cargo bench --bench soak -- [--minutes M] [--services N] [--seed S] [--nodes K]`.
//! The last stdout line is
//! `soak: seed=S services=N creates=C updates=U deletes=D kills=K orphans=O duplicates=P`;
//! the exit code is 0 only when everything held.

#![allow(dead_code)] // scale/real.rs and scale/ops.rs have more than the soak uses

mod ccm;
mod check;
mod openstack;
#[path = "../scale/ops.rs"]
mod ops;
#[path = "../scale/real.rs"]
mod real;
mod rng;
mod world;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fake_kube_apiserver::FakeApiServer;
use serde_json::Value;
use testkit::kube::kubeconfig;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use ccm::Ccm;
use openstack::Scripts;
use real::Real;
use rng::Rng;
use world::{HOST, NAMESPACE, World};

const LB_CREATE: &str = "load-balancer/loadbalancer_create";

struct Args {
    minutes: f64,
    services: usize,
    seed: u64,
    nodes: usize,
}

fn args() -> Args {
    let mut a = Args {
        minutes: 30.0,
        services: 30,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 % 1_000_000_007)
            .unwrap_or(1),
        nodes: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value =
            |name: &str| -> String { it.next().unwrap_or_else(|| panic!("{name} needs a value")) };
        match arg.as_str() {
            "--minutes" => a.minutes = value("--minutes").parse().expect("--minutes: a number"),
            "--services" => a.services = value("--services").parse().expect("--services: a count"),
            "--seed" => a.seed = value("--seed").parse().expect("--seed: a number"),
            "--nodes" => a.nodes = value("--nodes").parse().expect("--nodes: a count"),
            "--bench" => {}
            other => panic!("unknown argument {other}: [--minutes M] [--services N] [--seed S]"),
        }
    }
    assert!(a.services >= 2 && a.nodes >= 3, "at least 2 Services and 3 nodes");
    a
}

fn log(start: Instant, what: &str) {
    eprintln!("[soak +{:6.1}s] {what}", start.elapsed().as_secs_f64());
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var(testkit::stack::VAR).is_err() {
        eprintln!("soak: needs a real OpenStack: run scripts/soak.sh");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let code = runtime.block_on(run(args()));
    std::process::exit(code);
}

/// The counts the last line reports.
struct Summary {
    kills: usize,
    orphans: Vec<String>,
    duplicates: Vec<String>,
    problems: Vec<String>,
}

async fn run(a: Args) -> i32 {
    let t0 = Instant::now();
    println!("soak: seed={} (scripts/soak.sh --seed {} replays its decisions)", a.seed, a.seed);
    let env_file = std::env::var(testkit::stack::VAR).expect("checked");
    let env = StackEnv::load();
    let scripts = Scripts::new(env_file);
    let dir = tempfile::tempdir().expect("tempdir");
    let before = dir.path().join("inventory-before.json");
    scripts.inventory_save(&before);
    // The safety net: after a panic, what the run made (it all carries the cluster name) is
    // deleted; after a run that ended, it must find nothing.
    let sweep = Sweep::start();
    let cluster = format!("soak{}", std::process::id());
    testkit::sweep::watch(&cluster);
    let real = Real::start(env.clone()).await;
    let prefix = format!("{cluster}-node");
    let servers = real.create_servers(&prefix, a.nodes).await;
    log(t0, &format!("{} servers booted", servers.len()));
    let decoy_ids = scripts.state(&["decoys-create", "--cluster", &cluster]);
    let decoy_text = decoy_ids.to_string();
    let decoys_before = scripts.state(&["decoys-show", &decoy_text]);
    let decoy_set: BTreeSet<String> = decoy_ids
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, v)| v.as_str().map(str::to_owned))
        .collect();
    log(t0, &format!("decoys made: {decoy_text}"));

    let fake = FakeApiServer::start().await.expect("fake API server");
    let mut rng = Rng::new(a.seed);
    let mut plan = Rng::new(a.seed ^ 0x5eed_5eed);
    let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    let mut world = World::new(a.services, names);
    world.join_all(&fake);
    world.create_host(&fake, &mut rng);
    world.counts.creates += 1;

    let [user, password, project, domain] = real.member();
    let conf = format!(
        "[Global]\nauth-url = {}\nusername = {user}\npassword = {password}\n\
         tenant-name = {project}\ndomain-name = {domain}\nregion = RegionOne\n\n\
         [LoadBalancer]\nsubnet-id = {}\nfloating-network-id = {}\n\
         manage-security-groups = true\nmax-shared-lb = {}\n",
        real.auth_url(),
        env["OPENSTACK_INTERNAL_SUBNET_ID"],
        env["OPENSTACK_EXTERNAL_NETWORK_ID"],
        a.services + 1,
    );
    let conf_path = dir.path().join("cloud.conf");
    std::fs::write(&conf_path, conf).expect("write cloud.conf");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let ccm_args = vec![
        "--cloud-provider=openstack".to_owned(),
        format!("--cloud-config={}", conf_path.display()),
        format!("--kubeconfig={}", kubeconfig(dir.path(), &fake.url()).display()),
        "--controllers=cloud-node,cloud-node-lifecycle,service".to_owned(),
        "--leader-elect=false".to_owned(),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--cluster-name={cluster}"),
        "--concurrent-service-syncs=2".to_owned(),
        "--load-balancer-resync-period=30s".to_owned(),
    ];
    let log_path = std::env::var("CCM_SOAK_LOG")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("occm.log"));
    let _ = std::fs::remove_file(&log_path);
    eprintln!("soak: the CCM's log: {}", log_path.display());
    let mut ccm = Ccm::start(ccm_args, log_path);

    // The host of the shared load balancer first: the CCM works at all, and its ID is known.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let svc = fake.get("v1", "services", NAMESPACE, HOST).expect("the host Service");
        if svc.pointer("/status/loadBalancer/ingress/0/ip").is_some() {
            break;
        }
        ccm.check_alive();
        assert!(Instant::now() < deadline, "the first Service got no load balancer in 240 s");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let state = scripts.state(&["state"]);
    let host_name = format!("kube_service_{cluster}_{NAMESPACE}_{HOST}");
    world.host_lb = state["loadbalancers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == host_name.as_str())
        .and_then(|l| l["id"].as_str().map(str::to_owned));
    assert!(world.host_lb.is_some(), "no load balancer {host_name}");
    log(t0, "the shared host is served; chaos begins");

    // ------------------------------------------------------------------------------ chaos
    let run_for = Duration::from_secs_f64(a.minutes * 60.0);
    let chaos = Instant::now();
    let kills_planned = 5.max(a.minutes.round() as usize);
    let mut kill_at: Vec<Duration> =
        (0..kills_planned).map(|_| run_for.mul_f64(0.05 + 0.8 * plan.unit())).collect();
    kill_at.sort();
    let mut kill_at = kill_at.into_iter().enumerate().peekable();
    let octavia_at = run_for.mul_f64(0.35 + 0.25 * plan.unit());
    let octavia_down = 8 + plan.below(13) as u64;
    let mut octavia: Option<std::process::Child> = None;
    let mut octavia_done = false;
    // Tokens revoked under the CCM (a token that expired in use: the next call gets a 401).
    let mut revoke_at: Vec<Duration> = (0..3.max(a.minutes.round() as usize / 2))
        .map(|_| run_for.mul_f64(0.05 + 0.85 * plan.unit()))
        .collect();
    revoke_at.sort();
    let mut revoke_at = revoke_at.into_iter().peekable();
    let mut revoked = 0;
    let mut next_action = Duration::ZERO;
    let mut restart_at: Option<Instant> = None;
    // An armed kill: SIGKILL as soon as the proxy has an Octavia create's answer (before the
    // CCM can write the status), or at the deadline.
    let mut armed: Option<(usize, Instant)> = None;
    let mut kills_after_create = 0;
    let mut last_restart = chaos;
    while chaos.elapsed() < run_for {
        let now = chaos.elapsed();
        ccm.check_alive();
        if let Some((creates, deadline)) = armed {
            let answered = real.counter.answered(LB_CREATE);
            if answered > creates || Instant::now() > deadline {
                if ccm.kill() {
                    let after = answered > creates;
                    kills_after_create += usize::from(after);
                    log(t0, &format!("SIGKILL #{} (after an Octavia create: {after})", ccm.kills));
                }
                armed = None;
                restart_at = Some(Instant::now() + plan.seconds(0.2, 5.0));
            }
        }
        if let Some(at) = restart_at
            && Instant::now() >= at
        {
            ccm.restart();
            last_restart = Instant::now();
            restart_at = None;
            log(t0, "CCM started again");
        }
        if armed.is_none()
            && restart_at.is_none()
            && let Some((i, _)) = kill_at.next_if(|(_, at)| now >= *at)
        {
            if i % 2 == 0 {
                // make sure a create comes: a new Service (room made when there is none)
                if !world.has_room() {
                    world.delete(&fake, &mut rng);
                }
                let name = world.create(&fake, &mut rng);
                log(t0, &format!("kill armed: the next Octavia create (Service {name} new)"));
                armed = Some((
                    real.counter.answered(LB_CREATE),
                    Instant::now() + Duration::from_secs(90),
                ));
            } else if ccm.kill() {
                log(t0, &format!("SIGKILL #{} (at random)", ccm.kills));
                restart_at = Some(Instant::now() + plan.seconds(0.2, 5.0));
            }
        }
        if !octavia_done && octavia.is_none() && now >= octavia_at {
            log(t0, &format!("Octavia's API stopped for {octavia_down} s"));
            let dir = env["OPENSTACK_DIR"].clone();
            octavia = Some(scripts.restart_octavia(&dir, octavia_down));
        }
        if let Some(child) = octavia.as_mut()
            && let Some(status) = child.try_wait().expect("wait for openstack-up.sh --restart")
        {
            assert!(status.success(), "openstack-up.sh --restart octavia-api failed: {status}");
            log(t0, "Octavia's API is back");
            octavia = None;
            octavia_done = true;
        }
        if revoke_at.next_if(|at| now >= *at).is_some()
            && let Some(token) = real.counter.last_token()
        {
            let status = real.revoke(&token).await;
            revoked += usize::from(status == 204);
            log(t0, &format!("the CCM's current token revoked (Keystone: {status})"));
        }
        if now >= next_action {
            let roll = rng.below(100);
            let what = if roll < 30 && world.has_room() {
                Some(format!("create {}", world.create(&fake, &mut rng)))
            } else if roll < 60 {
                world.update(&fake, &mut rng).map(|u| format!("update {u}"))
            } else if roll < 75 {
                world.delete(&fake, &mut rng).map(|n| format!("delete {n}"))
            } else {
                Some(format!("node {}", world.node_change(&fake, &mut rng)))
            };
            if let Some(what) = what {
                log(t0, &what);
            }
            next_action = now + rng.seconds(0.3, 2.5);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if ccm.pid().is_none() {
        ccm.restart();
        last_restart = Instant::now();
    }
    if let Some(mut child) = octavia.take() {
        let status = child.wait().expect("wait for openstack-up.sh --restart");
        assert!(status.success(), "openstack-up.sh --restart octavia-api failed: {status}");
        octavia_done = true;
    }
    let chaos_end = Instant::now();
    log(
        t0,
        &format!(
            "chaos over: {} kills ({kills_after_create} right after an Octavia create), {revoked} \
             tokens revoked; waiting for the CCM to settle",
            ccm.kills
        ),
    );

    // ------------------------------------------------------------------------ settle, check
    // Bounded; while the API server still shows work left (check::pending), Octavia is not
    // read: its API is one process, and a full read of the project competes with the CCM.
    let limit = Duration::from_secs(600 + 20 * a.services as u64);
    let mut report = check::Report::default();
    let mut converged = None;
    let mut last_note = Instant::now();
    loop {
        let pending = check::pending(&world, &fake);
        if pending.is_empty() || chaos_end.elapsed() > limit {
            let state = scripts.state(&["state"]);
            report = check::check(&world, &fake, &state, &cluster, &decoy_set);
        } else {
            report.problems = pending;
        }
        if report.ok() {
            converged = Some(Instant::now());
            break;
        }
        ccm.check_alive();
        if chaos_end.elapsed() > limit {
            break;
        }
        if last_note.elapsed() > Duration::from_secs(30) {
            last_note = Instant::now();
            let first =
                report.problems.iter().chain(&report.orphans).chain(&report.duplicates).next();
            log(
                t0,
                &format!(
                    "not settled yet: {} problems, {} orphans, {} duplicates; first: {}",
                    report.problems.len(),
                    report.orphans.len(),
                    report.duplicates.len(),
                    first.map_or("", String::as_str)
                ),
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let mut summary = Summary {
        kills: ccm.kills,
        orphans: report.orphans.clone(),
        duplicates: report.duplicates.clone(),
        problems: report.problems.clone(),
    };
    match converged {
        Some(at) => log(
            t0,
            &format!(
                "settled: {:.1} s after the last restart of the CCM, {:.1} s after the chaos ended",
                at.duration_since(last_restart).as_secs_f64(),
                at.duration_since(chaos_end).as_secs_f64()
            ),
        ),
        None => log(t0, &format!("NOT settled after {limit:?}")),
    }
    let logins = real.counter.counts(0).get("identity/authenticate").copied().unwrap_or(0);
    let total: usize = real
        .counter
        .counts(0)
        .iter()
        .filter(|(op, _)| !op.starts_with("identity/"))
        .map(|(_, n)| n)
        .sum();
    log(
        t0,
        &format!(
            "requests: {total} to Nova, Neutron and Octavia ({:.1} per Service created), {logins} logins",
            total as f64 / world.counts.creates as f64
        ),
    );
    let decoys_after = scripts.state(&["decoys-show", &decoy_text]);
    summary.problems.extend(compare_decoys(&decoys_before, &decoys_after));

    // ------------------------------------------------------- everything goes, nothing stays
    let live: Vec<String> = world.live.keys().cloned().collect();
    for name in &live {
        world.remove(&fake, name);
    }
    world.counts.deletes -= live.len();
    let deadline = Instant::now() + Duration::from_secs(120 + 10 * a.services as u64);
    while fake
        .list("v1", "services")
        .iter()
        .any(|s| s.pointer("/metadata/namespace") == Some(&Value::from(NAMESPACE)))
    {
        if Instant::now() > deadline {
            break;
        }
        ccm.check_alive();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let state = scripts.state(&["state"]);
    let after = check::check(&world, &fake, &state, &cluster, &decoy_set);
    summary.problems.extend(after.problems);
    summary.orphans.extend(after.orphans);
    summary.duplicates.extend(after.duplicates);
    ccm.stop();
    scripts.state(&["decoys-delete", &decoy_text]);
    real.delete_servers(&prefix, &servers).await;
    let new = scripts.inventory_new(&before);
    let known: BTreeSet<String> = summary.orphans.clone().into_iter().collect();
    summary.orphans.extend(
        new.into_iter().map(|l| format!("left in the project: {l}")).filter(|l| !known.contains(l)),
    );

    let ok = summary.problems.is_empty()
        && summary.orphans.is_empty()
        && summary.duplicates.is_empty()
        && converged.is_some()
        && summary.kills >= 5
        && octavia_done;
    if ok {
        drop(sweep); // finds nothing: a leak would panic here
    } else {
        let printed = check::Report {
            problems: summary.problems.clone(),
            orphans: summary.orphans.clone(),
            duplicates: summary.duplicates.clone(),
        };
        printed.print();
        if summary.kills < 5 {
            println!("soak: only {} kills (at least 5 wanted): run longer", summary.kills);
        }
        if !octavia_done {
            println!("soak: Octavia's API was never restarted: run longer");
        }
        println!(
            "soak: FAILED; reproduce with scripts/soak.sh --seed {} --minutes {} --services {}",
            a.seed, a.minutes, a.services
        );
        // What is left is deleted now (the sweep reports it), so a next run starts clean.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(sweep)));
    }
    println!(
        "soak: seed={} services={} creates={} updates={} deletes={} kills={} orphans={} duplicates={}",
        a.seed,
        a.services,
        world.counts.creates,
        world.counts.updates,
        world.counts.deletes,
        summary.kills,
        summary.orphans.len(),
        summary.duplicates.len()
    );
    i32::from(!ok)
}

/// Every field of every decoy that differs between before and after.
fn compare_decoys(before: &Value, after: &Value) -> Vec<String> {
    let mut changed = Vec::new();
    for (kind, fields) in before.as_object().into_iter().flatten() {
        let now = &after[kind];
        for (key, value) in fields.as_object().into_iter().flatten() {
            if now[key] != *value {
                changed.push(format!("decoy {kind}: {key} was {value}, is {}", now[key]));
            }
        }
        if now.get("missing").is_some() {
            changed.push(format!("decoy {kind} is gone"));
        }
    }
    changed
}
