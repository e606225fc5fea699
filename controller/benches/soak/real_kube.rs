//! The real kube-apiserver of scripts/kube-up.sh (`CCM_KUBE_ENV`) as the soak's cluster: a kube
//! client as a `system:masters` user of its own, the namespace `soak` made afresh, the soak's
//! Nodes' Leases renewed (testkit's Heartbeat) so that kube-controller-manager never marks them
//! Unknown, and what the soak made removed at the end, or when dropped after a panic.
//!
//! Its CCM acts on every Node and LoadBalancer Service of the cluster (it deletes a NotReady
//! Node whose server its project lacks), so the soak refuses a cluster that others use (Nodes
//! beyond the stack's own, namespaces, LoadBalancer Services), notes every Node of others that
//! appears while it runs, and must not run beside the tests that use the cluster.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use testkit::heartbeat::Heartbeat;
use testkit::kube_stack::KubeStack;

use crate::cluster::Cluster;
use crate::journal;
use crate::world::NAMESPACE;

/// The real cluster and what the soak made there.
pub(crate) struct RealKube {
    stack: KubeStack,
    client: kube::Client,
    handle: tokio::runtime::Handle,
    /// A kubeconfig of the soak's user (also the slow front's upstream).
    pub(crate) kubeconfig: PathBuf,
    heartbeat: Mutex<Option<Heartbeat>>,
    /// Every Node the soak created (deleted at the end).
    nodes: Mutex<BTreeSet<String>>,
    /// Nodes of others seen while the soak ran (noted once each).
    foreign: Mutex<BTreeSet<String>>,
    finished: AtomicBool,
}

impl RealKube {
    /// Connects as a new `system:masters` user (its kubeconfig in `dir`), checks that no
    /// LoadBalancer Service of others is there, and makes the namespace `soak` afresh.
    pub(crate) async fn start(dir: &Path) -> RealKube {
        let stack = KubeStack::load();
        let user = format!("soak-driver-{}", std::process::id());
        let kubeconfig = stack.client_kubeconfig(dir, &user, &["system:masters"]);
        let file = Kubeconfig::read_from(&kubeconfig).expect("the minted kubeconfig reads");
        let config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
            .await
            .expect("a client config from the minted kubeconfig");
        let client = kube::Client::try_from(config).expect("a kube client");
        let real = RealKube {
            stack,
            client,
            handle: tokio::runtime::Handle::current(),
            kubeconfig,
            heartbeat: Mutex::new(None),
            nodes: Mutex::new(BTreeSet::new()),
            foreign: Mutex::new(BTreeSet::new()),
            finished: AtomicBool::new(false),
        };
        real.refuse_others().await;
        real.fresh_namespace().await;
        journal::note(&format!(
            "the real API server {}: namespace {NAMESPACE} made",
            real.stack.url()
        ));
        real
    }

    /// Panics when others use the cluster: a LoadBalancer Service outside `soak` (the soak's
    /// CCM would take it over: finalizer, load balancer in the soak's project), a Node beyond
    /// the stack's own and an earlier soak's (it would try to initialize it, and delete it when
    /// NotReady), a namespace of a test.
    async fn refuse_others(&self) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let nodes = nodes.list(&ListParams::default()).await.expect("list Nodes");
        let own = &self.stack["KUBE_NODE_NAME"];
        let others: Vec<&str> = (nodes.items.iter())
            .filter_map(|n| n.metadata.name.as_deref())
            .filter(|n| n != own && !is_soak_node(n))
            .collect();
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let namespaces = namespaces.list(&ListParams::default()).await.expect("list namespaces");
        let system = ["default", "kube-system", "kube-public", "kube-node-lease", NAMESPACE];
        let active: Vec<&str> = (namespaces.items.iter())
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .filter_map(|n| n.metadata.name.as_deref())
            .filter(|n| !system.contains(n))
            .collect();
        assert!(
            others.is_empty() && active.is_empty(),
            "the real cluster is in use (Nodes {others:?}, namespaces {active:?}): the soak's \
             CCM acts on every Node and Service of the cluster (it deletes a NotReady Node whose \
             server its project lacks); run it when no test uses the cluster"
        );
        let services: Api<Service> = Api::all(self.client.clone());
        let list = services.list(&ListParams::default()).await.expect("list Services");
        let foreign: Vec<String> = list
            .items
            .iter()
            .filter(|s| s.metadata.namespace.as_deref() != Some(NAMESPACE))
            .filter(|s| {
                s.spec.as_ref().is_some_and(|spec| {
                    spec.type_.as_deref() == Some("LoadBalancer")
                        && spec.load_balancer_class.is_none()
                })
            })
            .map(|s| {
                let ns = s.metadata.namespace.as_deref().unwrap_or_default();
                format!("{ns}/{}", s.metadata.name.as_deref().unwrap_or_default())
            })
            .collect();
        assert!(
            foreign.is_empty(),
            "the real cluster has LoadBalancer Services of others ({foreign:?}), which the \
             soak's CCM would take over: delete them, or wait for the tests that made them"
        );
    }

    /// Removes what an earlier run left (the namespace, its finalizers, its Nodes) and makes
    /// the namespace.
    async fn fresh_namespace(&self) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let nodes: Api<Node> = Api::all(self.client.clone());
        let left = nodes.list(&ListParams::default()).await.expect("list Nodes");
        for node in left.items.iter().filter_map(|n| n.metadata.name.as_deref()) {
            if is_soak_node(node) {
                journal::note(&format!("deleting Node {node}, left by an earlier soak"));
                let _ = nodes.delete(node, &DeleteParams::default()).await;
            }
        }
        let deadline = Instant::now() + Duration::from_secs(180);
        while namespaces.get_opt(NAMESPACE).await.expect("get the namespace").is_some() {
            journal::note(&format!("namespace {NAMESPACE} exists (an earlier run's): deleting it"));
            self.remove_finalizers();
            let _ = namespaces.delete(NAMESPACE, &DeleteParams::default()).await;
            assert!(Instant::now() < deadline, "namespace {NAMESPACE} was not gone in 180 s");
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let object = json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": NAMESPACE}});
        let object = serde_json::from_value(object).expect("a Namespace");
        namespaces.create(&PostParams::default(), &object).await.expect("create namespace soak");
    }

    /// Keeps `nodes` Ready from now on (their Leases renewed every 10 s) until [`RealKube::finish`].
    pub(crate) fn heartbeat(&self, nodes: &[String]) {
        let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
        let beat = Heartbeat::start(&self.stack, &names);
        *self.heartbeat.lock().unwrap_or_else(PoisonError::into_inner) = Some(beat);
    }

    /// Removes what the soak made: the Leases renewed, every finalizer left on the namespace's
    /// Services (the fake is just dropped; the real server keeps them), the namespace, the
    /// Nodes. With kubectl: it also runs while a panic unwinds. Idempotent.
    pub(crate) fn finish(&self) {
        if self.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        drop(self.heartbeat.lock().unwrap_or_else(PoisonError::into_inner).take());
        self.remove_finalizers();
        self.kubectl(&["delete", "namespace", NAMESPACE, "--wait=false", "--ignore-not-found"]);
        let nodes: Vec<String> =
            self.nodes.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect();
        if !nodes.is_empty() {
            let mut args = vec!["delete", "node", "--ignore-not-found", "--wait=false"];
            args.extend(nodes.iter().map(String::as_str));
            self.kubectl(&args);
        }
        journal::note(&format!(
            "the real API server: namespace {NAMESPACE} and {} Nodes deleted",
            nodes.len()
        ));
    }

    /// Clears the finalizers of every Service in the namespace (a CCM that is gone cannot).
    fn remove_finalizers(&self) {
        let Some(out) = self.kubectl(&["get", "services", "-n", NAMESPACE, "-o", "json"]) else {
            return;
        };
        let list: Value = serde_json::from_str(&out).unwrap_or_default();
        for service in list["items"].as_array().into_iter().flatten() {
            let finalizers = &service["metadata"]["finalizers"];
            if finalizers.as_array().is_none_or(Vec::is_empty) {
                continue;
            }
            let name = service["metadata"]["name"].as_str().unwrap_or_default();
            journal::note(&format!("Service {name}: finalizers {finalizers} removed"));
            let patch = r#"{"metadata":{"finalizers":null}}"#;
            self.kubectl(&["patch", "service", name, "-n", NAMESPACE, "--type=merge", "-p", patch]);
        }
    }

    /// kubectl as admin; its stdout, or `None` (noted) when it failed.
    fn kubectl(&self, args: &[&str]) -> Option<String> {
        let mut cmd = self.stack.kubectl();
        cmd.args(args);
        let out = testkit::cluster::run_bounded(cmd, None);
        if out.status.success() {
            return Some(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let err = String::from_utf8_lossy(&out.stderr);
        journal::note(&format!("kubectl {}: {}", args.join(" "), err.trim()));
        None
    }

    /// Runs a request of the kube client to its end from synchronous code (the soak's runtime
    /// has several threads: this one steps aside while it waits).
    fn block<T>(&self, request: impl Future<Output = T>) -> T {
        tokio::task::block_in_place(|| self.handle.block_on(request))
    }

    fn api(&self, plural: &str, namespace: &str) -> Api<DynamicObject> {
        let resource = match plural {
            "services" => ApiResource::erase::<Service>(&()),
            "nodes" => ApiResource::erase::<Node>(&()),
            other => panic!("the soak's cluster has no {other}"),
        };
        match namespace {
            "" => Api::all_with(self.client.clone(), &resource),
            ns => Api::namespaced_with(self.client.clone(), ns, &resource),
        }
    }

    /// A write; a Service whose nodePort another Service of the cluster holds is written again
    /// without nodePorts (the server picks them; World reads them back from the answer).
    fn write(
        &self,
        what: &str,
        mut body: Value,
        send: impl Fn(Value) -> Result<DynamicObject, kube::Error>,
    ) -> Value {
        let result = match send(body.clone()) {
            Err(kube::Error::Api(s))
                if s.code == 422 && s.message.contains("already allocated") =>
            {
                journal::note(&format!("{what}: {}; the server picks the nodePorts", s.message));
                strip_node_ports(&mut body);
                send(body)
            }
            other => other,
        };
        let object = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        serde_json::to_value(object).expect("an object serializes")
    }

    fn patch_status(&self, plural: &str, namespace: &str, name: &str, status: Value) -> Value {
        let api = self.api(plural, namespace);
        let patch = json!({"status": status});
        let params = PatchParams::default();
        let stored = self.block(api.patch_status(name, &params, &Patch::Merge(&patch)));
        let stored =
            stored.unwrap_or_else(|e| panic!("status of {plural} {namespace}/{name}: {e}"));
        serde_json::to_value(stored).expect("an object serializes")
    }
}

impl RealKube {
    /// Notes, once each, the Nodes in `names` that are neither the stack's nor the soak's:
    /// another user of the cluster, whose Nodes the soak's CCM may change or delete.
    fn note_foreign<'a>(&self, names: impl Iterator<Item = &'a str>) {
        let made = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut foreign = self.foreign.lock().unwrap_or_else(PoisonError::into_inner);
        for name in names {
            if name != self.stack["KUBE_NODE_NAME"]
                && !made.contains(name)
                && foreign.insert(name.to_owned())
            {
                journal::note(&format!(
                    "WARNING: Node {name} is not the soak's: another user of the cluster, whose \
                     Nodes the soak's CCM may change or delete (when NotReady)"
                ));
            }
        }
    }
}

impl Drop for RealKube {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Cluster for RealKube {
    fn create(&self, plural: &str, namespace: &str, mut object: Value) -> Value {
        let status = object.as_object_mut().and_then(|o| o.remove("status"));
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let name = name.to_owned();
        if plural == "nodes" {
            self.nodes.lock().unwrap_or_else(PoisonError::into_inner).insert(name.clone());
        }
        let api = self.api(plural, namespace);
        let what = format!("create {plural} {namespace}/{name}");
        let stored = self.write(&what, object, |body| {
            let object: DynamicObject = serde_json::from_value(body).expect("an object");
            self.block(api.create(&PostParams::default(), &object))
        });
        match status {
            Some(status) if status.as_object().is_some_and(|s| !s.is_empty()) => {
                self.patch_status(plural, namespace, &name, status)
            }
            _ => stored,
        }
    }

    fn patch(&self, plural: &str, namespace: &str, name: &str, mut patch: Value) -> Value {
        let status = patch.as_object_mut().and_then(|o| o.remove("status"));
        let mut stored = None;
        if patch.as_object().is_some_and(|p| !p.is_empty()) {
            let api = self.api(plural, namespace);
            let what = format!("patch {plural} {namespace}/{name}");
            stored = Some(self.write(&what, patch, |body| {
                let params = PatchParams::default();
                self.block(api.patch(name, &params, &Patch::Merge(&body)))
            }));
        }
        match status {
            Some(status) => self.patch_status(plural, namespace, name, status),
            None => stored.unwrap_or_else(|| panic!("an empty patch of {plural} {name}")),
        }
    }

    fn get(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let got = self.block(self.api(plural, namespace).get_opt(name));
        let got = got.unwrap_or_else(|e| panic!("get {plural} {namespace}/{name}: {e}"));
        got.map(|o| serde_json::to_value(o).expect("an object serializes"))
    }

    fn delete(&self, plural: &str, namespace: &str, name: &str) {
        match self.block(self.api(plural, namespace).delete(name, &DeleteParams::default())) {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => panic!("delete {plural} {namespace}/{name}: {e}"),
        }
    }

    fn list(&self, plural: &str) -> Vec<Value> {
        let list = self.block(self.api(plural, "").list(&ListParams::default()));
        let list = list.unwrap_or_else(|e| panic!("list {plural}: {e}"));
        if plural == "nodes" {
            self.note_foreign(list.items.iter().filter_map(|n| n.metadata.name.as_deref()));
        }
        list.items.into_iter().map(|o| serde_json::to_value(o).expect("serializes")).collect()
    }
}

/// The soak's Node names: `soak<pid>-node-NNN` (main.rs names the servers so).
fn is_soak_node(name: &str) -> bool {
    name.strip_prefix("soak").and_then(|rest| rest.split_once("-node-")).is_some_and(|(pid, n)| {
        !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Removes every `nodePort` of a Service (object or merge patch), so that the server picks.
fn strip_node_ports(body: &mut Value) {
    let ports = body.pointer_mut("/spec/ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten() {
        if let Some(port) = port.as_object_mut() {
            port.remove("nodePort");
        }
    }
}
