//! The bootstrap node for real (DESIGN §6, issue 25): the generated bootkube stage, run with
//! real podman and the project's image, installs the CCM static pod into the node's
//! /etc/kubernetes; the kubelet of scripts/kube-up.sh runs it from that image; its minted
//! kubeconfig (signed by the CA the API server trusts, as an installer's signer signs it)
//! authenticates as `system:cloud-controller-manager`; and the CCM initializes the kubelet's
//! own node from a real Nova server named like it. Needs both stacks and scripts/image.sh's
//! image; in the nextest group `real-kube-ccm` (it runs a CCM on the shared cluster).

use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use ccm_assets::create::{Env, Request, create_manifests};
use serde_json::Value;
use testkit::image::Image;
use testkit::kube::UNINITIALIZED_TAINT;
use testkit::kube_stack::{KubeStack, request, unique};
use testkit::stack::StackEnv;

/// Where the generated bootstrap kubeconfig points: the bootstrap node's own API server.
const LOCAL_API: &str = "127.0.0.1:6443";
/// What the cluster needs before the bootstrap CCM can work, as the installer applies it: the
/// credentials Secret it reads through `[Global] secret-name`, and its identity's RBAC.
const APPLIED: &[&str] = &[
    "openshift/99_cloud-creds-secret.yaml",
    "openshift/99_role-cloud-creds-secret-reader.yaml",
    "manifests/ccm/02-clusterrole.yaml",
    "manifests/ccm/03-clusterrolebinding.yaml",
    "manifests/ccm/06-creds-reader-rolebinding.yaml",
    "manifests/ccm/07-creds-watcher-role.yaml",
    "manifests/ccm/08-creds-watcher-rolebinding.yaml",
];
const POD_FILE: &str = "manifests/openstack-cloud-controller-manager-pod.yaml";
const INSTALLED: &[&str] =
    &[POD_FILE, "bootstrap-configs/cloud.conf", "bootstrap-secrets/ccm-kubeconfig"];
const USER: &str = "system:cloud-controller-manager";

#[test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
fn bootkube_stage_starts_the_static_pod_ccm_that_initializes_the_kubelets_own_node() {
    let kube = KubeStack::load();
    let env_file = std::env::var(testkit::kube_stack::VAR).unwrap();
    assert!(
        std::fs::read_to_string(&env_file).unwrap().contains("\nKUBE_ETC_KUBERNETES="),
        "the cluster was started by older scripts (no KUBE_ETC_KUBERNETES): restart it with \
         scripts/kube-down.sh && scripts/kube-up.sh"
    );
    let cloud = StackEnv::load();
    let image = Image::built();
    let node = kube["KUBE_NODE_NAME"].clone();
    let etc = PathBuf::from(&kube["KUBE_ETC_KUBERNETES"]);
    let mut undo = Undo::default();

    // A real server named like the node, and the node registered afresh as a cloud node.
    let server = cloud.scene(&["server-create", "--name", &node, "--wait-active"]);
    let id = server["id"].as_str().expect("server-create prints the server").to_owned();
    let cloud2 = cloud.clone();
    undo.push(move || {
        quietly(cloud2.scene_command().args(["server-delete", id.as_str(), "--wait"]))
    });
    let id = server["id"].as_str().unwrap();
    let kube2 = kube.clone();
    undo.push(move || quietly(&mut kube2.fresh_node(None)));
    run(&mut kube.fresh_node(Some("external")));
    let fresh = kube.get("node", None, &node).expect("the node registered again");
    assert!(has_taint(&fresh, UNINITIALIZED_TAINT), "{}", fresh["spec"]);

    // The installer's assets, signed by the CA the API server trusts; the cluster side applied.
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &kube, &cloud);
    let applied: Vec<String> =
        APPLIED.iter().map(|f| dir.path().join(f).display().to_string()).collect();
    let mut apply = vec!["apply".to_owned()];
    applied.iter().for_each(|f| apply.extend(["-f".to_owned(), f.clone()]));
    kube.run(&apply.iter().map(String::as_str).collect::<Vec<_>>(), None);
    let kube2 = kube.clone();
    undo.push(move || {
        let mut args = vec!["delete", "--ignore-not-found", "--wait=false"];
        applied.iter().for_each(|f| args.extend(["-f", f]));
        drop(kube2.kubectl().args(&args).output());
    });
    // The kubeconfig names https://localhost:6443, the bootstrap node's API server: here, a
    // forwarder to the test cluster's (whose serving certificate names localhost).
    forward(LOCAL_API, kube.url().trim_start_matches("https://"));
    image.import(&kube);

    // The stage, as bootkube.sh runs it; then again: it does nothing.
    let audit = kube.audit();
    let (kube2, etc2) = (kube.clone(), etc.clone());
    undo.push(move || remove_static_pod(&kube2, &etc2));
    let first = run(&mut stage(&kube, dir.path(), &image));
    assert!(first.contains("stage ccm-bootstrap started"), "{first}");
    assert!(dir.path().join("ccm-bootstrap.done").exists(), "{first}");
    let installed = modified(&etc);
    let again = run(&mut stage(&kube, dir.path(), &image));
    assert!(!again.contains("started"), "the second run did something: {again}");
    assert_eq!(modified(&etc), installed, "the second run changed /etc/kubernetes");

    // The kubelet runs the static pod from our image; its CCM initializes the node.
    let mirror = format!("openstack-cloud-controller-manager-{node}");
    let pod = wait(&kube, Duration::from_secs(90), "the mirror pod Running", || {
        kube.get("pod", Some("kube-system"), &mirror).filter(|p| p["status"]["phase"] == "Running")
    });
    assert_eq!(pod["spec"]["containers"][0]["image"], image.name.as_str());
    let image_id = pod["status"]["containerStatuses"][0]["imageID"].as_str().unwrap_or_default();
    assert!(image_id.ends_with(&image.id), "{image_id} is not our image {}", image.id);
    let initialized = wait(&kube, Duration::from_secs(120), "the node initialized", || {
        kube.get("node", None, &node).filter(|n| !has_taint(n, UNINITIALIZED_TAINT))
    });
    assert_eq!(initialized["spec"]["providerID"], format!("openstack:///{id}"));
    let labels = &initialized["metadata"]["labels"];
    assert_eq!(labels["node.kubernetes.io/instance-type"], server["flavor"]);
    assert_eq!(server["flavor"], cloud["OPENSTACK_FLAVOR"].as_str());
    let addresses = &initialized["status"]["addresses"];
    for ip in server["fixed_ips"].as_array().unwrap() {
        let internal = serde_json::json!({"type": "InternalIP", "address": ip});
        assert!(addresses.as_array().unwrap().contains(&internal), "{ip} not in {addresses}");
    }

    // Every request of the pod's CCM came as the minted identity, and none was refused.
    let events = audit.by(USER);
    let requests: Vec<String> =
        events.iter().map(|e| format!("{} {}", request(e), e["responseStatus"]["code"])).collect();
    assert!(requests.iter().any(|r| r.starts_with("patch /nodes")), "{requests:#?}");
    assert!(requests.iter().any(|r| r.contains("/secrets")), "{requests:#?}");
    let refused: Vec<&String> = requests.iter().filter(|r| r.ends_with(" 403")).collect();
    assert!(refused.is_empty(), "refused: {refused:#?}\n{}", ccm_log(&kube, &mirror));
    drop(undo);
}

/// Generates the OpenStack assets for the test cloud into `dir`, with the installer's TLS
/// material: the client CA the API server trusts as the kube-control-plane signer, its server
/// CA as the localhost bundle.
fn generate(dir: &Path, kube: &KubeStack, cloud: &StackEnv) {
    // The stage runs as root, the image's ccm-assets as root too; the pod reads as 65532 what
    // the stage installs (it chowns the kubeconfig), so only the directory's mode matters here.
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    for (from, to) in [
        ("KUBE_CLIENT_CA_CERT", "kube-control-plane-signer.crt"),
        ("KUBE_CLIENT_CA_KEY", "kube-control-plane-signer.key"),
        ("KUBE_SERVER_CA_CERT", "kube-apiserver-localhost-ca-bundle.crt"),
    ] {
        std::fs::copy(&kube[from], tls.join(to)).unwrap();
    }
    let name = &cloud["OPENSTACK_CLOUD_APPCRED"];
    let config = testkit::install_config::openstack(name, &cloud["OPENSTACK_EXTERNAL_NETWORK"]);
    testkit::install_config::write(dir, &config);
    let clouds = cloud["OPENSTACK_CLOUDS_YAML"].clone();
    let vars = Env::from_vars(
        |var| (var == "OS_CLIENT_CONFIG_FILE").then(|| clouds.clone().into()),
        dir.to_owned(),
    );
    let request = Request { infra_id: Some(unique("boot")), ..Request::new(dir, vars) };
    create_manifests(&request).unwrap();
}

/// scripts/kube/bootkube.sh on `dir` with the built image.
fn stage(kube: &KubeStack, dir: &Path, image: &Image) -> Command {
    let mut cmd = Command::new(&kube["KUBE_BOOTKUBE"]);
    cmd.arg(std::env::var(testkit::kube_stack::VAR).unwrap()).arg(dir).arg(&image.source);
    cmd
}

/// The static pod's manifest removed (the kubelet stops the CCM), then what the stage installed.
fn remove_static_pod(kube: &KubeStack, etc: &Path) {
    let _ = std::fs::remove_file(etc.join(POD_FILE));
    let mirror = format!("openstack-cloud-controller-manager-{}", kube["KUBE_NODE_NAME"]);
    let start = Instant::now();
    while kube.get("pod", Some("kube-system"), &mirror).is_some()
        && start.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(500));
    }
    INSTALLED.iter().for_each(|f| drop(std::fs::remove_file(etc.join(f))));
}

/// The modification times of what the stage installed.
fn modified(etc: &Path) -> Vec<std::time::SystemTime> {
    INSTALLED
        .iter()
        .map(|f| {
            let path = etc.join(f);
            std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or_else(|e| panic!("the stage did not install {}: {e}", path.display()))
        })
        .collect()
}

/// Forwards TCP connections on `listen` to `target` for the rest of the test process.
fn forward(listen: &str, target: &str) {
    let listener = TcpListener::bind(listen).unwrap_or_else(|e| {
        panic!("cannot listen on {listen} for the bootstrap kubeconfig's API server: {e}")
    });
    let target = target.to_owned();
    std::thread::spawn(move || {
        for inbound in listener.incoming().flatten() {
            let Ok(outbound) = TcpStream::connect(&target) else { continue };
            for (mut from, mut to) in
                [(inbound.try_clone().unwrap(), outbound.try_clone().unwrap()), (outbound, inbound)]
            {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
}

/// Runs `cmd`; its stdout and stderr, or a panic showing them.
fn run(cmd: &mut Command) -> String {
    let Output { status, stdout, stderr } = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
    assert!(status.success(), "{cmd:?} failed ({status}):\n{text}");
    text
}

/// Runs `cmd` in a cleanup step: a failure is printed, not a panic.
fn quietly(cmd: &mut Command) {
    match cmd.output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => eprintln!("cleanup: {cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => eprintln!("cleanup: {cmd:?}: {e}"),
    }
}

/// Polls `probe` every half second until it gives a value, for at most `limit`; on timeout, a
/// panic with the CCM's log.
fn wait<T>(kube: &KubeStack, limit: Duration, what: &str, probe: impl Fn() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        if start.elapsed() > limit {
            let mirror = format!("openstack-cloud-controller-manager-{}", kube["KUBE_NODE_NAME"]);
            panic!("not within {limit:?}: {what}\n{}", ccm_log(kube, &mirror));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The static pod's log, as far as the kubelet has it.
fn ccm_log(kube: &KubeStack, mirror: &str) -> String {
    let out = kube.kubectl().args(["logs", "-n", "kube-system", mirror, "--tail=40"]).output();
    out.map(|o| {
        let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
        let _ = o.stderr.as_slice().read_to_string(&mut text);
        format!("the CCM's log (last lines):\n{text}")
    })
    .unwrap_or_default()
}

fn has_taint(node: &Value, key: &str) -> bool {
    node["spec"]["taints"].as_array().is_some_and(|t| t.iter().any(|t| t["key"] == key))
}

/// What to undo, last first, when the test ends (on failure too).
#[derive(Default)]
struct Undo(Vec<Box<dyn FnOnce()>>);

impl Undo {
    fn push(&mut self, step: impl FnOnce() + 'static) {
        self.0.push(Box::new(step));
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        while let Some(step) = self.0.pop() {
            // One failing step must not keep the others from running.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(step));
        }
    }
}
