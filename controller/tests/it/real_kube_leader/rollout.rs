//! `kubectl rollout restart` of the generated in-cluster CCM (issue 38 item 4), on the real
//! Kubernetes of scripts/kube-up.sh: the OpenStack example's Deployment (in_cluster.rs's
//! `Generated`) with its two replicas run by the kubelet from the project's image
//! (scripts/image.sh), against the real OpenStack stack. The rollout replaces both pods, the
//! leader's first; the Lease changes holder only through a release (never by expiry), with a
//! renew gap of at most one retry period, and no two pods ever write it as holders in turn.
//! In the nextest group `real-kube-ccm` (its CCMs act on the shared cluster).
//!
//! The cluster has one node and no kube-scheduler, so the test adapts the pod template to it,
//! and to nothing else: `nodeName` pins the pods (the kubelet admits them itself; the
//! Deployment and ReplicaSet controllers, which carry out the rollout, are
//! kube-controller-manager's), without the control-plane `nodeSelector` and the one-per-node
//! anti-affinity that one node cannot meet; `--secure-port=0` with no `ports` and no liveness
//! probe, since two host-network pods on one node cannot both take port 10258 (the kubelet
//! refuses the second); and `KUBERNETES_SERVICE_HOST`/`_PORT` naming the API server, since no
//! kube-proxy serves the `kubernetes` Service's cluster IP. The rest (image, arguments, leader
//! election at its defaults, mounts, security context, strategy) is as generated. The leader's
//! pod gets a `pod-deletion-cost` below the other's, so that the ReplicaSet controller, whose
//! choice the order otherwise is, stops the leader first.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::{Value, json};
use testkit::kube_stack::KubeStack;
use testkit::stack::StackEnv;

use crate::in_cluster::{Generated, OnDrop};
use testkit::image::Image;

/// The generated Deployment's name.
const NAME: &str = "openstack-cloud-controller-manager";
/// Its Lease (`--leader-elect-resource-name`).
const LEASE: &str = "cloud-controller-manager";
/// `--leader-elect-retry-period` when the Deployment does not set it (client-go's default).
const DEFAULT_RETRY: Duration = Duration::from_secs(2);
/// What a renew gap may hold beyond the retry period: the candidate's sleep is exactly one
/// retry period; the rest is its read and write of the Lease and the old leader's write.
const REQUESTS: Duration = Duration::from_millis(500);
/// Long enough for two pods to start, the rollout to replace them, and a lease duration.
const WAIT: Duration = Duration::from_secs(180);

/// One version of the Lease as the watch delivered it.
#[derive(Debug, Clone)]
struct Version {
    holder: Option<String>,
    renewed: jiff::Timestamp,
    transitions: i32,
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn a_rollout_restart_hands_the_lease_over_with_a_gap_of_at_most_one_retry_period() {
    let env = StackEnv::load();
    let generated = Generated::apply(&env, &env["OPENSTACK_CLOUD_APPCRED"]).await;
    let kube = generated.kube.clone();
    let ns = generated.ns.name.clone();
    let image = Image::built();
    image.import(&kube);

    let deployment = for_one_node(&generated.deployment, &kube);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], image.name.as_str(), "the generated image is the built one");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(
        deployment["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}})
    );
    let retry = retry_period(container);
    let mut delete = kube.kubectl();
    delete.args(["delete", "deployment", NAME, "-n", &ns, "--ignore-not-found"]);
    delete.args(["--cascade=foreground", "--wait=true", "--timeout=50s"]);
    let _delete = OnDrop(vec![delete]);
    let audit = kube.audit();
    kube.create(&deployment.to_string());

    // Both replicas run our image; one holds the Lease.
    let first = wait(&kube, &ns, "two Ready pods and a holder", || {
        let pods = ready_pods(&kube, &ns);
        let holder =
            kube.get("lease", Some(&ns), LEASE)?["spec"]["holderIdentity"].as_str()?.to_owned();
        (pods.len() == 2).then_some((pods, holder))
    })
    .await;
    for pod in &first.0 {
        let id = pod["status"]["containerStatuses"][0]["imageID"].as_str().unwrap_or_default();
        assert!(id.ends_with(&image.id), "{id} is not our image {}", image.id);
    }
    let old_pods = names(&first.0);
    let versions = watch_lease(&kube, &ns).await;
    versions.renewed(2).await;
    // The ReplicaSet controller deletes the leader's pod first (the order is otherwise its
    // choice): the Lease then goes to the old candidate or to a new pod, whichever asks first,
    // and, if to the old one, once more when that one goes.
    let leader = last_lease_writer(&audit.events(), &generated.user(), &ns).unwrap();
    let cost = "controller.kubernetes.io/pod-deletion-cost=-1";
    kube.run(&["annotate", "pod", &leader, "-n", &ns, cost], None);

    let restarted = Instant::now();
    kube.run(&["rollout", "restart", &format!("deployment/{NAME}"), "-n", &ns], None);
    let new_pods = wait(&kube, &ns, "the rollout done and a new pod holding the Lease", || {
        let d = kube.get("deployment", Some(&ns), NAME)?;
        let status = &d["status"];
        let done = status["observedGeneration"] == d["metadata"]["generation"]
            && status["updatedReplicas"] == 2
            && status["availableReplicas"] == 2
            && status["replicas"] == 2;
        let pods = ready_pods(&kube, &ns);
        let fresh = pods.len() == 2 && names(&pods).iter().all(|p| !old_pods.contains(p));
        let writer = last_lease_writer(&audit.events(), &generated.user(), &ns)?;
        (done && fresh && names(&pods).contains(&writer)).then(|| names(&pods))
    })
    .await;
    eprintln!("FIGURE rollout restart done in {:?}", restarted.elapsed());
    versions.renewed(2).await;
    let versions = versions.take();

    let holders = holders(&versions);
    let max = renew_gaps(&versions, retry);
    eprintln!(
        "FIGURE largest renew gap: {max:?} (retry period {retry:?}, {} versions)",
        versions.len()
    );

    // The audit log: every write of the Lease came from a pod of the Deployment, and the pods
    // took turns: none wrote again once another had (never two leaders), the leader's first.
    let turns = turns(&lease_writes(&audit.events(), &generated.user(), &ns));
    assert_eq!(turns.len(), holders.len(), "one writer per holder: {turns:?} {holders:?}");
    assert_eq!(turns[0], leader, "{turns:?}");
    assert!(old_pods.contains(&leader), "{leader} {old_pods:?}");
    assert!(new_pods.contains(&turns[turns.len() - 1]), "{turns:?} {new_pods:?}");
}

/// The holders of the Lease, in order; each change went through a release (a version with no
/// holder), never by expiry (one holder after another), and no holder came back.
fn holders(versions: &[Version]) -> Vec<String> {
    let mut changes: Vec<Option<&str>> = Vec::new();
    for v in versions {
        if changes.last() != Some(&v.holder.as_deref()) {
            changes.push(v.holder.as_deref());
        }
    }
    eprintln!("FIGURE holders in order: {changes:?}");
    for pair in changes.windows(2) {
        assert!(pair[0].is_none() || pair[1].is_none(), "taken without a release: {changes:?}");
    }
    assert!(changes.last().is_some_and(Option::is_some), "released at the end: {changes:?}");
    let holders: Vec<String> = changes.iter().flatten().map(|h| (*h).to_owned()).collect();
    assert!(holders.len() >= 2, "the holder never changed: {versions:#?}");
    assert!(all_differ(&holders), "a holder came back: {changes:?}");
    let transitions: Vec<i32> = versions.iter().map(|v| v.transitions).collect();
    assert!(transitions.windows(2).all(|t| t[0] <= t[1]), "{transitions:?}");
    assert!(transitions.last() > transitions.first(), "no transition counted: {transitions:?}");
    holders
}

/// The renew gap, from each version of the Lease to the next (a holder's renewal, its release,
/// a candidate's acquisition, each stamping `renewTime`), is at most one retry period (and
/// [`REQUESTS`]); the largest.
fn renew_gaps(versions: &[Version], retry: Duration) -> Duration {
    let mut max = Duration::ZERO;
    for pair in versions.windows(2) {
        let gap = pair[1].renewed.duration_since(pair[0].renewed).unsigned_abs();
        if pair[0].holder.is_none() {
            eprintln!("FIGURE hand-over: released, taken {gap:?} later by {:?}", pair[1].holder);
        }
        assert!(gap <= retry + REQUESTS, "a renew gap of {gap:?} (retry {retry:?}): {pair:#?}");
        max = max.max(gap);
    }
    max
}

/// The pods whose writes of the Lease succeeded, one entry per turn; each a pod of the
/// Deployment, none taking a second turn. A refused write can only be a candidate's that lost
/// a race to create or take the Lease (409).
fn turns(writes: &[(String, String, u64)]) -> Vec<String> {
    eprintln!("FIGURE Lease writes (pod, verb, code): {writes:?}");
    assert!(writes.iter().all(|(_, _, code)| *code < 300 || *code == 409), "{writes:?}");
    let mut turns: Vec<String> =
        writes.iter().filter(|(_, _, code)| *code < 300).map(|(pod, _, _)| pod.clone()).collect();
    turns.dedup();
    assert!(turns.iter().all(|p| p.starts_with(&format!("{NAME}-"))), "{writes:?}");
    assert!(all_differ(&turns), "two pods wrote the Lease in turn: {turns:?}");
    turns
}

fn all_differ(items: &[String]) -> bool {
    let set: std::collections::BTreeSet<&String> = items.iter().collect();
    set.len() == items.len()
}

/// The generated Deployment made runnable on this one-node cluster (module doc).
fn for_one_node(generated: &Value, kube: &KubeStack) -> Value {
    let mut deployment = generated.clone();
    let pod = &mut deployment["spec"]["template"]["spec"];
    pod["nodeName"] = json!(kube["KUBE_NODE_NAME"]);
    let pod = pod.as_object_mut().unwrap();
    pod.remove("nodeSelector").expect("a nodeSelector");
    pod.remove("affinity").expect("an anti-affinity");
    let container = &mut deployment["spec"]["template"]["spec"]["containers"][0];
    for arg in container["args"].as_array_mut().unwrap() {
        if arg.as_str().is_some_and(|a| a.starts_with("--secure-port=")) {
            *arg = json!("--secure-port=0");
        }
    }
    let api = kube.url().trim_start_matches("https://").to_owned();
    let (host, port) = api.split_once(':').unwrap();
    if container["env"].is_null() {
        container["env"] = json!([]);
    }
    container["env"].as_array_mut().unwrap().extend([
        json!({"name": "KUBERNETES_SERVICE_HOST", "value": host}),
        json!({"name": "KUBERNETES_SERVICE_PORT", "value": port}),
    ]);
    let container = container.as_object_mut().unwrap();
    container.remove("ports").expect("ports");
    container.remove("livenessProbe").expect("a liveness probe");
    deployment
}

/// `--leader-elect-retry-period` of the container, or client-go's default.
fn retry_period(container: &Value) -> Duration {
    let args = container["args"].as_array().unwrap().iter().filter_map(Value::as_str);
    let given = args.filter_map(|a| a.strip_prefix("--leader-elect-retry-period=")).next();
    given.map_or(DEFAULT_RETRY, |v| {
        Duration::from_secs(v.trim_end_matches('s').parse().expect("seconds"))
    })
}

/// The Deployment's pods that are Ready and not being deleted.
fn ready_pods(kube: &KubeStack, ns: &str) -> Vec<Value> {
    let list =
        kube.run(&["get", "pods", "-n", ns, "-l", &format!("app={NAME}"), "-o", "json"], None);
    let list: Value = serde_json::from_str(&list).unwrap();
    let ready = |p: &Value| {
        p["metadata"]["deletionTimestamp"].is_null()
            && p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
    };
    list["items"].as_array().unwrap().iter().filter(|p| ready(p)).cloned().collect()
}

fn names(pods: &[Value]) -> Vec<String> {
    pods.iter().map(|p| p["metadata"]["name"].as_str().unwrap().to_owned()).collect()
}

/// The Lease's successful and refused writes (create, update) by the ServiceAccount `user`,
/// in order: the writing pod (the name its bound token carries), the verb, the response code.
fn lease_writes(events: &[Value], user: &str, ns: &str) -> Vec<(String, String, u64)> {
    events
        .iter()
        .filter(|e| e["user"]["username"] == user && e["objectRef"]["namespace"] == ns)
        .filter(|e| e["objectRef"]["resource"] == "leases" && e["objectRef"]["name"] == LEASE)
        .filter(|e| ["create", "update"].contains(&e["verb"].as_str().unwrap_or_default()))
        .map(|e| {
            let pod = e["user"]["extra"]["authentication.kubernetes.io/pod-name"][0]
                .as_str()
                .unwrap_or("(no pod)")
                .to_owned();
            let verb = e["verb"].as_str().unwrap_or_default().to_owned();
            (pod, verb, e["responseStatus"]["code"].as_u64().unwrap_or_default())
        })
        .collect()
}

/// The pod that last wrote the Lease successfully.
fn last_lease_writer(events: &[Value], user: &str, ns: &str) -> Option<String> {
    let writes = lease_writes(events, user, ns);
    writes.into_iter().rev().find(|(_, _, code)| *code < 300).map(|(pod, _, _)| pod)
}

/// Polls `probe` every half second for up to [`WAIT`]; a panic with the pods' state on timeout.
async fn wait<T>(kube: &KubeStack, ns: &str, what: &str, probe: impl Fn() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        if start.elapsed() > WAIT {
            let pods = kube.run(&["get", "pods", "-n", ns, "-o", "wide"], None);
            let events = kube.run(&["get", "events", "-n", ns], None);
            panic!("not within {WAIT:?}: {what}\n{pods}\n{events}\n{}", logs(kube, ns));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The last lines of each pod's log.
fn logs(kube: &KubeStack, ns: &str) -> String {
    let mut cmd = kube.kubectl();
    cmd.args(["logs", "-n", ns, "-l", &format!("app={NAME}"), "--tail=30", "--prefix"]);
    let out = testkit::cluster::run_bounded(cmd, None);
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Every version of the Lease from now on, as a watch delivers them (a task; `take` them).
struct Versions(std::sync::Arc<std::sync::Mutex<Vec<Version>>>, tokio::task::JoinHandle<()>);

impl Versions {
    /// Waits (for up to [`WAIT`]) until the last holder has renewed the Lease `n` times since
    /// the watch saw it take the Lease (or since the watch began).
    async fn renewed(&self, n: usize) {
        let start = Instant::now();
        loop {
            let seen = self.0.lock().unwrap().clone();
            let last = seen.last().and_then(|v| v.holder.clone());
            let run = seen.iter().rev().take_while(|v| v.holder == last).count();
            if last.is_some() && run > n {
                return;
            }
            assert!(start.elapsed() < WAIT, "not {n} renewals within {WAIT:?}: {seen:#?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// What the watch saw; it stops.
    fn take(self) -> Vec<Version> {
        self.1.abort();
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

async fn watch_lease(kube: &KubeStack, ns: &str) -> Versions {
    let file = kube::config::Kubeconfig::read_from(&kube["KUBE_ADMIN_KUBECONFIG"]).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(file, &options).await.unwrap();
    let leases: Api<Lease> = Api::namespaced(kube::Client::try_from(config).unwrap(), ns);
    let lease = leases.get(LEASE).await.unwrap();
    let version = |lease: &Lease| {
        let spec = lease.spec.clone().unwrap_or_default();
        Version {
            holder: spec.holder_identity.filter(|h| !h.is_empty()),
            renewed: spec.renew_time.expect("a renewTime").0,
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    };
    let seen = std::sync::Arc::new(std::sync::Mutex::new(vec![version(&lease)]));
    let mut rv = lease.metadata.resource_version.unwrap();
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let params = WatchParams::default().fields(&format!("metadata.name={LEASE}")).timeout(290);
        loop {
            let stream = leases.watch(&params, &rv).await.expect("the Lease watch");
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event.expect("a watch event") {
                    WatchEvent::Modified(lease) | WatchEvent::Added(lease) => {
                        rv = lease.metadata.resource_version.clone().unwrap();
                        out.lock().unwrap().push(version(&lease));
                    }
                    other => panic!("the Lease watch: {other:?}"),
                }
            }
        }
    });
    Versions(seen, task)
}
