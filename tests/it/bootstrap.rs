//! The bootstrap CCM: minted kubeconfig, `render`, and the bootkube stage run for real.

use std::path::Path;
use std::process::Command;

use testkit::create::CreateManifests;

use crate::support::{Test, tree};
const KUBECONFIG: &str = "bootstrap/secrets/ccm-kubeconfig";

fn openssl(args: &[&str], dir: &Path) -> String {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is needed by these tests (scripts/test-tools.sh installs it)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Writes the kubeconfig's client certificate to `client.crt` in `dir`.
fn client_cert(t: &Test, dir: &Path) {
    use base64::Engine as _;
    let kubeconfig = t.read(KUBECONFIG);
    let line = kubeconfig.lines().find(|l| l.contains("client-certificate-data:")).unwrap();
    let data = line.split_once(": ").unwrap().1;
    let pem = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
    std::fs::write(dir.join("client.crt"), pem).unwrap();
}

#[test]
fn the_kubeconfig_client_certificate_is_issued_by_a_ca_written_beside_it() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    client_cert(&t, &t.dir());
    let verified =
        openssl(&["verify", "-CAfile", "bootstrap/secrets/ccm-ca.crt", "client.crt"], &t.dir());
    assert_eq!(verified, "client.crt: OK\n");
    let text = openssl(
        &["x509", "-in", "client.crt", "-noout", "-subject", "-ext", "extendedKeyUsage"],
        &t.dir(),
    );
    assert!(text.contains("subject=CN = system:cloud-controller-manager"), "{text}");
    assert!(text.contains("TLS Web Client Authentication"), "{text}");
    assert!(t.read(KUBECONFIG).contains("server: https://localhost:6443\n"));
}

#[test]
fn minted_material_is_kept_across_runs() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    let first = (t.read(KUBECONFIG), t.read("bootstrap/secrets/ccm-ca.crt"));
    let run = t.expect(0);
    assert!(run.stderr.contains("are up to date"), "{}", run.stderr);
    assert_eq!((t.read(KUBECONFIG), t.read("bootstrap/secrets/ccm-ca.crt")), first);
}

#[test]
fn an_installer_rsa_signer_in_pkcs1_form_issues_the_certificate() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    let tls = t.dir().join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    openssl(&["genrsa", "-traditional", "-out", "kube-control-plane-signer.key", "2048"], &tls);
    openssl(
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            "kube-control-plane-signer.key",
            "-days",
            "1",
            "-subj",
            "/OU=openshift/CN=kube-control-plane-signer",
            "-out",
            "kube-control-plane-signer.crt",
        ],
        &tls,
    );
    assert!(
        std::fs::read_to_string(tls.join("kube-control-plane-signer.key"))
            .unwrap()
            .contains("BEGIN RSA PRIVATE KEY")
    );
    std::fs::copy(
        tls.join("kube-control-plane-signer.crt"),
        tls.join("kube-apiserver-localhost-ca-bundle.crt"),
    )
    .unwrap();
    let run = t.expect(0);
    assert!(!run.stderr.contains("cannot verify the API server"), "{}", run.stderr);
    assert!(!t.dir().join("bootstrap/secrets/ccm-ca.crt").exists(), "no own CA with a signer");
    client_cert(&t, &t.dir());
    let verified = openssl(
        &["verify", "-CAfile", "tls/kube-control-plane-signer.crt", "client.crt"],
        &t.dir(),
    );
    assert_eq!(verified, "client.crt: OK\n");
    assert!(t.read(KUBECONFIG).contains("certificate-authority-data: "));
}

/// A signer made as `openssl x509 -req -signkey` makes one, without extensions: X.509 v1,
/// which rcgen (x509-parser) reads as it reads v3. See: issue 36.
#[test]
fn an_x509_v1_signer_issues_the_certificate() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    let tls = t.dir().join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    let (cert, key) = ("kube-control-plane-signer.crt", "kube-control-plane-signer.key");
    openssl(&["genrsa", "-traditional", "-out", key, "2048"], &tls);
    let subject = "/OU=openshift/CN=kube-control-plane-signer";
    openssl(&["req", "-new", "-key", key, "-subj", subject, "-out", "signer.csr"], &tls);
    openssl(
        &["x509", "-req", "-in", "signer.csr", "-signkey", key, "-days", "1", "-out", cert],
        &tls,
    );
    let text = openssl(&["x509", "-in", cert, "-noout", "-text"], &tls);
    assert!(text.contains("Version: 1 (0x0)"), "{text}");
    std::fs::remove_file(tls.join("signer.csr")).unwrap();
    t.expect(0);
    client_cert(&t, &t.dir());
    let verified = openssl(&["verify", "-CAfile", &format!("tls/{cert}"), "client.crt"], &t.dir());
    assert_eq!(verified, "client.crt: OK\n");
}

#[test]
fn half_a_signer_is_an_error_and_changes_nothing() {
    let t = Test::new()
        .example("openstack")
        .create(&CreateManifests::offline())
        .file("tls/kube-control-plane-signer.crt", "x");
    let before = tree(&t.dir());
    let run = t.expect(1);
    assert!(run.stderr.contains("must be given together"), "{}", run.stderr);
    assert_eq!(tree(&t.dir()), before);
}

#[test]
fn render_honours_edits_made_after_create() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    let path = "manifests/cloud-provider-config.yaml";
    std::fs::write(
        t.dir().join(path),
        t.read(path).replace("region = RegionOne", "region = RegionTwo"),
    )
    .unwrap();
    let out = t.dir().join("ccm-bootstrap");
    let render = Test::new().args(&[
        "render",
        "--asset-dir",
        &t.dir().display().to_string(),
        "--dest-dir",
        &out.display().to_string(),
    ]);
    render.expect(0);
    let files: Vec<String> = tree(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        files,
        [
            "configs/cloud.conf",
            "manifests/openstack-cloud-controller-manager-pod.yaml",
            "secrets/ccm-kubeconfig"
        ]
    );
    let conf = std::fs::read_to_string(out.join("configs/cloud.conf")).unwrap();
    assert!(conf.contains("region = RegionTwo\n"), "{conf}");
    assert!(conf.contains("secret-name = openstack-credentials\n"), "{conf}");
}

#[test]
fn render_without_a_cloud_config_writes_nothing_and_succeeds() {
    let t = Test::new();
    std::fs::create_dir_all(t.dir().join("manifests")).unwrap();
    let out = t.dir().join("out");
    let run = t
        .args(&["render", "--asset-dir", "{dir}", "--dest-dir", &out.display().to_string()])
        .expect(0);
    assert!(run.stderr.contains("nothing to render"), "{}", run.stderr);
    assert!(!out.exists());
}

#[test]
fn bootkube_stage_passes_shellcheck() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    let out = Command::new("shellcheck")
        .args(["--shell=bash", "--exclude=SC2148", "bootkube/ccm-bootstrap.sh"])
        .current_dir(t.dir())
        .output()
        .expect("shellcheck is needed by this test (scripts/test-tools.sh installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// bootkube.sh's helpers and a `podman` that runs the real ccm-assets binary, mapping /assets.
const HARNESS: &str = r#"set -euo pipefail
record_service_stage_start() { echo "start $1" >> "$LOG"; }
record_service_stage_success() { echo "success" >> "$LOG"; }
chown() { echo "chown $1" >> "$LOG"; }
podman() {
	local volume="" image="" entrypoint=""
	while [ -z "$image" ]; do
		case "$1" in
			run) shift ;;
			--volume) volume="$2"; shift 2 ;;
			--entrypoint=*) entrypoint="${1#--entrypoint=}"; shift ;;
			--*) shift ;;
			*) image="$1"; shift ;;
		esac
	done
	echo "podman $image $entrypoint" >> "$LOG"
	"$CCM_ASSETS" "${@//\/assets/${volume%%:*}}"
}
cd "$ASSET_DIR"
. bootkube/ccm-bootstrap.sh
"#;

fn run_stage(t: &Test, kube: &Path, log: &Path) {
    let out = Command::new("bash")
        .args(["-c", HARNESS])
        .env("LOG", log)
        .env("ASSET_DIR", t.dir())
        .env("CCM_KUBERNETES_DIR", kube)
        .env("CCM_ASSETS", assert_cmd::cargo::cargo_bin("ccm-assets"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bootkube_stage_starts_the_ccm_once_and_is_idempotent() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    let kube = t.dir().join("etc-kubernetes");
    let log = t.dir().join("stage.log");
    run_stage(&t, &kube, &log);
    let files: Vec<String> = tree(&kube).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        files,
        [
            "bootstrap-configs/cloud.conf",
            "bootstrap-secrets/ccm-kubeconfig",
            "manifests/openstack-cloud-controller-manager-pod.yaml"
        ]
    );
    let first_log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        first_log,
        "start ccm-bootstrap\npodman quay.io/ccm-assets/ccm-assets:v0.1.0 ccm-assets\n\
         chown 65532:65532\nsuccess\n"
    );
    run_stage(&t, &kube, &log);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), first_log, "the second run does nothing");
}

#[test]
fn bootkube_stage_succeeds_without_a_cloud_config() {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    std::fs::remove_file(t.dir().join("manifests/cloud-provider-config.yaml")).unwrap();
    let kube = t.dir().join("etc-kubernetes");
    let log = t.dir().join("stage.log");
    run_stage(&t, &kube, &log);
    assert!(!kube.exists(), "nothing installed");
    assert!(t.dir().join("ccm-bootstrap.done").exists());
}

#[test]
fn render_from_a_missing_asset_directory_is_an_error() {
    let t = Test::new();
    let run = t.args(&["render", "--asset-dir", "{dir}", "--dest-dir", "{dir}/out"]).expect(1);
    assert!(run.stderr.contains("does not exist"), "{}", run.stderr);
}
