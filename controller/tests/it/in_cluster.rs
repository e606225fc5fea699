//! The generated in-cluster CCM on the real Kubernetes of scripts/kube-up.sh: the OpenStack
//! example's `manifests/ccm/` generated against the real OpenStack stack, applied as admin
//! (in a namespace of the test's own and under cluster-wide names of its own: the cluster is
//! shared), and the binary run as a local process (no scheduler runs the Deployment's pod) as
//! the generated ServiceAccount, with the Deployment's flags and the files its volumes mount.
//! (real_kube_leader/rollout.rs runs the Deployment itself, its pods pinned to the node.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use testkit::cluster::{run_bounded, try_run_bounded};
use testkit::kube_stack::{KubeStack, Namespace, unique};
use testkit::stack::StackEnv;

use crate::end_to_end::generate;
use crate::support::{Process, free_port};

/// The namespace the generator writes (replaced by the test's own).
const NAMESPACE: &str = "openshift-cloud-controller-manager";
/// The generated ServiceAccount.
pub(crate) const SA: &str = "cloud-controller-manager";

/// The generated `manifests/ccm/` of the OpenStack example for the stack's cloud, renamed into
/// the test's namespace; cluster-wide objects renamed and deleted on drop.
pub(crate) struct Generated {
    pub(crate) kube: KubeStack,
    /// The CCM's namespace (the generated one's stand-in).
    pub(crate) ns: Namespace,
    /// The generated ClusterRole, its name made the test's own.
    pub(crate) cluster_role: Value,
    /// The generated Role of the CCM's namespace.
    pub(crate) role: Value,
    /// The generated Deployment's container arguments.
    pub(crate) args: Vec<String>,
    /// The generated Deployment, renamed into the namespace (not applied).
    pub(crate) deployment: Value,
    /// The files the Deployment's volumes would mount: cloud.conf, clouds.yaml.
    pub(crate) dir: tempfile::TempDir,
}

impl Generated {
    /// Generates for `cloud`, applies the ServiceAccount, RBAC, ConfigMap and Secret as admin;
    /// the kube-system bindings (06-08: the bootstrap identity's, not the ServiceAccount's),
    /// the Namespace (made by [`KubeStack::namespace`]) and the Deployment (no scheduler) are
    /// not applied.
    pub(crate) async fn apply(env: &StackEnv, cloud: &str) -> Generated {
        let kube = KubeStack::load();
        let dir = tempfile::tempdir().unwrap();
        let (out, env2, cloud2) = (dir.path().to_owned(), env.clone(), cloud.to_owned());
        tokio::task::spawn_blocking(move || generate(&out, &env2, &cloud2)).await.unwrap();
        let ns = kube.namespace("occm-rbac");
        let cluster_name = unique("occm-rbac");
        let mut objects = Vec::new();
        let ccm = dir.path().join("manifests/ccm");
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(&ccm).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files {
            let mut object = yaml(&file);
            rename(&mut object, &ns.name, &cluster_name);
            objects.push(object);
        }
        let find = |kind: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind)
                .unwrap_or_else(|| panic!("no {kind}"))
                .clone()
        };
        let (cluster_role, role) = (find("ClusterRole"), find("Role"));
        let deployment = find("Deployment");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let args = container["args"].as_array().unwrap().iter();
        let args = args.map(|a| a.as_str().unwrap().to_owned()).collect();
        let files = write_mounts(dir.path(), &find("ConfigMap"), &find("Secret"), container);
        assert_eq!(files, 2, "cloud.conf and clouds.yaml are mounted");
        let applied = Generated { kube, ns, cluster_role, role, args, deployment, dir };
        for object in objects {
            let namespaced_elsewhere =
                object["metadata"]["namespace"].as_str().is_some_and(|n| n != applied.ns.name);
            if ["Namespace", "Deployment"].contains(&object["kind"].as_str().unwrap())
                || namespaced_elsewhere
            {
                continue;
            }
            applied.kube.create(&object.to_string());
        }
        applied
    }

    /// The ServiceAccount's user name in the audit log.
    pub(crate) fn user(&self) -> String {
        format!("system:serviceaccount:{}:{SA}", self.ns.name)
    }

    /// Replaces the ClusterRole's and the Role's rules (as admin).
    pub(crate) fn set_rules(&self, cluster_role: &Value, role: &Value) {
        self.kube.run(&["replace", "-f", "-"], Some(&cluster_role.to_string()));
        self.kube.run(&["replace", "-f", "-"], Some(&role.to_string()));
    }

    /// Starts the binary as the ServiceAccount (a TokenRequest token) with the Deployment's
    /// arguments, its mounts pointed at the files, and `extra` flags; its `/readyz` port.
    pub(crate) fn start(&self, extra: &[&str]) -> (Process, u16) {
        let kubeconfig = self.kube.token_kubeconfig(self.dir.path(), &self.ns.name, SA);
        let port = free_port();
        let conf = self.dir.path().join("config/cloud.conf");
        let mut args: Vec<String> = self
            .args
            .iter()
            .map(|a| match a.split_once('=') {
                Some(("--cloud-config", _)) => format!("--cloud-config={}", conf.display()),
                Some(("--secure-port", _)) => format!("--secure-port={port}"),
                _ => a.clone(),
            })
            .collect();
        assert!(args.iter().any(|a| a.starts_with("--cloud-config=")), "{args:?}");
        args.push(format!("--kubeconfig={}", kubeconfig.display()));
        args.push("--bind-address=127.0.0.1".to_owned());
        args.extend(extra.iter().map(|&a| a.to_owned()));
        (Process::start(&args), port)
    }
}

impl Drop for Generated {
    fn drop(&mut self) {
        let name = self.cluster_role["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let delegator = format!("{name}:system:auth-delegator");
        for (kind, name) in [
            ("clusterrolebinding", &name),
            ("clusterrolebinding", &delegator),
            ("clusterrole", &name),
        ] {
            let mut cmd = self.kube.kubectl();
            cmd.args(["delete", kind, name, "--ignore-not-found", "--wait=false"]);
            let _ = run_bounded(cmd, None);
        }
    }
}

/// Every `verb group/resource` a ClusterRole's or Role's rules grant (as
/// [`testkit::kube_stack::request`] writes requests).
pub(crate) fn grants(role: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        for group in rule["apiGroups"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                for verb in rule["verbs"].as_array().unwrap() {
                    let (g, r, v) = (
                        group.as_str().unwrap(),
                        resource.as_str().unwrap(),
                        verb.as_str().unwrap(),
                    );
                    out.insert(format!("{v} {g}/{r}"));
                }
            }
        }
    }
    out
}

/// The role with `grant` (`verb group/resource`) removed: from each rule naming it, the
/// verb goes (and the rule, when nothing is left of it).
pub(crate) fn without(role: &Value, grant: &str) -> Value {
    let (verb, target) = grant.split_once(' ').unwrap();
    let (group, resource) = target.split_once('/').unwrap();
    let mut role = role.clone();
    let mut rules = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        let has = |key: &str, value: &str| rule[key].as_array().unwrap().contains(&json!(value));
        if !(has("apiGroups", group) && has("resources", resource) && has("verbs", verb)) {
            rules.push(rule.clone());
            continue;
        }
        // The other groups and resources of that rule keep the verb.
        let mut rest = rule.clone();
        rest["verbs"] = json!([verb]);
        let groups = rule["apiGroups"].as_array().unwrap().iter();
        let groups: Vec<&Value> = groups.filter(|g| *g != group).collect();
        if !groups.is_empty() {
            let mut other = rest.clone();
            other["apiGroups"] = json!(groups);
            rules.push(other);
        }
        let resources = rule["resources"].as_array().unwrap().iter();
        let resources: Vec<&Value> = resources.filter(|r| *r != resource).collect();
        if !resources.is_empty() {
            let mut other = rest.clone();
            other["apiGroups"] = json!([group]);
            other["resources"] = json!(resources);
            rules.push(other);
        }
        let mut kept = rule.clone();
        let verbs = rule["verbs"].as_array().unwrap().iter();
        let verbs: Vec<&Value> = verbs.filter(|v| *v != verb).collect();
        if !verbs.is_empty() {
            kept["verbs"] = json!(verbs);
            rules.push(kept);
        }
    }
    role["rules"] = json!(rules);
    role
}

/// The generated namespace → `ns`; the cluster-wide names → `cluster_name`.
fn rename(object: &mut Value, ns: &str, cluster_name: &str) {
    if object["metadata"]["namespace"] == NAMESPACE {
        object["metadata"]["namespace"] = json!(ns);
    }
    match object["kind"].as_str().unwrap() {
        "ClusterRole" => object["metadata"]["name"] = json!(cluster_name),
        // A binding of a built-in role (`system:auth-delegator`) keeps it.
        "ClusterRoleBinding"
            if object["roleRef"]["name"].as_str().unwrap().starts_with("system:") =>
        {
            let role = object["roleRef"]["name"].as_str().unwrap().to_owned();
            object["metadata"]["name"] = json!(format!("{cluster_name}:{role}"));
        }
        "ClusterRoleBinding" => {
            object["metadata"]["name"] = json!(cluster_name);
            object["roleRef"]["name"] = json!(cluster_name);
        }
        _ => {}
    }
    if let Some(subjects) = object.get_mut("subjects").and_then(Value::as_array_mut) {
        for subject in subjects.iter_mut().filter(|s| s["namespace"] == NAMESPACE) {
            subject["namespace"] = json!(ns);
        }
    }
    if object["kind"] == "Deployment" {
        let args = &mut object["spec"]["template"]["spec"]["containers"][0]["args"];
        for arg in args.as_array_mut().unwrap() {
            if arg == &json!(format!("--leader-elect-resource-namespace={NAMESPACE}")) {
                *arg = json!(format!("--leader-elect-resource-namespace={ns}"));
            }
        }
    }
}

/// What the Deployment's ConfigMap and Secret volumes mount, written under `dir` at the
/// mount paths (`/etc/openstack/config` → `dir/config`, …) and the file paths in cloud.conf
/// pointed there; how many files.
fn write_mounts(dir: &Path, config_map: &Value, secret: &Value, container: &Value) -> usize {
    let volumes: Vec<(String, String)> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (m["name"].as_str().unwrap().to_owned(), m["mountPath"].as_str().unwrap().to_owned())
        })
        .collect();
    let local = |mount: &str| dir.join(mount.trim_start_matches("/etc/openstack/"));
    let mut written = 0;
    for (volume, mount) in &volumes {
        let data = match volume.as_str() {
            "config" => &config_map["data"],
            "secret" => &secret["stringData"],
            _ => continue,
        };
        let target = local(mount);
        std::fs::create_dir_all(&target).unwrap();
        for (key, value) in data.as_object().unwrap() {
            let mut text = value.as_str().unwrap().to_owned();
            for (_, other) in &volumes {
                if other.starts_with("/etc/openstack/") {
                    text = text.replace(other.as_str(), &local(other).display().to_string());
                }
            }
            std::fs::write(target.join(key), text).unwrap();
            written += 1;
        }
    }
    written
}

fn yaml(path: &Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `command` at drop (bounded; a failure is tried twice more, then reported on stderr):
/// the cleanup of what a test made outside its namespace, on failure too. A loaded stack's
/// SQLite answers 500 now and then: a delete ignored once left a server behind in CI.
pub(crate) struct OnDrop(pub(crate) Vec<Command>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        for cmd in self.0.drain(..) {
            let program = cmd.get_program().to_owned();
            let args: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
            let envs: Vec<_> =
                cmd.get_envs().map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned))).collect();
            for attempt in 1..=3 {
                let mut again = Command::new(&program);
                again.args(&args);
                for (key, value) in &envs {
                    match value {
                        Some(value) => again.env(key, value),
                        None => again.env_remove(key),
                    };
                }
                // Never a panic here: this may run while a failed test unwinds.
                let out = match try_run_bounded(again, None) {
                    Ok(out) if out.status.success() => break,
                    Ok(out) => out,
                    Err(hung) => {
                        eprintln!("cleanup: {hung} (attempt {attempt} of 3)");
                        continue;
                    }
                };
                let why = String::from_utf8_lossy(&out.stderr);
                eprintln!("cleanup {program:?} {args:?} failed (attempt {attempt} of 3): {why}");
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
        }
    }
}
