//! An edit of the cloud config reaching the running CCM that `ccm-assets operator` deploys
//! (issue 39): the real Kubernetes of scripts/kube-up.sh runs the operator's Deployment from
//! the project's image (scripts/image.sh) against the real OpenStack of
//! scripts/openstack-up.sh, set up as tests/it/real_kube_operator_ccm.rs sets it up (a cloud
//! node with a real server behind it; what a scheduler and kube-proxy would add, under another
//! field manager). One Service of type LoadBalancer is converged on the stack's Octavia first.
//!
//! `CCM_KUBE_ENV=… CCM_OPENSTACK_ENV=… cargo bench --bench operator_ccm`
//! (scripts/bench.sh --operator-ccm starts either stack when none is named): E edits of
//! `[LoadBalancer] lb-method` in `openshift-config/cloud-provider-config` (default 50;
//! `CCM_BENCH_EDITS`), LEAST_CONNECTIONS and ROUND_ROBIN in turn. Each is timed from the
//! edit's write returning to the CCM's first OpenStack request that uses the new value: the
//! Service's `EnsuringLoadBalancer` Event, which the CCM writes just before that request (the
//! pool's update), as a kube-rs watch delivers it. Nothing else makes the CCM touch the
//! converged Service meanwhile, and Octavia is checked to have the new algorithm after each
//! edit. kube-rs's event recorder folds it into the Service's first `EnsuringLoadBalancer`
//! Event as a series (its count raised, its note the first one's), so any delivery counts,
//! whatever its message. The path in between: the operator
//! writes `cloud-conf` and annotates the CCM's pod, the kubelet refreshes the volume, the CCM
//! reloads it and resyncs the Service. Before the next edit, the pool has the new algorithm
//! in Octavia and the load balancer is ACTIVE again. p50, p99, min and max.
//!
//! Everything the run made is deleted at the end, after a panic too. Prints the figures; a
//! release build also writes `target/bench/operator_ccm.json`.

#[path = "operator/setup.rs"]
#[allow(dead_code)] // the figures of benches/operator.rs that this one does not take (RSS)
mod setup;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Event;
use kube::api::Api;
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::{Value, json};
use testkit::ccm_pod::{self, CloudNode, running_pod};
use testkit::create::CreateManifests;
use testkit::image::Image;
use testkit::kube::is_tainted;
use testkit::kube_stack::KubeStack;
use testkit::stack::StackEnv;
use testkit::wait::until;

use setup::{CCM_NAMESPACE, CONFIG_NAMESPACE, Cluster, DEPLOYMENT, Operator, millis, percentile};

/// The Service whose load balancer shows each edit.
const SERVICE: &str = "bench-edit";

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    for var in [testkit::kube_stack::VAR, testkit::stack::VAR] {
        if std::env::var_os(var).is_none() {
            eprintln!(
                "operator_ccm: needs the real Kubernetes and OpenStack: run scripts/bench.sh \
                 --operator-ccm (or set CCM_KUBE_ENV and CCM_OPENSTACK_ENV to the env files of \
                 scripts/kube-up.sh and scripts/openstack-up.sh)"
            );
            std::process::exit(2);
        }
    }
    let edits = setup::env_number("CCM_BENCH_EDITS", 50).max(1);
    let bin = std::env::var_os("CCM_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ccm-assets")), PathBuf::from);
    let figures = measure(&bin, edits);
    let text = serde_json::to_string_pretty(&figures).expect("JSON") + "\n";
    print!("{text}");
    if !cfg!(debug_assertions) {
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench");
        std::fs::create_dir_all(&out).expect("target/bench");
        std::fs::write(out.join("operator_ccm.json"), text).expect("write operator_ccm.json");
    }
}

fn measure(bin: &Path, edits: usize) -> Value {
    let cloud = StackEnv::load();
    let kube = KubeStack::load();
    let image = Image::built();
    image.import(&kube);
    // Dropped in reverse order: the Service (and so its load balancer) first, the node last.
    let node = CloudNode::register(&cloud, &kube);
    let source = tempfile::tempdir().expect("tempdir");
    testkit::install_config::write(
        source.path(),
        &testkit::install_config::openstack(
            &cloud["OPENSTACK_CLOUD_APPCRED"],
            &cloud["OPENSTACK_EXTERNAL_NETWORK"],
        ),
    );
    let clouds = PathBuf::from(&cloud["OPENSTACK_CLOUDS_YAML"]);
    let cluster =
        Cluster::new(bin, source.path(), &CreateManifests::online(), Some(&clouds), |i| {
            i["status"]["controlPlaneTopology"] = json!("SingleReplica");
        });
    let operator =
        Operator::start(bin, Path::new(&kube["KUBE_ADMIN_KUBECONFIG"]), cluster.dir.path());
    let log = || format!("{}\n{}", ccm_pod::log(&kube), operator.log());

    let deployment = until(Duration::from_secs(60), "the operator's Deployment", &log, || {
        kube.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT)
    });
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    ccm_pod::pin(&kube, &node.name, container["name"].as_str().expect("a container name"));
    let pod = until(Duration::from_secs(120), "the CCM's pod Running", &log, || {
        running_pod(&kube, &node.name)
    });
    until(Duration::from_secs(120), "the node initialized", &log, || {
        kube.get("node", None, &node.name).filter(|n| !is_tainted(n))
    });

    let namespace = kube.namespace("bench-ccm");
    let service = Service::create(&kube, &cloud, &namespace.name);
    until(Duration::from_secs(300), "the Service's ingress", &log, || {
        let svc = kube.get("service", Some(&namespace.name), SERVICE)?;
        svc.pointer("/status/loadBalancer/ingress/0").cloned()
    });
    let lb = until(Duration::from_secs(60), "its load balancer ACTIVE", &log, || {
        service.load_balancer().filter(|lb| lb["provisioning_status"] == "ACTIVE")
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let kubeconfig = PathBuf::from(&kube["KUBE_ADMIN_KUBECONFIG"]);
    let announcements = runtime.block_on(watch_events(&kubeconfig, &namespace.name));
    let mut latencies = Vec::with_capacity(edits);
    for i in 0..edits {
        let method = ["LEAST_CONNECTIONS", "ROUND_ROBIN"][i % 2];
        while announcements.try_recv().is_ok() {}
        edit_config(&kube, method);
        let edited = Instant::now();
        let Ok(at) = announcements.recv_timeout(Duration::from_secs(60)) else {
            panic!("edit {i} ({method}): no announcement within 60 s\n{}", log());
        };
        latencies.push(at.saturating_duration_since(edited).as_secs_f64());
        until(Duration::from_secs(60), "the pool updated and ACTIVE", &log, || {
            service.load_balancer().filter(|lb| {
                lb["provisioning_status"] == "ACTIVE"
                    && lb["pools"]
                        .as_array()
                        .is_some_and(|pools| pools.iter().all(|p| p["lb_algorithm"] == method))
            })
        });
    }
    latencies.sort_by(f64::total_cmp);
    let now = running_pod(&kube, &node.name).expect("the CCM's pod still Running");
    let restarts = |p: &Value| p["status"]["containerStatuses"][0]["restartCount"].clone();
    assert_eq!(now["metadata"]["uid"], pod["metadata"]["uid"], "the CCM's pod was replaced");
    assert_eq!(restarts(&now), restarts(&pod), "the CCM restarted\n{}", log());
    drop(runtime);
    drop(service);
    drop(namespace);
    drop(operator);
    drop(cluster);
    json!({
        "binary": bin.display().to_string(),
        "image": image.name,
        "load_balancer": lb["id"],
        "edits": edits,
        "edit_to_first_request_with_the_new_value_ms": {
            "p50": millis(percentile(&latencies, 0.5)),
            "p99": millis(percentile(&latencies, 0.99)),
            "min": millis(latencies[0]),
            "max": millis(*latencies.last().expect("an edit")),
        },
        "ccm_pod_restarts": restarts(&now),
    })
}

/// The Service of type LoadBalancer in `namespace`; on drop it is deleted and waited for, so
/// that its CCM deletes its load balancer while it runs (a load balancer left is deleted).
struct Service {
    stack: KubeStack,
    cloud: StackEnv,
    namespace: String,
}

impl Service {
    fn create(kube: &KubeStack, cloud: &StackEnv, namespace: &str) -> Service {
        let service = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": namespace},
            "spec": {"type": "LoadBalancer", "selector": {"app": SERVICE},
                     "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]}});
        kube.create(&service.to_string());
        Service { stack: kube.clone(), cloud: cloud.clone(), namespace: namespace.to_owned() }
    }

    /// Its load balancer as `openstack_scene.py loadbalancer-list` has it (the name ends in
    /// `_<namespace>_<name>`), if there is one.
    fn load_balancer(&self) -> Option<Value> {
        let out = self.cloud.scene_command().arg("loadbalancer-list").output().ok()?;
        let list: Value = serde_json::from_slice(&out.stdout).ok()?;
        let suffix = format!("_{}_{SERVICE}", self.namespace);
        let mut found = list
            .as_array()?
            .iter()
            .filter(|lb| lb["name"].as_str().is_some_and(|n| n.ends_with(&suffix)));
        found.next().cloned()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let cmd = [
            "delete",
            "service",
            "-n",
            &self.namespace,
            SERVICE,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=120s",
        ];
        let out = self.stack.kubectl().args(cmd).output();
        if !out.is_ok_and(|o| o.status.success()) {
            eprintln!("operator_ccm: the Service was not deleted within 120 s");
        }
        if let Some(lb) = self.load_balancer() {
            let id = lb["id"].as_str().unwrap_or_default();
            eprintln!("operator_ccm: its load balancer {id} is left; deleting it");
            let _ = self.cloud.scene_command().args(["loadbalancer-delete", id]).status();
        }
    }
}

/// Sets `[LoadBalancer] lb-method` in `openshift-config/cloud-provider-config`.
fn edit_config(kube: &KubeStack, method: &str) {
    let map = kube
        .get("configmap", Some(CONFIG_NAMESPACE), "cloud-provider-config")
        .expect("cloud-provider-config");
    let config = ccm_pod::with_lb_method(map["data"]["config"].as_str().expect("config"), method);
    let patch = json!({"data": {"config": config}}).to_string();
    let args = [
        "patch",
        "configmap",
        "-n",
        CONFIG_NAMESPACE,
        "cloud-provider-config",
        "--type=merge",
        "-p",
        &patch,
    ];
    kube.run(&args, None);
}

/// When a kube-rs watch delivered an Event of the Service whose reason is
/// `EnsuringLoadBalancer`, created or updated (a series); returns once the watch has listed.
async fn watch_events(kubeconfig: &Path, namespace: &str) -> mpsc::Receiver<Instant> {
    let client = kube_support::client::client(Some(kubeconfig)).await.expect("a client");
    let api: Api<Event> = Api::namespaced(client, namespace);
    let fields = format!("involvedObject.name={SERVICE},reason=EnsuringLoadBalancer");
    let config = watcher::Config::default().fields(&fields);
    let (sender, receiver) = mpsc::channel();
    let (listed, ready) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        while let Some(event) = events.next().await {
            let at = Instant::now();
            match event {
                Ok(watcher::Event::InitDone) => {
                    listed.take().map(|l| l.send(()));
                }
                Ok(watcher::Event::Apply(_)) if sender.send(at).is_err() => return,
                _ => {}
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(30), ready)
        .await
        .expect("the Event watch listed within 30 s")
        .expect("the Event watch runs");
    receiver
}
