//! The service controller against the real API server (scripts/kube-up.sh) and the real
//! Octavia (scripts/openstack-up.sh): a LoadBalancer Service gets our finalizer and its ingress
//! in `status`; deleted, it loses its load balancer, then the finalizer, and is gone. Behind a
//! lagging Service watch, each change is written once.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::kube::load_balancer_service;
use testkit::kube_front::{Delay, KubeFront, Upstream};
use testkit::kube_stack::{AuditLog, KubeStack, Namespace, request, unique};
use testkit::stack::StackEnv;

use crate::load_balancer::{FINALIZER, clouds_conf, lb_list, node, until};
use crate::support::{Process, start_with_kubeconfig};

/// The test's Node, its Service's finalizer, its load balancers and floating IPs, undone when
/// dropped (a failed test leaves neither a Service the namespace cannot lose nor an Octavia
/// tree nor an address).
pub(crate) struct Cleanup {
    stack: KubeStack,
    env: StackEnv,
    node: String,
    service: (String, String),
    /// The CCM's `--cluster-name`, in every load balancer's name and floating IP's description.
    cluster: String,
}

impl Cleanup {
    /// For Node `node`, Service `ns/web` and the load balancers of cluster `cluster`.
    pub(crate) fn new(
        stack: &KubeStack,
        env: &StackEnv,
        node: &str,
        ns: &str,
        cluster: &str,
    ) -> Self {
        Cleanup {
            stack: stack.clone(),
            env: env.clone(),
            node: node.to_owned(),
            service: (ns.to_owned(), "web".to_owned()),
            cluster: cluster.to_owned(),
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let kubectl = |args: &[&str]| {
            let mut cmd = self.stack.kubectl();
            cmd.args(args);
            let _ = testkit::cluster::run_bounded(cmd, None);
        };
        let (ns, name) = (&self.service.0, &self.service.1);
        kubectl(&[
            "patch",
            "service",
            name,
            "-n",
            ns,
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ]);
        // Waited for: the next test's CCM acts on every Service of the cluster.
        kubectl(&["delete", "service", name, "-n", ns, "--ignore-not-found", "--timeout=60s"]);
        kubectl(&["delete", "node", &self.node, "--ignore-not-found", "--wait=false"]);
        let script = self.env.get("OPENSTACK_SCENE").unwrap_or("scripts/openstack_scene.py");
        // Every load balancer this CCM made, also for another test's Service (it serves every
        // Service of the cluster): their names start with its cluster's. Then the floating IPs
        // a CCM described for the cluster (one that upstream's leaves, say).
        let prefix = format!("kube_service_{}_", self.cluster);
        let kinds = [("loadbalancer", "name", prefix.as_str()), ("floating-ip", "description", "")];
        for (kind, field, start) in kinds {
            let listed = std::process::Command::new(script).arg(format!("{kind}-list")).output();
            let objects: Value = listed
                .ok()
                .and_then(|out| serde_json::from_slice(&out.stdout).ok())
                .unwrap_or(Value::Null);
            for object in objects.as_array().into_iter().flatten() {
                let text = object[field].as_str().unwrap_or_default();
                let ours = text.starts_with(start) && text.contains(&self.cluster);
                if let (true, Some(id)) = (ours, object["id"].as_str()) {
                    let delete = format!("{kind}-delete");
                    let _ = std::process::Command::new(script).args([delete.as_str(), id]).status();
                }
            }
        }
    }
}

/// One test's cluster of its own: a namespace, a member Node, a LoadBalancer Service `web` in
/// it (its nodePort the real server's to allocate), the cloud.conf, an identity for the CCM,
/// and the cluster name in every load-balancer name; undone when dropped.
struct Scene {
    stack: KubeStack,
    env: StackEnv,
    ns: String,
    dir: tempfile::TempDir,
    /// The CCM's user name (its client certificate's).
    user: String,
    cluster: String,
    load_balancer: String,
    /// The audit log from before the Service was made.
    audit: AuditLog,
    conf: std::path::PathBuf,
    // Dropped in this order: the Service's finalizer and the Node first, then the namespace.
    _cleanup: Cleanup,
    _namespace: Namespace,
}

impl Scene {
    /// A kubeconfig for the CCM's user, with every right.
    fn kubeconfig(&self) -> std::path::PathBuf {
        self.stack.client_kubeconfig(self.dir.path(), &self.user, &["system:masters"])
    }

    fn new(prefix: &str, node_ip: &str) -> Scene {
        let (stack, env) = (KubeStack::load(), StackEnv::load());
        let namespace = stack.namespace(&format!("ccm-{prefix}"));
        let ns = namespace.name.clone();
        let dir = tempfile::tempdir().unwrap();
        let user = unique(&format!("ccm-{prefix}"));
        let cluster = unique(prefix).replace('-', "");
        let load_balancer = format!("kube_service_{cluster}_{ns}_web");
        let node_name = unique("occm-member");
        let cleanup = Cleanup::new(&stack, &env, &node_name, &ns, &cluster);
        let audit = stack.audit();
        stack.create(&node(&node_name, node_ip).to_string());
        let mut service = load_balancer_service(&ns, "web", &[(80, 0)]);
        service["spec"]["ports"][0].as_object_mut().unwrap().remove("nodePort");
        stack.create(&service.to_string());
        let conf = dir.path().join("cloud.conf");
        let subnet = format!("subnet-id = {}\n", env["OPENSTACK_INTERNAL_SUBNET_ID"]);
        std::fs::write(&conf, clouds_conf(&env, &env["OPENSTACK_CLOUD_APPCRED"], &subnet)).unwrap();
        Scene {
            stack,
            env,
            ns,
            dir,
            user,
            cluster,
            load_balancer,
            audit,
            conf,
            _cleanup: cleanup,
            _namespace: namespace,
        }
    }
}

/// The requests on the namespace's Services (by `user`; `""`: by anyone).
fn service_events<'a>(events: &'a [Value], user: &str, ns: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| user.is_empty() || e["user"]["username"] == user)
        .filter(|e| e["objectRef"]["namespace"] == ns)
        .filter(|e| e["objectRef"]["resource"] == "services")
        .collect()
}

/// Fails when a client other than this CCM and the test's admin wrote the Service: another
/// test's CCM on the shared cluster (the same finalizer, its own cleanup) would make this test
/// meaningless. scripts/test.sh runs every such test in the `real-kube-ccm` group, one at a time.
fn assert_alone(audit: &AuditLog, user: &str, ns: &str) {
    let events = audit.events();
    let ours = service_events(&events, "", ns);
    let creator =
        ours.iter().find(|e| e["verb"] == "create").map(|e| e["user"]["username"].clone());
    let mut others: Vec<String> = events
        .iter()
        .filter(|e| e["objectRef"]["namespace"] == ns && e["objectRef"]["resource"] == "services")
        .filter(|e| !matches!(e["verb"].as_str(), Some("get" | "list" | "watch")))
        .filter(|e| {
            e["user"]["username"] != user && Some(&e["user"]["username"]) != creator.as_ref()
        })
        .filter_map(|e| e["user"]["username"].as_str().map(str::to_owned))
        .collect();
    others.dedup();
    assert!(others.is_empty(), "another controller wrote the test's Service: {others:?}");
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn a_load_balancer_service_gets_finalizer_and_ingress_and_goes_after_its_load_balancer() {
    let scene = Scene::new("svc", "10.0.0.231");
    let Scene { stack, env, ns, user, cluster, load_balancer, audit, conf, .. } = &scene;
    let (ns, user, load_balancer) = (ns.as_str(), user.as_str(), load_balancer.as_str());
    let mut ccm = start(conf, &scene.kubeconfig(), cluster);

    let get = || stack.get("service", Some(ns), "web");
    let ingress = until("the ingress in the Service's status", &ccm, async || {
        let svc = get()?;
        svc.pointer("/status/loadBalancer/ingress/0/ip").and_then(Value::as_str).map(str::to_owned)
    })
    .await;
    assert_alone(audit, user, ns);
    // The reconcile's span names the Service on each of its lines.
    let log = ccm.log();
    let span = format!("service{{key={ns}/web}}");
    assert!(
        log.lines().any(|l| l.contains(&span) && l.contains("load balancer created")),
        "no line of {span} says the load balancer was created:\n{log}"
    );
    let svc = get().unwrap();
    assert_eq!(svc["metadata"]["finalizers"], json!([FINALIZER]), "{svc}");
    let lbs = lb_list(env, load_balancer).await;
    let [lb] = lbs.as_array().unwrap().as_slice() else { panic!("one load balancer: {lbs}") };
    assert_eq!(lb["provisioning_status"], "ACTIVE");
    assert_eq!(lb["vip_address"], ingress.as_str());
    // Its ID on the Service, as upstream writes it (migrate-load-balancers reads the cluster
    // name off the load balancer it names).
    let annotation = &svc["metadata"]["annotations"]["loadbalancer.openstack.org/load-balancer-id"];
    assert_eq!(annotation, &lb["id"], "{svc}");
    let node_port = svc["spec"]["ports"][0]["nodePort"].as_u64().expect("a nodePort");
    let member = json!(format!("10.0.0.231:{node_port}"));
    let members = lb["pools"][0]["members"].as_array().unwrap();
    assert!(members.contains(&member), "{lb}");

    stack.run(&["delete", "service", "web", "-n", ns, "--wait=false"], None);
    until("the Service gone", &ccm, async || get().is_none().then_some(())).await;
    assert_alone(audit, user, ns);
    assert_eq!(lb_list(env, load_balancer).await, json!([]), "the load balancer is left behind");
    // Written by this CCM: the finalizer, the status, the finalizer's removal last.
    let events = audit.wait_for(Duration::from_secs(10), |events| {
        service_events(events, user, ns).iter().filter(|e| request(e) == "patch /services").count()
            >= 2
    });
    let writes: Vec<String> = service_events(&events, user, ns)
        .iter()
        .map(|e| request(e))
        .filter(|r| !r.starts_with("get ") && !r.starts_with("list ") && !r.starts_with("watch "))
        .collect();
    assert_eq!(writes.first().map(String::as_str), Some("patch /services"), "{writes:?}");
    assert!(writes.iter().any(|w| w == "patch /services/status"), "{writes:?}");
    assert_eq!(writes.last().map(String::as_str), Some("patch /services"), "{writes:?}");
    assert_eq!(ccm.terminate().await, Some(0), "log:\n{}", ccm.log());
}

/// How late the front passes each piece of the Service watch on: longer than a reconcile's
/// writes take, so that their events reach the CCM's cache after the reconcile they queue.
const LAG: Duration = Duration::from_secs(2);

/// `user`'s writes to the namespace's Services, in order: the request and the answer's code.
fn writes_by(events: &[Value], user: &str, ns: &str) -> Vec<String> {
    service_events(events, user, ns)
        .into_iter()
        .filter(|e| {
            ["create", "update", "patch", "delete"].contains(&e["verb"].as_str().unwrap_or(""))
        })
        .map(|e| format!("{} {}", request(e), e["responseStatus"]["code"]))
        .collect()
}

/// Behind a Service watch passed on `LAG` late (a busy API server), every reconcile the CCM's
/// own writes queue runs on a cached copy older than those writes. Each change is written
/// once all the same: the Service made a LoadBalancer gets its finalizer, its load-balancer-id
/// and its ingress; made a ClusterIP, its finalizer removed. Before (issue 37): the annotation
/// and the status written again from the older copies.
#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn behind_a_lagging_service_watch_each_change_is_written_once() {
    let scene = Scene::new("lag", "10.0.0.232");
    let Scene { stack, env, ns, user, cluster, load_balancer, audit, conf, .. } = &scene;
    let lagging = Delay::watch_events_of("services", LAG);
    let front = KubeFront::start(Upstream::from_kubeconfig(&scene.kubeconfig()), lagging).await;
    let front_dir = tempfile::tempdir().unwrap();
    let mut ccm = start(conf, &front.kubeconfig(front_dir.path()), cluster);

    let get = || stack.get("service", Some(ns), "web");
    until("the ingress in the Service's status", &ccm, async || {
        get()?.pointer("/status/loadBalancer/ingress/0/ip").map(|_| ())
    })
    .await;
    // Every event of those writes passed on, and every reconcile it queued run.
    tokio::time::sleep(LAG * 4).await;
    assert_alone(audit, user, ns);
    let ensured = writes_by(&audit.events(), user, ns);
    let once = ["patch /services 200", "patch /services 200", "patch /services/status 200"];
    assert_eq!(ensured, once, "the finalizer, load-balancer-id, the ingress:\n{}", ccm.log());
    assert!(front.delayed() >= 1, "the Service watch went through the front");

    let patch = r#"{"spec":{"type":"ClusterIP"}}"#;
    stack.run(&["patch", "service", "web", "-n", ns, "--type=merge", "-p", patch], None);
    until("the finalizer removed", &ccm, async || {
        get()?["metadata"]["finalizers"].is_null().then_some(())
    })
    .await;
    tokio::time::sleep(LAG * 4).await;
    assert_alone(audit, user, ns);
    let writes = writes_by(&audit.events(), user, ns);
    let cleaned = &writes[ensured.len()..];
    // The API server clears the ingress of a Service that stops being a LoadBalancer.
    assert_eq!(cleaned, ["patch /services 200"], "the finalizer removed:\n{}", ccm.log());
    assert_eq!(lb_list(env, load_balancer).await, json!([]), "the load balancer is left behind");
    assert_eq!(ccm.terminate().await, Some(0), "log:\n{}", ccm.log());
}

fn start(conf: &Path, kubeconfig: &Path, cluster: &str) -> Process {
    let cluster = format!("--cluster-name={cluster}");
    let flags = ["--leader-elect=false", "--controllers=service", cluster.as_str()];
    start_with_kubeconfig(conf, kubeconfig, &flags)
}
