//! `ccm-assets operator` against the real Kubernetes of scripts/kube-up.sh (issue 39), with
//! OpenShift's config kinds from our CRDs (tests/crds): what `create manifests` writes for the
//! OpenStack example is put in the cluster as an installer would (Infrastructure with its
//! status, cloud-provider-config, the credentials Secret, Network, Proxy), the operator runs as
//! a process of the test, and every claim is checked on the API server.
//!
//! The objects have fixed names (Infrastructure `cluster`, the CCM's namespace), so the tests
//! are in the `real-kube-ccm` group (one at a time) and each removes what it made.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::kube_stack::KubeStack;

use crate::platforms::pinned;
use crate::support::Test;

pub(crate) const CCM_NAMESPACE: &str = "openshift-cloud-controller-manager";
const OPERATOR_NAMESPACE: &str = "openshift-cloud-controller-manager-operator";
pub(crate) const DEPLOYMENT: &str = "openstack-cloud-controller-manager";

/// Polls `probe` every 100 ms until it gives a value, for at most `limit`; panics with `what`.
pub(crate) fn wait_for<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The generated OpenStack example and the cluster it was put in; everything is removed on drop.
pub(crate) struct Installed {
    pub(crate) stack: KubeStack,
    test: Test,
}

impl Installed {
    fn new() -> Installed {
        let test = Test::new().example("openstack").create(&pinned(&[]));
        test.expect(0);
        Installed::from(test, |_| {})
    }

    /// What `test` generated (it ran), put in the cluster; `infra` edits the Infrastructure
    /// (spec and status) first.
    pub(crate) fn from(test: Test, edit_infra: impl FnOnce(&mut Value)) -> Installed {
        let stack = KubeStack::load();
        stack.install_crds();
        let installed = Installed { stack, test };
        installed.clean();
        testkit::installer::install(&installed.stack, &|rel| installed.test.read(rel), edit_infra);
        installed
    }

    /// The generated file `rel` as JSON.
    fn generated(&self, rel: &str) -> Value {
        serde_saphyr::from_str(&self.test.read(rel)).unwrap()
    }

    /// Deletes whatever an earlier run left.
    fn clean(&self) {
        testkit::installer::clean(&self.stack);
    }

    fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.stack.get(resource, namespace, name)
    }

    fn cloud_conf(&self) -> Option<Value> {
        self.get("configmap", Some(CCM_NAMESPACE), "cloud-conf")
    }

    fn condition(&self, kind: &str) -> Option<Value> {
        let operator =
            self.get("clusteroperators.config.openshift.io", None, "cloud-controller-manager")?;
        operator["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind).cloned()
    }

    /// Replaces `[LoadBalancer]`-or-other text of the user's cloud config.
    pub(crate) fn edit_config(&self, edit: impl Fn(&str) -> String) {
        let map = self.get("configmap", Some("openshift-config"), "cloud-provider-config").unwrap();
        let config = edit(map["data"]["config"].as_str().unwrap());
        let patch = json!({"data": {"config": config}}).to_string();
        self.stack.run(
            &[
                "patch",
                "configmap",
                "-n",
                "openshift-config",
                "cloud-provider-config",
                "--type=merge",
                "-p",
                &patch,
            ],
            None,
        );
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.clean();
    }
}

/// A running `ccm-assets operator`, killed on drop; its log in a file.
pub(crate) struct Operator {
    child: Child,
    log: PathBuf,
}

impl Operator {
    /// With the short retry period of a test (the default is CCCMO's 26 s).
    pub(crate) fn start(stack: &KubeStack, dir: &Path, name: &str) -> Operator {
        Operator::start_with(stack, dir, name, &[])
    }

    fn start_with(stack: &KubeStack, dir: &Path, name: &str, args: &[&str]) -> Operator {
        Operator::start_at(Path::new(&stack["KUBE_ADMIN_KUBECONFIG"]), dir, name, args)
    }

    fn start_at(kubeconfig: &Path, dir: &Path, name: &str, args: &[&str]) -> Operator {
        let log = dir.join(format!("{name}.log"));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(env!("CARGO_BIN_EXE_ccm-assets"))
            .args(["operator", "--kubeconfig"])
            .arg(kubeconfig)
            .args(["--health-addr", &format!("127.0.0.1:{port}")])
            .args(["--system-ca-bundle", "/nonexistent", "--leader-elect-retry-period", "1s"])
            .args(args)
            .env_remove("KUBECONFIG")
            .env("POD_NAME", name)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("ccm-assets runs");
        Operator { child, log }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn stop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn real_kube_operator_renders_what_create_manifests_writes_and_keeps_it() {
    let installed = Installed::new();
    // Its own user, so that the audit log tells its requests apart.
    let user = "ccm-assets-operator-test";
    let kubeconfig =
        installed.stack.client_kubeconfig(&installed.test.dir(), user, &["system:masters"]);
    let operator = Operator::start_at(&kubeconfig, &installed.test.dir(), "operator-a", &[]);
    let written =
        wait_for(Duration::from_secs(30), "cloud-conf written", || installed.cloud_conf());
    let generated = installed.generated("manifests/ccm/10-cloud-conf.yaml");
    assert_eq!(
        written["data"],
        generated["data"],
        "cloud-conf differs from create manifests'\n{}",
        operator.log()
    );
    let deployment = wait_for(Duration::from_secs(30), "Deployment applied", || {
        installed.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT)
    });
    let rendered = installed.generated("manifests/ccm/20-deployment.yaml");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["args"],
        rendered["spec"]["template"]["spec"]["containers"][0]["args"]
    );
    wait_for(Duration::from_secs(30), "ClusterOperator Available", || {
        installed.condition("Available").filter(|c| c["status"] == "True")
    });
    assert_eq!(installed.condition("Degraded").unwrap()["status"], "False");

    // Converged, it writes nothing (but its Lease) while nothing changes.
    std::thread::sleep(Duration::from_secs(2));
    let audit = installed.stack.audit();
    std::thread::sleep(Duration::from_secs(10));
    let requests = audit.by(user);
    assert!(
        requests.iter().any(|e| e["verb"] == "update"),
        "the audit log shows its Lease renewals"
    );
    let writes: Vec<String> = requests
        .iter()
        .filter(|e| matches!(e["verb"].as_str(), Some("create" | "update" | "patch" | "delete")))
        .map(testkit::kube_stack::request)
        .filter(|r| r != "update coordination.k8s.io/leases")
        .collect();
    assert_eq!(writes, Vec::<String>::new(), "writes while idle\n{}", operator.log());

    // A [LoadBalancer] edit reaches cloud-conf; the Deployment does not roll.
    let generation = deployment["metadata"]["generation"].clone();
    let template = deployment["spec"]["template"].clone();
    installed.edit_config(|c| {
        c.replace("[LoadBalancer]\n", "[LoadBalancer]\nlb-method = SOURCE_IP_PORT\n")
    });
    wait_for(Duration::from_secs(5), "the edit in cloud-conf", || {
        installed.cloud_conf().filter(|m| {
            m["data"]["cloud.conf"].as_str().unwrap().contains("lb-method = SOURCE_IP_PORT")
        })
    });
    let after = installed.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT).unwrap();
    assert_eq!(
        (after["metadata"]["generation"].clone(), after["spec"]["template"].clone()),
        (generation, template)
    );

    // A non-default secret-name: Degraded at once with the key named; cloud-conf kept.
    let kept = installed.cloud_conf().unwrap()["data"].clone();
    let edited = Instant::now();
    installed.edit_config(|c| c.replace("[Global]\n", "[Global]\nsecret-name = elsewhere\n"));
    let degraded = wait_for(Duration::from_secs(3), "Degraded after a bad edit", || {
        installed.condition("Degraded").filter(|c| c["status"] == "True")
    });
    assert!(edited.elapsed() < Duration::from_secs(2), "Degraded after {:?}", edited.elapsed());
    assert!(degraded["message"].as_str().unwrap().contains("secret-name"), "{degraded}");
    assert_eq!(degraded["reason"], "CloudConfigInvalid");
    assert_eq!(installed.condition("Upgradeable").unwrap()["status"], "False");
    assert_eq!(installed.cloud_conf().unwrap()["data"], kept);
    installed.edit_config(|c| c.replace("secret-name = elsewhere\n", ""));
    wait_for(Duration::from_secs(5), "recovered", || {
        installed.condition("Degraded").filter(|c| c["status"] == "False")
    });

    // Deleted objects come back; a foreign edit of our field is reverted; a foreign label stays.
    for (kind, name) in
        [("deployment", DEPLOYMENT), ("configmap", "cloud-conf"), ("configmap", "ccm-trusted-ca")]
    {
        installed.stack.run(&["delete", kind, "-n", CCM_NAMESPACE, name, "--wait=true"], None);
        wait_for(Duration::from_secs(10), &format!("{kind} {name} back"), || {
            installed.get(kind, Some(CCM_NAMESPACE), name)
        });
    }
    let args_patch =
        json!([{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--v=9"}])
            .to_string();
    installed.stack.run(
        &["patch", "deployment", "-n", CCM_NAMESPACE, DEPLOYMENT, "--type=json", "-p", &args_patch],
        None,
    );
    installed
        .stack
        .run(&["label", "deployment", "-n", CCM_NAMESPACE, DEPLOYMENT, "team=ours"], None);
    let args = rendered["spec"]["template"]["spec"]["containers"][0]["args"].clone();
    let back = wait_for(Duration::from_secs(10), "args reverted", || {
        installed
            .get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT)
            .filter(|d| d["spec"]["template"]["spec"]["containers"][0]["args"] == args)
    });
    assert_eq!(back["metadata"]["labels"]["team"], "ours");
    // SIGTERM releases the Lease: the next operator need not wait for it to expire.
    let mut operator = operator;
    operator.stop();
    let lease = installed.get("lease", Some(OPERATOR_NAMESPACE), "ccm-assets-operator").unwrap();
    assert!(lease["spec"]["holderIdentity"].is_null(), "{lease}\n{}", operator.log());
}

/// `ccm-assets operator remove`, as a user runs it; its exit code and output.
fn remove(stack: &KubeStack) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ccm-assets"))
        .args([
            "operator",
            "remove",
            "--timeout",
            "90s",
            "--kubeconfig",
            &stack["KUBE_ADMIN_KUBECONFIG"],
        ])
        .env_remove("KUBECONFIG")
        .output()
        .expect("ccm-assets runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// What the operator applies that is still there.
fn ours_left(installed: &Installed) -> Vec<String> {
    let mut left = Vec::new();
    let namespaced = [
        ("deployment", DEPLOYMENT),
        ("configmap", "cloud-conf"),
        ("configmap", "ccm-trusted-ca"),
        ("secret", "openstack-cloud-credentials"),
        ("serviceaccount", "cloud-controller-manager"),
    ];
    for (kind, name) in namespaced {
        if installed.get(kind, Some(CCM_NAMESPACE), name).is_some() {
            left.push(format!("{kind} {name}"));
        }
    }
    for (kind, name) in
        [("clusterrole", "openstack-cloud-controller-manager"), ("namespace", CCM_NAMESPACE)]
    {
        if installed.get(kind, None, name).is_some() {
            left.push(format!("{kind} {name}"));
        }
    }
    left
}

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn real_kube_operator_switched_off_deletes_what_it_applied_switched_on_restores_it_and_remove_hands_back()
 {
    let installed = Installed::new();
    let operator = Operator::start(&installed.stack, &installed.test.dir(), "operator-a");
    wait_for(Duration::from_secs(30), "Available", || {
        installed.condition("Available").filter(|c| c["status"] == "True")
    });
    let annotate = |value: &str| {
        let arg = format!("operator.ccm-assets.io/management-state={value}");
        installed.stack.run(
            &[
                "annotate",
                "--overwrite",
                "clusteroperators.config.openshift.io",
                "cloud-controller-manager",
                &arg,
            ],
            None,
        );
    };
    annotate("Removed");
    wait_for(Duration::from_secs(60), "everything deleted when switched off", || {
        let left = ours_left(&installed);
        left.is_empty().then_some(())
    });
    let available = wait_for(Duration::from_secs(10), "Available=False Removed", || {
        installed.condition("Available").filter(|c| c["status"] == "False")
    });
    assert_eq!(available["reason"], "Removed", "{}", operator.log());
    annotate("Managed");
    wait_for(Duration::from_secs(30), "everything back when switched on", || {
        let back = installed.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT).is_some()
            && installed.cloud_conf().is_some()
            && installed.get("configmap", Some(CCM_NAMESPACE), "ccm-trusted-ca").is_some();
        back.then_some(())
    });
    drop(operator);
    let (code, output) = remove(&installed.stack);
    assert_eq!(code, 0, "{output}");
    assert!(
        output.contains(&format!("Deployment {CCM_NAMESPACE}/{DEPLOYMENT}: deleted")),
        "{output}"
    );
    assert_eq!(ours_left(&installed), Vec::<String>::new(), "{output}");
    // Objects made by someone else are left alone: the user's cloud config and Infrastructure.
    assert!(
        installed.get("configmap", Some("openshift-config"), "cloud-provider-config").is_some()
    );
    let (code, output) = remove(&installed.stack);
    assert_eq!(code, 0, "a second remove finds everything gone: {output}");
}

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn real_kube_operator_a_second_instance_waits_on_the_lease_and_takes_over_after_a_sigkill_mid_apply()
 {
    let installed = Installed::new();
    let fast = ["--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s"];
    let mut a = Operator::start_with(&installed.stack, &installed.test.dir(), "operator-a", &fast);
    // Killed while applying: as soon as its first object is there.
    wait_for(Duration::from_secs(30), "the first object applied", || {
        installed.get("namespace", None, CCM_NAMESPACE)
    });
    let _ = a.child.kill();
    let _ = a.child.wait();
    let b = Operator::start_with(&installed.stack, &installed.test.dir(), "operator-b", &fast);
    let c = Operator::start_with(&installed.stack, &installed.test.dir(), "operator-c", &fast);
    let holder = |name: &str| {
        installed
            .get("lease", Some(OPERATOR_NAMESPACE), "ccm-assets-operator")
            .filter(|l| l["spec"]["holderIdentity"].as_str().is_some_and(|h| h.starts_with(name)))
    };
    wait_for(Duration::from_secs(30), "b or c takes the killed holder's lease", || {
        holder("operator-b").or_else(|| holder("operator-c"))
    });
    wait_for(Duration::from_secs(30), "converged", || {
        let cloud_conf = installed.cloud_conf()?;
        let deployment = installed.get("deployment", Some(CCM_NAMESPACE), DEPLOYMENT)?;
        (!cloud_conf["data"].is_null() && !deployment["spec"].is_null()).then_some(())
    });
    let leaders = [&b, &c].iter().filter(|o| o.log().contains("acquired lease")).count();
    assert_eq!(leaders, 1, "one leader at a time:\nb: {}\nc: {}", b.log(), c.log());
    let replica_sets =
        installed.stack.run(&["get", "deployments", "-n", CCM_NAMESPACE, "-o", "name"], None);
    assert_eq!(replica_sets.lines().count(), 1, "{replica_sets}");
}

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn real_kube_operator_is_never_degraded_by_an_api_outage_of_a_minute() {
    use testkit::kube_front::{Delay, KubeFront, Upstream};
    let installed = Installed::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = Upstream::from_kubeconfig(Path::new(&installed.stack["KUBE_ADMIN_KUBECONFIG"]));
    let front = runtime.block_on(KubeFront::start(upstream, Delay::none()));
    let kubeconfig = front.kubeconfig(&installed.test.dir());
    let operator = Operator::start_at(&kubeconfig, &installed.test.dir(), "operator-a", &[]);
    wait_for(Duration::from_secs(30), "Available", || {
        installed.condition("Available").filter(|c| c["status"] == "True")
    });
    wait_for(Duration::from_secs(30), "ccm-trusted-ca written", || {
        installed.get("configmap", Some(CCM_NAMESPACE), "ccm-trusted-ca")
    });
    let never_degraded = |for_: Duration, what: &str| {
        let start = Instant::now();
        while start.elapsed() < for_ {
            if let Some(degraded) = installed.condition("Degraded") {
                assert_eq!(
                    degraded["status"],
                    "False",
                    "Degraded during {what}: {degraded}\n{}",
                    operator.log()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    };
    // The whole API down for 30 s: the operator keeps its Lease and runs on.
    front.set_delay(Delay::fail(503));
    never_degraded(Duration::from_secs(30), "an outage of the whole API");
    front.set_delay(Delay::none());
    never_degraded(Duration::from_secs(5), "the minute after an outage");
    assert!(front.faulted() > 0, "the front answered 503");
    let lease = installed.get("lease", Some(OPERATOR_NAMESPACE), "ccm-assets-operator").unwrap();
    assert!(
        lease["spec"]["holderIdentity"].as_str().is_some_and(|h| h.starts_with("operator-a")),
        "{lease}\n{}",
        operator.log()
    );
    // ConfigMaps failing for 60 s while the ClusterOperator can be written: every controller
    // fails all along, and none may show it before 2 minutes.
    front.set_delay(Delay::fail_of("configmaps", 503));
    // Meanwhile, a change only the operator can carry: it must land once the API is back.
    installed.stack.run(
        &["delete", "configmap", "-n", CCM_NAMESPACE, "ccm-trusted-ca", "--ignore-not-found"],
        None,
    );
    never_degraded(Duration::from_secs(60), "60 s of failing ConfigMap requests");
    front.set_delay(Delay::none());
    let back = Instant::now();
    while installed.get("configmap", Some(CCM_NAMESPACE), "ccm-trusted-ca").is_none() {
        let waited = back.elapsed();
        let requests = front.requests();
        let last: Vec<String> =
            requests.iter().rev().take(30).map(|(m, t)| format!("{m} {t}")).collect();
        assert!(
            waited < Duration::from_secs(30),
            "ccm-trusted-ca not back after the outage; faulted {}, last requests:\n{}\n{}",
            front.faulted(),
            last.join("\n"),
            operator.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(installed.condition("Degraded").unwrap()["status"], "False");
    drop(operator);
}
