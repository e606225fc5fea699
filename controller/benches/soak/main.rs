//! The chaos soak (issues 28, 35): the CCM binary against the real Octavia and Neutron of
//! scripts/openstack-up.sh (through the counting proxy of scale/real.rs) and an API server (the
//! fake one, or the real one of scripts/kube-up.sh) behind a slow front that delays every list
//! and watch answer by up to 3 s, while Services are created, changed and deleted at random,
//! nodes join, leave and flip Ready, the CCM is SIGKILLed (also right after an Octavia create
//! answered, before the status write) and restarted, and Octavia's API is stopped and started
//! once. Every member list the CCM sends is checked as it goes (batches.rs: none may leave out
//! a node eligible for 30 s). Then it waits for the CCM to settle and checks the end state
//! (check.rs), the decoys, and, after deleting everything it made, that the project holds what
//! it held before.
//!
//! Run by scripts/soak.sh, which brings a stack of its own (5-minute tokens; more logins than
//! starts, revocations and renewals at half a token's life allow are a problem):
//! `cargo bench --bench soak -- [--minutes M] [--services N] [--seed S] [--nodes K]
//! [--kube fake|real] [--kube-delay-max SECONDS]`. Everything it prints also goes to
//! `target/soak/report-<seed>-<unix time>.txt` as it goes (journal.rs). The last stdout line is
//! `soak: seed=S services=N creates=C updates=U deletes=D kills=K orphans=O duplicates=P
//! problems=Q lists=L kube=fake|real`; the exit code is 0 only when everything held.

#![allow(dead_code)] // scale/real.rs and scale/ops.rs have more than the soak uses

mod args;
mod batches;
mod ccm;
mod chaos;
mod check;
mod cluster;
mod journal;
mod members;
mod openstack;
#[path = "../scale/ops.rs"]
mod ops;
#[path = "../scale/real.rs"]
mod real;
mod real_kube;
mod rng;
mod schedule;
mod world;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fake_kube_apiserver::FakeApiServer;
use serde_json::Value;
use testkit::kube_front::{Delay, KubeFront};
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use args::{Args, Kube};
use ccm::Ccm;
use cluster::Server;
use journal::{note, out};
use openstack::Scripts;
use real::Real;
use real_kube::RealKube;
use rng::Rng;
use schedule::Plan;
use world::{HOST, NAMESPACE, World};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var(testkit::stack::VAR).is_err() {
        eprintln!("soak: needs a real OpenStack: run scripts/soak.sh");
        std::process::exit(2);
    }
    let a = args::parse(std::env::args().skip(1));
    if a.kube == Kube::Real && std::env::var(testkit::kube_stack::VAR).is_err() {
        eprintln!("soak: --kube real needs the real Kubernetes: run scripts/soak.sh --kube real");
        std::process::exit(2);
    }
    let report = journal::open(&journal::default_dir(), a.seed);
    out(&format!("soak: the report: {}", report.display()));
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let code = runtime.block_on(run(a));
    eprintln!("soak: the report: {}", report.display());
    std::process::exit(code);
}

/// The findings the end reports.
#[derive(Default)]
struct Summary {
    orphans: Vec<String>,
    duplicates: Vec<String>,
    problems: Vec<String>,
}

async fn run(a: Args) -> i32 {
    let seed = a.seed;
    out(&format!("soak: seed={seed} (scripts/soak.sh --seed {seed} replays its decisions)"));
    note(&format!(
        "{} minutes, {} Services at most, {} nodes, --kube {:?}, lists and watches up to {:?} late",
        a.minutes, a.services, a.nodes, a.kube, a.kube_delay_max
    ));
    let env_file = std::env::var(testkit::stack::VAR).expect("checked");
    let env = StackEnv::load();
    let scripts = Scripts::new(env_file);
    let dir = tempfile::tempdir().expect("tempdir");
    // First, so that a real cluster in use is refused before anything is made.
    let server = match a.kube {
        Kube::Fake => Server::Fake(FakeApiServer::start().await.expect("fake API server")),
        Kube::Real => Server::Real(Box::new(RealKube::start(dir.path()).await)),
    };
    let before = dir.path().join("inventory-before.json");
    scripts.inventory_save(&before);
    // The safety net: after a panic, what the run made (it all carries the cluster name) is
    // deleted; after a run that ended, it must find nothing.
    let sweep = Sweep::start();
    let cluster_name = format!("soak{}", std::process::id());
    testkit::sweep::watch(&cluster_name);
    let real = Real::start(env.clone()).await;
    real.captures.keep(&members::OPERATIONS);
    let prefix = format!("{cluster_name}-node");
    let servers = real.create_servers(&prefix, a.nodes).await;
    note(&format!("{} servers booted", servers.len()));
    let decoy_ids = scripts.state(&["decoys-create", "--cluster", &cluster_name]);
    let decoy_text = decoy_ids.to_string();
    let decoys_before = scripts.state(&["decoys-show", &decoy_text]);
    let decoy_set: BTreeSet<String> = decoy_ids
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, v)| v.as_str().map(str::to_owned))
        .collect();
    note(&format!("decoys made: {decoy_text}"));

    let cluster = server.cluster();
    let delay = match a.kube_delay_max.is_zero() {
        true => Delay::none(),
        false => Delay::random(a.kube_delay_max, seed),
    };
    let front = KubeFront::start(server.upstream(), delay).await;
    let mut rng = Rng::new(seed);
    let mut dice = Rng::new(seed ^ 0x5eed_5eed);
    let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    let mut world = World::new(a.services, names.clone());
    world.join_all(cluster);
    if let Server::Real(real_kube) = &server {
        real_kube.heartbeat(&names);
    }
    world.create_host(cluster, &mut rng);
    world.counts.creates += 1;

    let conf_path = dir.path().join("cloud.conf");
    std::fs::write(&conf_path, cloud_conf(&real, &env, a.services)).expect("write cloud.conf");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let ccm_args = vec![
        "--cloud-provider=openstack".to_owned(),
        format!("--cloud-config={}", conf_path.display()),
        format!("--kubeconfig={}", front.kubeconfig(dir.path()).display()),
        "--controllers=cloud-node,cloud-node-lifecycle,service".to_owned(),
        "--leader-elect=false".to_owned(),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--cluster-name={cluster_name}"),
        "--concurrent-service-syncs=2".to_owned(),
        "--load-balancer-resync-period=30s".to_owned(),
    ];
    let log_path = std::env::var("CCM_SOAK_LOG")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("occm.log"));
    let _ = std::fs::remove_file(&log_path);
    out(&format!("soak: the CCM's log: {}", log_path.display()));
    let mut ccm = Ccm::start(ccm_args, log_path);
    let mut members = members::Watch::default();

    // The host of the shared load balancer first: the CCM works at all, and its ID is known.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let svc = cluster.get("services", NAMESPACE, HOST).expect("the host Service");
        if svc.pointer("/status/loadBalancer/ingress/0/ip").is_some() {
            break;
        }
        ccm.check_alive();
        world.observe_nodes(cluster);
        assert!(Instant::now() < deadline, "the first Service got no load balancer in 240 s");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let state = scripts.state(&["state"]);
    let host_name = format!("kube_service_{cluster_name}_{NAMESPACE}_{HOST}");
    world.host_lb = state["loadbalancers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == host_name.as_str())
        .and_then(|l| l["id"].as_str().map(str::to_owned));
    assert!(world.host_lb.is_some(), "no load balancer {host_name}");

    // ------------------------------------------------------------------------------ chaos
    let run_for = Duration::from_secs_f64(a.minutes * 60.0);
    let plan = Plan::draw(&mut dice, run_for);
    let moments = |list: &[Duration]| -> String {
        list.iter().map(|d| format!("{:.0}s", d.as_secs_f64())).collect::<Vec<_>>().join(" ")
    };
    note(&format!(
        "the shared host is served; chaos begins. Plan, from now: SIGKILLs at {} (the 1st, \
         3rd, … armed); Octavia's API down at {:.0}s for {} s; tokens revoked at {}",
        moments(&plan.kills),
        plan.octavia_at.as_secs_f64(),
        plan.octavia_down,
        moments(&plan.revokes)
    ));
    let openstack_dir = env["OPENSTACK_DIR"].clone();
    let mut parts = chaos::Parts {
        world: &mut world,
        cluster,
        ccm: &mut ccm,
        real: &real,
        scripts: &scripts,
        openstack_dir: &openstack_dir,
        members: &mut members,
    };
    let outcome = chaos::run(&mut parts, &plan, &mut rng, &mut dice, run_for).await;
    let chaos_end = Instant::now();
    note(&format!(
        "chaos over: {} kills ({} right after an Octavia create), {} tokens revoked, {} list and \
         watch answers delayed by the front; waiting for the CCM to settle",
        parts.ccm.kills,
        outcome.kills_after_create,
        outcome.revoked,
        front.delayed()
    ));

    // ------------------------------------------------------------------------ settle, check
    let limit = Duration::from_secs(600 + 20 * a.services as u64);
    let (report, converged) = settle(&mut parts, &scripts, &cluster_name, &decoy_set, limit).await;
    let mut summary = Summary {
        orphans: report.orphans.clone(),
        duplicates: report.duplicates.clone(),
        problems: report.problems.clone(),
    };
    let last_start = *ccm.starts.last().expect("started");
    match converged {
        Some(at) => note(&format!(
            "settled: {:.1} s after the last start of the CCM, {:.1} s after the chaos ended",
            at.duration_since(last_start).as_secs_f64(),
            at.duration_since(chaos_end).as_secs_f64()
        )),
        None => note(&format!("NOT settled after {limit:?}")),
    }
    let counts = real.counter.counts(0);
    let logins = counts.get("identity/authenticate").copied().unwrap_or(0);
    let total: usize =
        counts.iter().filter(|(op, _)| !op.starts_with("identity/")).map(|(_, n)| n).sum();
    note(&format!(
        "requests: {total} to Nova, Neutron and Octavia ({:.1} per Service created), {logins} logins",
        total as f64 / world.counts.creates as f64
    ));
    let lifetime = token_lifetime(&env["OPENSTACK_DIR"]);
    let ran = ccm.starts.first().map_or(Duration::ZERO, Instant::elapsed);
    let allowed = logins_allowed(ccm.starts.len(), outcome.revoked, ran, lifetime);
    if logins > allowed {
        summary.problems.push(format!(
            "{logins} logins, more than the {allowed} that {} starts, {} revoked tokens and \
             tokens of {} s renewed at half their life allow (issue 36)",
            ccm.starts.len(),
            outcome.revoked,
            lifetime.as_secs()
        ));
    }
    let decoys_after = scripts.state(&["decoys-show", &decoy_text]);
    summary.problems.extend(compare_decoys(&decoys_before, &decoys_after));

    // ------------------------------------------------------- everything goes, nothing stays
    let live: Vec<String> = world.live.keys().cloned().collect();
    for name in &live {
        world.remove(cluster, name);
    }
    world.counts.deletes -= live.len();
    let deadline = Instant::now() + Duration::from_secs(120 + 10 * a.services as u64);
    while cluster
        .list("services")
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
    let after = check::check(&world, cluster, &state, &cluster_name, &decoy_set);
    // The same finding before and after the clean-up counts once.
    for (all, found) in [
        (&mut summary.problems, after.problems),
        (&mut summary.orphans, after.orphans),
        (&mut summary.duplicates, after.duplicates),
    ] {
        all.extend(found.into_iter().filter(|f| !all.contains(f)).collect::<Vec<_>>());
    }
    members.check(&real, &world.eligibility, &ccm.starts);
    summary.problems.extend(members.problems.iter().map(|p| format!("member list: {p}")));
    ccm.stop();
    if let Server::Real(real_kube) = &server {
        real_kube.finish();
    }
    scripts.state(&["decoys-delete", &decoy_text]);
    real.delete_servers(&prefix, &servers).await;
    // What the inventory finds new and a check already named (by its ID) counts once.
    let new = scripts.inventory_new(&before);
    let named = summary.orphans.join(" ");
    summary.orphans.extend(
        new.into_iter()
            .filter(|l| !l.split_whitespace().nth(1).is_some_and(|id| named.contains(id)))
            .map(|l| format!("left in the project: {l}")),
    );

    note(&format!(
        "member lists: {} checked ({} empty), {} left out a node eligible for {} s",
        members.lists,
        members.empty,
        members.problems.len(),
        batches::GRACE.as_secs()
    ));
    let ok = summary.problems.is_empty()
        && summary.orphans.is_empty()
        && summary.duplicates.is_empty()
        && converged.is_some();
    if ok {
        drop(sweep); // finds nothing: a leak would panic here
    } else {
        let printed = check::Report {
            problems: summary.problems.clone(),
            orphans: summary.orphans.clone(),
            duplicates: summary.duplicates.clone(),
        };
        printed.print();
        if converged.is_none() {
            out(&format!("soak: not settled within {limit:?}"));
        }
        out(&format!(
            "soak: FAILED; reproduce with scripts/soak.sh --seed {seed} --minutes {} --services {} \
             --kube {} (the CCM's log: {})",
            a.minutes,
            a.services,
            if a.kube == Kube::Real { "real" } else { "fake" },
            ccm.log.display()
        ));
        // What is left is deleted now (the sweep reports it), so a next run starts clean.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(sweep)));
    }
    if let Some(path) = journal::path() {
        out(&format!("soak: the report: {}", path.display()));
    }
    out(&format!(
        "soak: seed={seed} services={} creates={} updates={} deletes={} kills={} orphans={} \
         duplicates={} problems={} lists={} kube={}",
        a.services,
        world.counts.creates,
        world.counts.updates,
        world.counts.deletes,
        ccm.kills,
        summary.orphans.len(),
        summary.duplicates.len(),
        summary.problems.len(),
        members.lists,
        if a.kube == Kube::Real { "real" } else { "fake" },
    ));
    i32::from(!ok)
}

/// Waits, bounded by `limit`, until the end state holds; the last check and when it held.
/// While the API server still shows work left (check::pending), Octavia is not read: its API
/// is one process, and a full read of the project competes with the CCM. Every 30 s a note;
/// the report also gets every finding whenever the set changed.
async fn settle(
    p: &mut chaos::Parts<'_>,
    scripts: &Scripts,
    cluster_name: &str,
    decoys: &BTreeSet<String>,
    limit: Duration,
) -> (check::Report, Option<Instant>) {
    let start = Instant::now();
    let mut report = check::Report::default();
    let mut last_note = Instant::now();
    let mut last_lines: Vec<String> = Vec::new();
    loop {
        p.look();
        let pending = check::pending(p.world, p.cluster);
        if pending.is_empty() || start.elapsed() > limit {
            let state = scripts.state(&["state"]);
            report = check::check(p.world, p.cluster, &state, cluster_name, decoys);
        } else {
            report.problems = pending;
        }
        if report.ok() {
            return (report, Some(Instant::now()));
        }
        p.ccm.check_alive();
        if start.elapsed() > limit {
            return (report, None);
        }
        if last_note.elapsed() > Duration::from_secs(30) {
            last_note = Instant::now();
            let first =
                report.problems.iter().chain(&report.orphans).chain(&report.duplicates).next();
            note(&format!(
                "not settled yet: {} problems, {} orphans, {} duplicates; first: {}",
                report.problems.len(),
                report.orphans.len(),
                report.duplicates.len(),
                first.map_or("", String::as_str)
            ));
            let lines = report.lines();
            if lines != last_lines {
                lines.iter().for_each(|l| journal::detail(&format!("    {l}")));
                last_lines = lines;
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The lifetime of the stack's Keystone tokens (its keystone.conf `[token] expiration`).
fn token_lifetime(openstack_dir: &str) -> Duration {
    let path = format!("{openstack_dir}/keystone/keystone.conf");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let seconds = text.lines().find_map(|l| l.strip_prefix("expiration = "));
    Duration::from_secs(seconds.and_then(|s| s.trim().parse().ok()).unwrap_or(3600))
}

/// The most logins the CCM may make: one per start, two per revoked token (the refused call's,
/// and the login loop's when that one is refused too), one per half token lifetime it ran;
/// twice that. Before issue 36 it logged in before every request once tokens lived less than
/// 10 minutes (osauth's renewal margin).
fn logins_allowed(starts: usize, revoked: usize, ran: Duration, lifetime: Duration) -> usize {
    let renewals = ran.as_secs() / (lifetime.as_secs() / 2).max(1);
    2 * (starts + 2 * revoked + usize::try_from(renewals).unwrap_or(usize::MAX / 4))
}

/// cloud.conf of the CCM: the member user through the proxy, floating IPs, security groups,
/// every Service able to share the host's load balancer.
fn cloud_conf(real: &Real, env: &StackEnv, services: usize) -> String {
    let [user, password, project, domain] = real.member();
    format!(
        "[Global]\nauth-url = {}\nusername = {user}\npassword = {password}\n\
         tenant-name = {project}\ndomain-name = {domain}\nregion = RegionOne\n\n\
         [LoadBalancer]\nsubnet-id = {}\nfloating-network-id = {}\n\
         manage-security-groups = true\nmax-shared-lb = {}\n",
        real.auth_url(),
        env["OPENSTACK_INTERNAL_SUBNET_ID"],
        env["OPENSTACK_EXTERNAL_NETWORK_ID"],
        services + 1,
    )
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
