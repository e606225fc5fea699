//! The Azure CCM's credentials, which it reads from its config only. In the cluster, the
//! Deployment's init container merges the mounted Secret into the config: run here as the
//! kubelet would run it, with the args the Deployment gives it and the files its volumes would
//! hold. On the bootstrap node, `create` and `render` merge the `kube-system` Secret in.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::Value;

use crate::platforms::{pinned, with_credentials};
use crate::support::Test;

/// The fixture principal (tests/fixtures/credentials/osServicePrincipal.json).
const CLIENT_ID: &str = "00000000-0000-0000-0000-00000000cccc";
const CLIENT_SECRET: &str = "example-azure-secret-DO-NOT-LOG";

fn yaml(t: &Test, rel: &str) -> Value {
    serde_saphyr::from_str(&t.read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Writes a Secret's or ConfigMap's data as the kubelet mounts it: one file per key, `mode`.
fn mount(dir: &Path, data: &Value, mode: u32) {
    std::fs::create_dir_all(dir).unwrap();
    for (key, value) in data.as_object().expect("data") {
        let path = dir.join(key);
        std::fs::write(&path, value.as_str().expect("string data")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[test]
fn the_init_container_gives_the_ccm_its_service_principal() {
    let run = pinned(&[]);
    let t = with_credentials(Test::new().example("azure")).create(&run);
    t.expect(0);
    let deployment = yaml(&t, "manifests/ccm/20-deployment.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let init = &pod["initContainers"][0];
    assert_eq!(init["command"], serde_json::json!(["ccm-assets"]));
    let ccm_args = pod["containers"][0]["args"].as_array().unwrap();
    assert!(
        ccm_args.contains(&Value::from(
            "--cloud-config=/etc/kubernetes-cloud-config-merged/cloud.conf"
        ))
    );

    // The volumes, under a root standing in for the container's file system.
    let root = t.dir().join("pod");
    let config_map = yaml(&t, "manifests/ccm/10-cloud-conf.yaml");
    let secret = yaml(&t, "manifests/ccm/11-cloud-credentials.yaml");
    for m in init["volumeMounts"].as_array().unwrap() {
        let dir = root.join(m["mountPath"].as_str().unwrap().trim_start_matches('/'));
        match m["name"].as_str().unwrap() {
            "config" => mount(&dir, &config_map["data"], 0o644),
            "secret" => mount(&dir, &secret["stringData"], 0o644),
            _ => std::fs::create_dir_all(&dir).unwrap(),
        }
    }
    let mut run_args = vec!["inject-azure-credentials".to_owned()];
    for arg in init["args"].as_array().unwrap().iter().skip(1) {
        let (flag, path) = arg.as_str().unwrap().split_once('=').unwrap();
        run_args.push(format!("{flag}={}{path}", root.display()));
    }
    let run_args: Vec<&str> = run_args.iter().map(String::as_str).collect();
    let run = Test::new().args(&run_args).expect(0);
    assert!(!run.stderr.contains(CLIENT_SECRET), "secret logged: {}", run.stderr);

    let merged_path = root.join("etc/kubernetes-cloud-config-merged/cloud.conf");
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&merged_path).unwrap())
        .expect("the merged config is JSON");
    let mut original: Value =
        serde_json::from_str(config_map["data"]["cloud.conf"].as_str().unwrap()).unwrap();
    original["aadClientId"] = Value::from(CLIENT_ID);
    original["aadClientSecret"] = Value::from(CLIENT_SECRET);
    assert_eq!(merged, original, "only the client ID and secret change");
    let mode = std::fs::metadata(&merged_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "as readable as the Secret volume's files");
}

#[test]
fn a_private_secret_gives_a_private_config_and_a_missing_one_writes_nothing() {
    let t = Test::new();
    let dir = t.dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cloud.conf"),
        "{\"aadClientId\": \"\", \"cloud\": \"AzurePublicCloud\"}\n",
    )
    .unwrap();
    let creds = dir.join("creds");
    let data =
        serde_json::json!({"azure_client_id": CLIENT_ID, "azure_client_secret": CLIENT_SECRET});
    mount(&creds, &data, 0o600);
    let args = |out: &str| {
        vec![
            "inject-azure-credentials".to_owned(),
            format!("--cloud-config={}", dir.join("cloud.conf").display()),
            format!("--credentials-dir={}", creds.display()),
            format!("--output={}", dir.join(out).display()),
        ]
    };
    let ok = args("merged.conf");
    let ok: Vec<&str> = ok.iter().map(String::as_str).collect();
    Test::new().args(&ok).expect(0);
    let mode = std::fs::metadata(dir.join("merged.conf")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    std::fs::remove_file(creds.join("azure_client_secret")).unwrap();
    let bad = args("other.conf");
    let bad: Vec<&str> = bad.iter().map(String::as_str).collect();
    let run = Test::new().args(&bad).expect(1);
    assert!(run.stderr.contains("azure_client_secret"), "{}", run.stderr);
    assert!(!dir.join("other.conf").exists(), "nothing may be written");
}

#[test]
fn the_bootstrap_pod_reads_a_config_with_the_credentials_secret_merged_in() {
    use base64::Engine as _;
    let run = pinned(&[]);
    let t = with_credentials(Test::new().example("azure")).create(&run);
    t.expect(0);
    let pod = yaml(&t, "bootstrap/manifests/azure-cloud-controller-manager-pod.yaml");
    let pod_args = pod["spec"]["containers"][0]["args"].as_array().unwrap();
    assert!(
        pod_args
            .contains(&Value::from("--cloud-config=/etc/kubernetes/bootstrap-secrets/cloud.conf"))
    );
    let created = t.read("bootstrap/secrets/cloud.conf");
    let config: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(
        (config["aadClientId"].as_str(), config["aadClientSecret"].as_str()),
        (Some(CLIENT_ID), Some(CLIENT_SECRET))
    );

    // render on the bootstrap node derives the same file, and follows a rotated Secret.
    let dest = t.dir().join("rendered");
    let asset_dir = t.dir().display().to_string();
    let render = || {
        let args = ["render", "--asset-dir", &asset_dir, "--dest-dir", dest.to_str().unwrap()];
        let run = Test::new().args(&args).expect(0);
        assert!(!run.stderr.contains(CLIENT_SECRET), "secret logged: {}", run.stderr);
        std::fs::read_to_string(dest.join("secrets/cloud.conf")).unwrap()
    };
    assert_eq!(render(), created);
    let mode = std::fs::metadata(dest.join("secrets/cloud.conf")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let b64 = base64::engine::general_purpose::STANDARD;
    let secret_file = t.read("openshift/99_cloud-creds-secret.yaml");
    let rotated = secret_file.replace(&b64.encode(CLIENT_SECRET), &b64.encode("rotated-secret"));
    assert_ne!(rotated, secret_file);
    std::fs::write(t.dir().join("openshift/99_cloud-creds-secret.yaml"), rotated).unwrap();
    let config: Value = serde_json::from_str(&render()).unwrap();
    assert_eq!(config["aadClientSecret"], "rotated-secret");
}

#[test]
fn manual_credentials_leave_the_bootstrap_config_without_a_client_and_say_so() {
    let t = Test::new().example("azure");
    let config = format!("credentialsMode: Manual\n{}", t.read("install-config.yaml"));
    let run = pinned(&[]);
    let t = with_credentials(t.file("install-config.yaml", &config)).create(&run);
    let run = t.expect(0);
    assert!(run.stderr.contains("starts without cloud credentials"), "{}", run.stderr);
    let config: Value = serde_json::from_str(&t.read("bootstrap/secrets/cloud.conf")).unwrap();
    assert_eq!(config["aadClientId"], "");
}
