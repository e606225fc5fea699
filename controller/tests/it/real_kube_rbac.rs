//! The generated RBAC judged by the real API server (ignored by default; scripts/test.sh runs
//! them with both stacks up): the in-cluster CCM of `manifests/ccm/`, run as the generated
//! ServiceAccount, does its whole job against the real OpenStack without one refused request,
//! uses every grant (or the allow-list below says why not), writes at most twice per node it
//! initializes and asks nothing between resyncs; with any one grant removed it says so in one
//! line and on `/readyz`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::heartbeat::{Heartbeat, set_ready};
use testkit::kube::{UNINITIALIZED_TAINT, is_tainted};
use testkit::kube_stack::{KubeStack, request, unique};
use testkit::stack::StackEnv;

use crate::in_cluster::{Generated, OnDrop, grants, without};
use crate::load_balancer::lb_list;
use crate::support::{Process, https, scene};

/// Long enough for a server to boot, a load balancer to go ACTIVE, the CCM's retries.
const WAIT: Duration = Duration::from_secs(180);

/// Grants the whole-job run does not exercise, and why each is still needed.
const NOT_EXERCISED: &[(&str, &str)] = &[(
    "patch events.k8s.io/events",
    "kube-rs's Recorder patches an Event it already wrote when the same one recurs (its \
     series count); the run writes no Event twice",
)];

/// Polls `check` every 300 ms until it returns `Some`; fails after [`WAIT`] with the log.
async fn until<T>(what: &str, process: &Process, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {what} within {WAIT:?}; log:\n{}",
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A real Nova server and a Node named after it, both deleted at drop.
async fn server_and_node(env: &StackEnv, kube: &KubeStack, name: &str, selector: &str) -> OnDrop {
    let server = scene(env, &["server-create", "--name", name, "--wait-active"]).await;
    let mut delete_server = Command::new(&env["OPENSTACK_SCENE"]);
    delete_server.args(["server-delete", server["id"].as_str().unwrap(), "--wait", "--missing-ok"]);
    let mut delete_node = kube.kubectl();
    delete_node.args(["delete", "node", name, "--ignore-not-found", "--wait=false"]);
    let guard = OnDrop(vec![delete_node, delete_server]);
    kube.create(&tainted_node(name, selector).to_string());
    guard
}

/// A Node as kubelet registers it with `--cloud-provider=external`, labeled `selector`.
fn tainted_node(name: &str, selector: &str) -> Value {
    let (key, value) = selector.split_once('=').unwrap();
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
        "labels": {"kubernetes.io/hostname": name, key: value}},
        "spec": {"taints": [{"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}]}})
}

/// Each request once (its last stage), by auditID.
fn requests(events: &[Value]) -> Vec<&Value> {
    let mut seen = BTreeMap::new();
    for event in events {
        seen.insert(event["auditID"].as_str().unwrap_or_default(), event);
    }
    seen.into_values().collect()
}

fn is_write(event: &Value) -> bool {
    ["create", "update", "patch", "delete"].contains(&event["verb"].as_str().unwrap_or(""))
}

/// One write to a Node as the audit log saw it: by the CCM or another user, and its answer.
struct NodeWrite {
    ours: bool,
    request: String,
    code: u64,
}

impl std::fmt::Debug for NodeWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = if self.ours { "ccm" } else { "other" };
        write!(f, "{who} {} {}", self.request, self.code)
    }
}

/// Every user's writes to Nodes, per node, in the order the API server received them.
fn node_writes(events: &[&Value], user: &str) -> BTreeMap<String, Vec<NodeWrite>> {
    let mut writes: Vec<_> =
        events.iter().filter(|e| is_write(e) && e["objectRef"]["resource"] == "nodes").collect();
    writes.sort_by_key(|e| e["requestReceivedTimestamp"].as_str().unwrap_or("").to_owned());
    let mut per = BTreeMap::<String, Vec<NodeWrite>>::new();
    for e in writes {
        per.entry(e["objectRef"]["name"].as_str().unwrap_or("").to_owned()).or_default().push(
            NodeWrite {
                ours: e["user"]["username"] == user,
                request: request(e),
                code: e["responseStatus"]["code"].as_u64().unwrap_or(0),
            },
        );
    }
    per
}

/// `/readyz` of the binary on `port`: status and body.
async fn readyz(port: u16) -> (u16, String) {
    let response = https().get(format!("https://127.0.0.1:{port}/readyz")).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn the_generated_service_account_does_the_whole_job_and_nothing_is_refused() {
    let env = StackEnv::load();
    let cloud = env["OPENSTACK_CLOUD_APPCRED"].clone();
    let generated = Generated::apply(&env, &cloud).await;
    let kube = generated.kube.clone();
    let ns = generated.ns.name.clone();
    let user = generated.user();
    let selector = format!("occm-rbac-test={ns}");
    let (kept, gone) = (unique("occm-rbac-a"), unique("occm-rbac-b"));
    let _kept = server_and_node(&env, &kube, &kept, &selector).await;
    let _gone = server_and_node(&env, &kube, &gone, &selector).await;
    set_ready(&kube, &gone, "False");
    let _heartbeat = Heartbeat::start(&kube, &[&kept]);
    let audit = kube.audit();

    // Short periods, so that the idle window below spans a whole resync of each.
    let (mut process, port) = generated.start(&[
        "--node-status-update-frequency=10s",
        "--load-balancer-resync-period=10s",
        "--node-monitor-period=2s",
    ]);

    // Node initialization: providerID, addresses, the flavor's label; taint gone.
    for name in [&kept, &gone] {
        let node = until(&format!("node {name} initialized"), &process, async || {
            kube.get("node", None, name).filter(|n| !is_tainted(n))
        })
        .await;
        assert!(node["spec"]["providerID"].as_str().unwrap().starts_with("openstack:///"));
        assert_eq!(
            node["metadata"]["labels"]["node.kubernetes.io/instance-type"],
            env["OPENSTACK_FLAVOR"].as_str()
        );
        let addresses = node["status"]["addresses"].as_array().unwrap();
        assert!(addresses.iter().any(|a| a["type"] == "InternalIP"), "{addresses:?}");
    }
    let init = node_writes(&requests(&audit.events()), &user);
    eprintln!("FIGURE writes per node initialized: {init:?}");
    for name in [&kept, &gone] {
        let writes = init.get(name.as_str()).map(Vec::as_slice).unwrap_or_default();
        let done = writes.iter().filter(|w| w.ours && w.code < 300).count();
        assert!((1..=2).contains(&done), "{done} writes to initialize {name}: {writes:?}");
        // A refused write is a conflict with a writer that came between (kube-controller-
        // manager tainting the NotReady node, the heartbeat), never with our own.
        for (at, write) in writes.iter().enumerate().filter(|(_, w)| w.ours && w.code >= 300) {
            let between = writes[..at].iter().any(|w| !w.ours && w.code < 300);
            assert!(write.code == 409 && between, "refused with no other writer: {writes:?}");
        }
    }

    assert_eq!(readyz(port).await, (200, "ok".to_owned()), "ready with every grant");

    // Lifecycle: the NotReady node whose server is deleted goes.
    let id = kube.get("node", None, &gone).unwrap()["spec"]["providerID"].as_str().unwrap()
        [("openstack:///".len())..]
        .to_owned();
    scene(&env, &["server-delete", &id, "--wait"]).await;
    until(&format!("node {gone} deleted"), &process, async || {
        kube.get("node", None, &gone).is_none().then_some(())
    })
    .await;

    // A load balancer for a Service, on the test's nodes only.
    let (lb_name, _lb) = load_balancer_service(&env, &generated, &selector);
    until("ingress on the Service", &process, async || {
        let svc = kube.get("service", Some(&ns), "web")?;
        svc.pointer("/status/loadBalancer/ingress/0/ip").and_then(Value::as_str).map(str::to_owned)
    })
    .await;
    // The ingress is written before the node ports' security group (issue 40): the sync
    // ends with its Event, and only then is the CCM idle.
    until("the Service's EnsuredLoadBalancer Event", &process, async || {
        let reasons = kube.run(
            &["get", "events.events.k8s.io", "-n", &ns, "-o", "jsonpath={.items[*].reason}"],
            None,
        );
        reasons.split_whitespace().any(|r| r == "EnsuredLoadBalancer").then_some(())
    })
    .await;
    assert_eq!(lb_list(&env, &lb_name).await.as_array().unwrap().len(), 1);

    // Credentials: the mounted Secret changes (as the kubelet updates it: here from the
    // application credential to the user's password) → the CCM takes them, and stays ready.
    let stack: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&env["OPENSTACK_CLOUDS_YAML"]).unwrap())
            .unwrap();
    let rotated = json!({"clouds": {"openstack": stack["clouds"]["ccm-password"]}});
    let clouds = generated.dir.path().join("secret/clouds.yaml");
    std::fs::write(&clouds, serde_saphyr::to_string(&rotated).unwrap()).unwrap();
    process.wait_line("using the new credentials", Duration::from_secs(60)).await;
    until("ready with the new credentials", &process, async || {
        (readyz(port).await.0 == 200).then_some(())
    })
    .await;

    // Idle: longer than every resync period; only watches and the Lease may be asked.
    let idle = kube.audit();
    tokio::time::sleep(Duration::from_secs(25)).await;
    let idle_events = idle.by(&user);
    let idle_requests = requests(&idle_events);
    let (lease, rest): (Vec<&Value>, Vec<&Value>) =
        idle_requests.into_iter().partition(|e| e["objectRef"]["resource"] == "leases");
    let beyond: Vec<String> =
        rest.iter().filter(|e| e["verb"] != "watch").map(|e| request(e)).collect();
    eprintln!(
        "FIGURE idle 25 s (resyncs every 10 s): {} lease requests, {} beyond watches and lease: {beyond:?}",
        lease.len(),
        beyond.len()
    );
    let events = kube.run(
        &[
            "get",
            "events.events.k8s.io",
            "-n",
            &ns,
            "-o",
            "jsonpath={range .items[*]}{.reason}: {.note} ({.series.count}){\"\\n\"}{end}",
        ],
        None,
    );
    assert_eq!(
        beyond,
        Vec::<String>::new(),
        "requests in steady state beyond watches and lease; events:\n{events}"
    );

    // The Service goes, and its load balancer with it.
    kube.run(&["delete", "service", "web", "-n", &ns, "--wait=true", "--timeout=170s"], None);
    assert_eq!(lb_list(&env, &lb_name).await, json!([]), "the load balancer is left behind");

    // Events and the Lease.
    let lease = kube.get("lease", Some(&ns), "cloud-controller-manager").expect("the Lease");
    assert!(lease["spec"]["holderIdentity"].as_str().is_some_and(|h| !h.is_empty()), "{lease}");
    process.terminate().await;

    // The audit log: nothing refused; what was used against what is granted.
    let events = audit.by(&user);
    let refused: Vec<String> = events
        .iter()
        .filter(|e| e["responseStatus"]["code"] == 403)
        .map(|e| format!("{} {}", request(e), e["requestURI"]))
        .collect();
    assert_eq!(refused, Vec::<String>::new(), "requests the API server refused");
    let used: BTreeSet<String> = requests(&events).into_iter().map(request).collect();
    eprintln!("FIGURE used: {used:?}");
    assert!(used.iter().any(|r| r.starts_with("create") && r.ends_with("/events")), "{used:?}");
    let mut granted = grants(&generated.cluster_role);
    granted.extend(grants(&generated.role));
    let not_used: Vec<&String> = granted
        .iter()
        .filter(|g| !used.contains(*g) && !NOT_EXERCISED.iter().any(|(n, _)| n == g))
        .collect();
    assert_eq!(not_used, Vec::<&String>::new(), "granted, never used, not in NOT_EXERCISED");
    let beyond: Vec<&String> = used.iter().filter(|u| !granted.contains(*u)).collect();
    assert_eq!(beyond, Vec::<&String>::new(), "used but not granted (yet allowed?)");
    let log = process.log();
    assert!(!log.contains(&env["OPENSTACK_APPCRED_SECRET"]), "a secret reached the log");
    assert!(!log.contains(&env["OPENSTACK_PASSWORD"]), "a password reached the log");
}

/// Creates the Service `web` of type LoadBalancer in the CCM's namespace, on the nodes of
/// `selector` only: the name its load balancer gets, and the guard deleting both on failure.
fn load_balancer_service(
    env: &StackEnv,
    generated: &Generated,
    selector: &str,
) -> (String, OnDrop) {
    let (kube, ns) = (&generated.kube, &generated.ns.name);
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": ns,
            "annotations": {"loadbalancer.openstack.org/node-selector": selector}},
        "spec": {"type": "LoadBalancer", "selector": {"app": "web"},
            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}});
    let cluster = generated.args.iter().find_map(|a| a.strip_prefix("--cluster-name=")).unwrap();
    let lb_name = format!("kube_service_{cluster}_{ns}_web");
    let guard = lb_guard(env, kube, ns, &lb_name);
    kube.create(&service.to_string());
    (lb_name, guard)
}

/// At drop: the Service's finalizer dropped and the Service deleted, waited for (the next
/// test's CCM, which acts on every Service of the cluster, must not find it while its namespace
/// is still terminating: it made a load balancer of its own for it), and its load balancer and
/// floating IP (tagged with the load balancer's name) deleted, if a failure left them.
fn lb_guard(env: &StackEnv, kube: &KubeStack, ns: &str, lb_name: &str) -> OnDrop {
    let mut finalizer = kube.kubectl();
    finalizer.args(["patch", "service", "web", "-n", ns, "--type=merge"]);
    finalizer.args(["-p", r#"{"metadata":{"finalizers":null}}"#]);
    let mut delete = kube.kubectl();
    delete.args(["delete", "service", "web", "-n", ns, "--ignore-not-found", "--timeout=60s"]);
    // `$0`: openstack_scene.py; `$1`: the load balancer's name (also its floating IP's tag).
    let ids = |list: &str, filter: &str| {
        format!(
            r#"$("$0" {list} | python3 -c 'import json,sys; print(" ".join(x["id"] for x in json.load(sys.stdin) if {filter}))' "$1")"#
        )
    };
    let script = format!(
        r#"for id in {}; do "$0" loadbalancer-delete "$id"; done; for id in {}; do "$0" floating-ip-delete "$id"; done"#,
        ids("loadbalancer-list", r#"x["name"] == sys.argv[1]"#),
        ids("floating-ip-list", r#"sys.argv[1] in (x["tags"] or [])"#),
    );
    let mut cleanup = Command::new("bash");
    cleanup.arg("-c").arg(script).args([&env["OPENSTACK_SCENE"], lb_name]);
    OnDrop(vec![finalizer, delete, cleanup])
}

/// Whether `line` is the CCM's one line for `grant` (`verb group/resource`).
fn says(line: &str, grant: &str) -> bool {
    let (verb, resource) = grant.split_once(' ').unwrap();
    let needle = format!("forbidden: cannot {verb} {}", resource.trim_start_matches('/'));
    line.contains(&format!("{needle}:"))
}

/// Waits until the API server's authorizer no longer lets the ServiceAccount do `grant`.
async fn until_refused(generated: &Generated, grant: &str) {
    let (verb, target) = grant.split_once(' ').unwrap();
    let (group, resource) = target.split_once('/').unwrap();
    let (resource, sub) = resource.split_once('/').map_or((resource, None), |(r, s)| (r, Some(s)));
    let resource =
        if group.is_empty() { resource.to_owned() } else { format!("{resource}.{group}") };
    let mut args =
        vec!["auth".to_owned(), "can-i".to_owned(), verb.to_owned(), resource, "-n".to_owned()];
    args.push(generated.ns.name.clone());
    args.push(format!("--as={}", generated.user()));
    if let Some(sub) = sub {
        args.push(format!("--subresource={sub}"));
    }
    for _ in 0..50 {
        let mut cmd = generated.kube.kubectl();
        cmd.args(&args);
        let out = testkit::cluster::run_bounded(cmd, None);
        if String::from_utf8_lossy(&out.stdout).trim() == "no" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the API server still allows {grant} after 10 s");
}

/// A Node for no server, NotReady: the lifecycle controller deletes it (and writes an Event).
fn ghost_node(kube: &KubeStack, name: &str, selector: &str) {
    let mut node = tainted_node(name, selector);
    node["spec"] = json!({});
    kube.run(&["delete", "node", name, "--ignore-not-found"], None);
    kube.create(&node.to_string());
    set_ready(kube, name, "False");
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn with_one_grant_removed_the_ccm_says_which_in_one_line_and_on_readyz() {
    let env = StackEnv::load();
    let generated = Generated::apply(&env, &env["OPENSTACK_CLOUD_APPCRED"]).await;
    let kube = generated.kube.clone();
    let ns = generated.ns.name.clone();
    let selector = format!("occm-rbac-test={ns}");
    let (real, ghost) = (unique("occm-rbac-r"), unique("occm-rbac-g"));
    let _real = server_and_node(&env, &kube, &real, &selector).await;
    let mut delete_ghost = kube.kubectl();
    delete_ghost.args(["delete", "node", &ghost, "--ignore-not-found", "--wait=false"]);
    let _ghost = OnDrop(vec![delete_ghost]);
    let (lb_name, _lb) = load_balancer_service(&env, &generated, &selector);

    let (cluster_role, role) = (generated.cluster_role.clone(), generated.role.clone());
    // The Service's grants first: once its finalizer and status are written, later runs
    // have nothing to write to it.
    let mut cases: Vec<(String, bool)> = Vec::new();
    for (grants, cluster) in [(grants(&cluster_role), true), (grants(&role), false)] {
        cases.extend(grants.into_iter().map(|g| (g, cluster)));
    }
    cases.retain(|(g, _)| !NOT_EXERCISED.iter().any(|(n, _)| n == g));
    cases.sort_by_key(|(g, _)| !g.contains("/services"));
    let flags = ["--node-monitor-period=1s", "--leader-elect-retry-period=500ms"];
    let mut said = Vec::new();
    for (grant, in_cluster_role) in &cases {
        let started = std::time::Instant::now();
        let (c, r) = if *in_cluster_role {
            (without(&cluster_role, grant), role.clone())
        } else {
            (cluster_role.clone(), without(&role, grant))
        };
        generated.set_rules(&c, &r);
        until_refused(&generated, grant).await;
        // What each path needs: no Lease yet, a tainted Node of a real server, a ghost Node.
        kube.run(
            &["delete", "lease", "cloud-controller-manager", "-n", &ns, "--ignore-not-found"],
            None,
        );
        kube.run(&["delete", "node", &real], None);
        kube.create(&tainted_node(&real, &selector).to_string());
        let _heartbeat = Heartbeat::start(&kube, &[&real]);
        ghost_node(&kube, &ghost, &selector);

        let (mut process, port) = generated.start(&flags);
        let line = until(&format!("the line for {grant}"), &process, async || {
            process.lines.lock().unwrap().iter().find(|l| says(l, grant)).cloned()
        })
        .await;
        let (status, body) = readyz(port).await;
        assert_eq!(status, 503, "{grant}: /readyz: {body}");
        assert!(says(&body, grant), "{grant}: /readyz does not name it: {body}");
        // Long enough for several retries (backoffs start under a second): still one line.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let lines: Vec<String> =
            process.lines.lock().unwrap().iter().filter(|l| says(l, grant)).cloned().collect();
        assert_eq!(lines.len(), 1, "{grant}: one line, not one per retry:\n{}", lines.join("\n"));
        process.terminate().await;
        said.push(format!("{grant} ({:.1} s): {line}", started.elapsed().as_secs_f64()));
    }
    eprintln!("FIGURE removal runs:\n{}", said.join("\n"));

    // Every grant back: the Service goes, and its load balancer with it.
    generated.set_rules(&cluster_role, &role);
    let (mut process, _port) = generated.start(&flags);
    kube.run(&["delete", "service", "web", "-n", &ns, "--wait=true", "--timeout=170s"], None);
    assert_eq!(lb_list(&env, &lb_name).await, json!([]), "the load balancer is left behind");
    process.terminate().await;
}
