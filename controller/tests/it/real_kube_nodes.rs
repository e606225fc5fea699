//! The node controller against the real API server (scripts/kube-up.sh) and the real Nova
//! (scripts/openstack-up.sh): its Node watch cut off, resumed after the API server can no
//! longer serve it from where it stopped (410), and a node created meanwhile still initialized,
//! with the addresses it means.
//!
//! The real API server answers watches from its watch cache: a resumed watch is 410 when its
//! resourceVersion has left the cache's window, which happens only to events older than 75 s
//! (newer ones make the cache grow instead) pushed out by newer events. So the cut lasts 75 s,
//! then Nodes of the test's change until a watch from the cut's version is 410, and etcd is
//! compacted too (a watch the cache hands to etcd is 410 as well).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use testkit::kube::NodeFixture;
use testkit::kube_stack::{KubeStack, request, unique};
use testkit::stack::StackEnv;
use tokio::sync::watch;

use crate::support::{Process, scene, start_with_kubeconfig};

/// A TCP forwarder that can be cut: while cut, its open connections are closed and new ones
/// are closed on accept.
struct Cuttable {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
}

impl Cuttable {
    async fn start(target: String) -> Cuttable {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = watch::Sender::new(false);
        let state = cut.subscribe();
        tokio::spawn(async move {
            loop {
                let (mut inbound, _) = listener.accept().await.unwrap();
                let mut state = state.clone();
                if *state.borrow_and_update() {
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = state.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Cuttable { addr, cut }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }
}

/// Cluster-scoped objects and OpenStack servers of the test, deleted when dropped.
struct Cleanup {
    stack: KubeStack,
    env: StackEnv,
    nodes: Vec<String>,
    servers: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for node in &self.nodes {
            let mut cmd = self.stack.kubectl();
            cmd.args(["delete", "node", node, "--ignore-not-found", "--wait=false"]);
            let _ = testkit::cluster::run_bounded(cmd, None);
        }
        let script = self.env.get("OPENSTACK_SCENE").unwrap_or("scripts/openstack_scene.py");
        for id in &self.servers {
            let _ = std::process::Command::new(script)
                .args(["server-delete", id, "--wait", "--missing-ok"])
                .status();
        }
    }
}

/// An admin kube client from `kubeconfig`.
async fn client(kubeconfig: &Path) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(file, &options).await.unwrap();
    kube::Client::try_from(config).unwrap()
}

/// The cloud config: the second region, which no other test's CCM uses, so that only this CCM
/// acts on Nodes whose providerID names it (another CCM on the shared cluster refuses them).
fn cloud_conf(env: &StackEnv) -> String {
    format!(
        "[Global]\nauth-url = {}\nusername = {}\npassword = {}\ntenant-name = {}\nuser-domain-name = Default\ntenant-domain-name = Default\nregion = {}\n",
        env["OPENSTACK_AUTH_URL"],
        env["OPENSTACK_USER"],
        env["OPENSTACK_PASSWORD"],
        env["OPENSTACK_PROJECT"],
        env["OPENSTACK_REGION_NO_LB"]
    )
}

/// Waits (bounded) until the node has lost the uninitialized taint; the node.
async fn initialized(nodes: &Api<Node>, name: &str, ccm: &Process) -> Value {
    let start = Instant::now();
    loop {
        let node = serde_json::to_value(nodes.get(name).await.unwrap()).unwrap();
        if !testkit::kube::is_tainted(&node) {
            return node;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{name} was not initialized: {node}\nCCM log:\n{}",
            ccm.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Whether a watch of Nodes from `rv` is refused as too old (410).
async fn expired(nodes: &Api<Node>, rv: &str) -> bool {
    let stream = nodes.watch(&WatchParams::default().timeout(1), rv).await.unwrap();
    let mut stream = std::pin::pin!(stream);
    match tokio::time::timeout(Duration::from_secs(20), stream.next()).await {
        Ok(Some(Ok(WatchEvent::Error(e)))) => e.code == 410,
        Ok(Some(Err(kube::Error::Api(e)))) => e.code == 410,
        _ => false,
    }
}

/// Compacts etcd's history up to `revision` (etcd's gRPC `KV/Compact`, physical) with curl.
fn compact_etcd(stack: &KubeStack, revision: u64, dir: &Path) {
    let mut message = vec![0x08];
    let mut rest = revision;
    loop {
        let byte = u8::try_from(rest & 0x7f).unwrap();
        rest >>= 7;
        message.push(if rest == 0 { byte } else { byte | 0x80 });
        if rest == 0 {
            break;
        }
    }
    message.extend([0x10, 0x01]);
    let mut frame = vec![0];
    frame.extend(u32::try_from(message.len()).unwrap().to_be_bytes());
    frame.extend(message);
    let body = dir.join("compact.bin");
    std::fs::write(&body, frame).unwrap();
    let out = std::process::Command::new("curl")
        .args(["-sS", "--http2", "-o", "/dev/null", "-D", "-", "--max-time", "30"])
        .args(["--cacert", &stack["KUBE_ETCD_CA_CERT"], "--cert", &stack["KUBE_ETCD_CLIENT_CERT"]])
        .args(["--key", &stack["KUBE_ETCD_CLIENT_KEY"], "-H", "content-type: application/grpc"])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!("{}/etcdserverpb.KV/Compact", stack["KUBE_ETCD_URL"]))
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&out.stdout);
    // A compaction at or below an earlier one is refused (grpc-status 11): compacted already.
    assert!(
        headers.contains("grpc-status: 0") || headers.contains("grpc-status: 11"),
        "etcd compaction failed: {headers}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `resourceVersion` of a request URI.
fn resource_version(uri: &str) -> Option<u64> {
    let value = uri.split(['?', '&', ' ']).find_map(|p| p.strip_prefix("resourceVersion="))?;
    value.parse().ok()
}

fn list_rv(nodes_json: &str) -> u64 {
    let list: Value = serde_json::from_str(nodes_json).unwrap();
    list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn a_node_created_while_the_watch_was_cut_and_compacted_away_is_initialized() {
    let (stack, env) = (KubeStack::load(), StackEnv::load());
    let dir = tempfile::tempdir().unwrap();
    let user = unique("ccm-watch");
    let (before, during, churn) =
        (unique("occm-before"), unique("occm-during"), unique("occm-churn"));
    let mut cleanup = Cleanup {
        stack: stack.clone(),
        env: env.clone(),
        nodes: vec![before.clone(), during.clone(), churn.clone()],
        servers: Vec::new(),
    };
    let server = scene(&env, &["server-create", "--name", &before, "--wait-active"]).await;
    let id = server["id"].as_str().unwrap().to_owned();
    cleanup.servers.push(id.clone());
    let fixed = server["fixed_ips"][0].as_str().unwrap().to_owned();
    let provider_id = format!("openstack://{}/{id}", env["OPENSTACK_REGION_NO_LB"]);

    // The CCM's API server is a cuttable forwarder in front of the real one (same certificate:
    // both are 127.0.0.1).
    let proxy = Cuttable::start(stack.url().trim_start_matches("https://").to_owned()).await;
    let kubeconfig = stack.client_kubeconfig(dir.path(), &user, &["system:masters"]);
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    let text = text.replace(stack.url(), &format!("https://{}", proxy.addr));
    let ccm_config = dir.path().join("ccm.kubeconfig");
    std::fs::write(&ccm_config, text).unwrap();
    let admin = client(Path::new(&stack["KUBE_ADMIN_KUBECONFIG"])).await;
    let nodes: Api<Node> = Api::all(admin);

    // Two nodes of one server (found by providerID): one before the cut, one during it.
    let node = |name: &str| {
        let fixture = NodeFixture::tainted(name).ready("False").provider_id(&provider_id);
        serde_json::from_value::<Node>(fixture.build()).unwrap()
    };
    nodes.create(&Default::default(), &node(&before)).await.unwrap();
    let conf = dir.path().join("cloud.conf");
    std::fs::write(&conf, cloud_conf(&env)).unwrap();
    let audit = stack.audit();
    let flags = ["--leader-elect=false", "--controllers=cloud-node"];
    let mut ccm = start_with_kubeconfig(&conf, &ccm_config, &flags);
    let first = initialized(&nodes, &before, &ccm).await;
    // The server's address and the node's name: the CCM's addresses, and only those.
    let addresses = |name: &str| json!([{"type": "InternalIP", "address": fixed}, {"type": "Hostname", "address": name}]);
    assert_eq!(first["status"]["addresses"], addresses(&before));
    let lists = |events: &[Value]| {
        events
            .iter()
            .filter(|e| e["user"]["username"] == user.as_str())
            .filter(|e| request(e) == "list /nodes")
            .count()
    };
    assert_eq!(lists(&audit.events()), 1, "one list before the cut");

    proxy.set_cut(true);
    let cut = list_rv(&stack.run(&["get", "--raw", "/api/v1/nodes?limit=1"], None));
    let cut_at = Instant::now();
    nodes.create(&Default::default(), &node(&during)).await.unwrap();
    // Stale addresses, two of one type, as a kubelet may have written them: the CCM replaces
    // the list with its own.
    let stale = json!({"status": {"addresses": [
        {"type": "InternalIP", "address": "198.51.100.1"},
        {"type": "InternalIP", "address": "198.51.100.2"},
        {"type": "Hostname", "address": during}]}});
    nodes.patch_status(&during, &PatchParams::default(), &Patch::Merge(&stale)).await.unwrap();
    // Of our server in our region too: a CCM of another test with cloud-node-lifecycle deletes
    // a NotReady node without a server.
    let churn_node = serde_json::from_value::<Node>(json!({"metadata": {"name": churn},
        "spec": {"providerID": provider_id.clone()}}))
    .unwrap();
    nodes.create(&Default::default(), &churn_node).await.unwrap();
    // Events younger than 75 s are never pushed out of the watch cache.
    tokio::time::sleep(Duration::from_secs(80).saturating_sub(cut_at.elapsed())).await;
    let mut changes = 0;
    while !expired(&nodes, &cut.to_string()).await {
        assert!(changes < 5000, "a watch from {cut} is still served after {changes} changes");
        for _ in 0..100 {
            let patch = json!({"metadata": {"labels": {"churn": changes.to_string()}}});
            nodes.patch(&churn, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
            changes += 1;
        }
    }
    let now = list_rv(&stack.run(&["get", "--raw", "/api/v1/nodes?limit=1"], None));
    compact_etcd(&stack, now, dir.path());
    assert!(testkit::kube::is_tainted(
        &serde_json::to_value(nodes.get(&during).await.unwrap()).unwrap()
    ));

    let resumed = stack.audit();
    proxy.set_cut(false);
    let second = initialized(&nodes, &during, &ccm).await;
    assert_eq!(second["spec"]["providerID"], provider_id.as_str());
    assert_eq!(second["status"]["addresses"], addresses(&during), "the stale ones are gone");
    // After the cut: a watch from the version it had (at most the cut's), refused, then a list.
    let patched = |events: &[Value]| {
        events.iter().any(|e| {
            e["user"]["username"] == user.as_str()
                && e["objectRef"]["name"] == during.as_str()
                && request(e) == "patch /nodes"
        })
    };
    let events = resumed.wait_for(Duration::from_secs(10), |e| lists(e) >= 1 && patched(e));
    let ours: Vec<String> = events
        .iter()
        .filter(|e| e["user"]["username"] == user.as_str())
        .map(|e| format!("{} {}", request(e), e["requestURI"].as_str().unwrap_or_default()))
        .collect();
    let old_watch = ours.iter().position(|r| {
        r.starts_with("watch /nodes ") && resource_version(r).is_some_and(|rv| rv <= cut)
    });
    let relist = ours.iter().position(|r| r.starts_with("list /nodes "));
    assert!(
        matches!((old_watch, relist), (Some(w), Some(l)) if w < l),
        "no resumed watch followed by a relist: {ours:#?}"
    );
    assert_eq!(ccm.terminate().await, Some(0), "log:\n{}", ccm.log());
    drop(cleanup);
}
