//! Generator and controller together: what `ccm-assets create manifests` writes for the bootstrap
//! node (static pod flags, bootstrap cloud.conf, credentials Secret) starts this binary, which
//! initializes a real server's node. Real Keystone/Nova/Neutron (ignored by default; run by
//! scripts/test.sh with the stack up), wire-level fake API server.

use std::path::Path;
use std::time::Duration;

use ccm_assets::create::{Env, Request, create_manifests};
use fake_kube_apiserver::FakeApiServer;
use serde_json::{Value, json};

use testkit::kube::{NodeFixture, UNINITIALIZED_TAINT, kubeconfig};
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::support::{Process, free_port, scene};

/// Runs the generator (online: it asks the real cloud) into `dir` for `cloud`, as the CLI would.
pub(crate) fn generate(dir: &Path, env: &StackEnv, cloud: &str) {
    let config = testkit::install_config::openstack(cloud, &env["OPENSTACK_EXTERNAL_NETWORK"]);
    testkit::install_config::write(dir, &config);
    let clouds = env["OPENSTACK_CLOUDS_YAML"].clone();
    let vars = Env::from_vars(
        |name| (name == "OS_CLIENT_CONFIG_FILE").then(|| clouds.clone().into()),
        dir.to_owned(),
    );
    let request = Request { infra_id: Some("e2e-x7k2p".into()), ..Request::new(dir, vars) };
    create_manifests(&request).unwrap();
}

fn yaml(path: &Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn generated_bootstrap_manifests_start_a_ccm_that_initializes_a_real_node() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    bootstrap_initializes_a_node(&env, &env["OPENSTACK_CLOUD_APPCRED"], "gen").await;
}

/// Over the stack's HTTPS front: the CA of the cloud's clouds.yaml goes into the generated
/// assets, and the bootstrap CCM trusts it through the cloud.conf's `ca-file`, where the static
/// pod's host mount puts the rendered file.
#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn generated_bootstrap_manifests_reach_openstack_over_tls_with_the_generated_ca() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    bootstrap_initializes_a_node(&env, &env["OPENSTACK_CLOUD_TLS"], "tls").await;
}

/// Generates for `cloud`, starts the binary with the static pod's flags (host paths pointed at
/// the generated files, as the pod's `/etc/kubernetes` host mount does) and waits until it
/// initializes a real server's node.
async fn bootstrap_initializes_a_node(env: &StackEnv, cloud: &str, tag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_owned();
    // Readable by the image's user when scripts/image.sh runs this test with the image's binary
    // (CCM_TEST_OCCM_BIN): the files the CCM reads here are not secret.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let (env2, cloud2) = (env.clone(), cloud.to_owned());
    tokio::task::spawn_blocking(move || generate(&out, &env2, &cloud2)).await.unwrap();

    let name = format!("occm-e2e-{tag}-{}", std::process::id());
    let server = scene(env, &["server-create", "--name", &name, "--wait-active"]).await;
    let id = server["id"].as_str().unwrap().to_owned();

    let fake = FakeApiServer::start().await.unwrap();
    let secret = yaml(&dir.path().join("openshift/99_cloud-creds-secret.yaml"));
    assert_eq!(secret["metadata"]["namespace"], "kube-system");
    fake.create(
        "v1",
        "secrets",
        "kube-system",
        json!({"metadata": secret["metadata"], "data": secret["data"]}),
    );
    fake.create("v1", "nodes", "", NodeFixture::tainted(&name).build());

    // The static pod's own flags, with the host paths pointed at the generated files.
    let pod =
        yaml(&dir.path().join("bootstrap/manifests/openstack-cloud-controller-manager-pod.yaml"));
    // The pod mounts the host's /etc/kubernetes: its bootstrap-configs are the rendered configs.
    let conf = dir.path().join("bootstrap/configs/cloud.conf");
    let configs = format!("{}/", dir.path().join("bootstrap/configs").display());
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, text.replace("/etc/kubernetes/bootstrap-configs/", &configs)).unwrap();
    let kube = kubeconfig(dir.path(), &fake.url());
    let port = free_port();
    let mut args: Vec<String> = pod["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .map(|a| match a.split_once('=') {
            Some((
                flag @ ("--kubeconfig"
                | "--authentication-kubeconfig"
                | "--authorization-kubeconfig"),
                _,
            )) => format!("{flag}={}", kube.display()),
            Some(("--cloud-config", _)) => format!("--cloud-config={}", conf.display()),
            _ => a,
        })
        .collect();
    assert!(args.contains(&"--controllers=cloud-node".to_owned()), "{args:?}");
    assert!(args.contains(&"--leader-elect=false".to_owned()), "{args:?}");
    assert!(args.contains(&"--bind-address=127.0.0.1".to_owned()), "{args:?}");
    args.push(format!("--secure-port={port}"));

    let process = Process::start(&args);
    process.wait_line("initialized", Duration::from_secs(60)).await;
    let node = fake.get("v1", "nodes", "", &name).unwrap();
    assert_eq!(node["spec"]["providerID"], format!("openstack:///{id}"));
    assert_eq!(
        node["metadata"]["labels"]["node.kubernetes.io/instance-type"],
        env["OPENSTACK_FLAVOR"].as_str()
    );
    let taints = node["spec"]["taints"].as_array().cloned().unwrap_or_default();
    assert!(taints.iter().all(|t| t["key"] != UNINITIALIZED_TAINT), "{taints:?}");
    assert!(!process.log().contains(&env["OPENSTACK_APPCRED_SECRET"]), "a secret reached the log");
    scene(env, &["server-delete", &id, "--wait"]).await;
}
