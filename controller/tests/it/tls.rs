//! The controller over TLS. Against the HTTPS front of the test stack (scripts/openstack/tls.sh;
//! ignored by default, scripts/test.sh runs them): the stack's CA from clouds.yaml initializes a
//! node; no CA or another CA fails with one line naming the host, the reason and the fix, and
//! /readyz says why; `tls-insecure = true` connects with a warning. Against a local TLS server
//! (no OpenStack needed): an expired certificate and one for another host name are named as such.

use std::time::Duration;

use testkit::kube::{NodeFixture, is_tainted};
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;
use testkit::tls::{TestCa, TlsServer, Validity};

use crate::support::{Process, https, scene, start_ccm};

const WAIT: Duration = Duration::from_secs(60);

/// `[Global]` with the stack's password credentials at `auth_url`, and `extra` lines.
fn password_conf(env: &StackEnv, auth_url: &str, extra: &str) -> String {
    format!(
        "[Global]\nauth-url = {auth_url}\nusername = {}\npassword = {}\ntenant-name = {}\n\
         domain-name = {}\nregion = {}\n{extra}",
        env["OPENSTACK_USER"],
        env["OPENSTACK_PASSWORD"],
        env["OPENSTACK_PROJECT"],
        env["OPENSTACK_DOMAIN"],
        env["OPENSTACK_TLS_REGION"]
    )
}

/// The controller with no Kubernetes API to speak of (the login is what is tested).
fn start_alone(conf: &str) -> (Process, u16, tempfile::TempDir) {
    start_ccm("http://127.0.0.1:9", conf, &["--controllers=cloud-node", "--leader-elect=false"])
}

/// /readyz's status and body.
async fn readyz(port: u16) -> (u16, String) {
    let response = https().get(format!("https://127.0.0.1:{port}/readyz")).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn over_https_with_the_stacks_ca_from_clouds_yaml_a_node_is_initialized() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let name = format!("occm-tls-{}", std::process::id());
    let server = scene(&env, &["server-create", "--name", &name, "--wait-active"]).await;
    let fake = testkit::cluster::Cluster::start();
    fake.create("v1", "nodes", "", NodeFixture::tainted(&name).build());
    let conf = format!(
        "[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = {}\n",
        env["OPENSTACK_CLOUDS_YAML"], env["OPENSTACK_CLOUD_TLS"]
    );
    let (process, port, _dir) =
        start_ccm(&fake.url(), &conf, &["--controllers=cloud-node", "--leader-elect=false"]);
    process.wait_line("authenticated to OpenStack", WAIT).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let node = fake.get("v1", "nodes", "", &name).unwrap();
        if !is_tainted(&node) {
            assert_eq!(
                node["spec"]["providerID"],
                format!("openstack:///{}", server["id"].as_str().unwrap())
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not initialized:\n{}", process.log());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(readyz(port).await.0, 200);
    assert!(!process.log().contains("tls-insecure"), "{}", process.log());
    scene(&env, &["server-delete", server["id"].as_str().unwrap(), "--wait"]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn without_the_ca_or_with_another_the_error_names_host_reason_and_fix() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let url = &env["OPENSTACK_TLS_AUTH_URL"];
    let host = url.trim_start_matches("https://").split('/').next().unwrap().to_owned();
    let other = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(other.path(), TestCa::new("not the stack's CA").pem()).unwrap();
    let confs = [
        password_conf(&env, url, ""),
        password_conf(&env, url, &format!("ca-file = {}\n", other.path().display())),
    ];
    for conf in confs {
        let (process, port, _dir) = start_alone(&conf);
        let line = process.wait_line("cannot authenticate to OpenStack", WAIT).await;
        let expected = format!(
            "TLS with {host} failed: certificate signed by an unknown authority \
             (invalid peer certificate: UnknownIssuer); set [Global] ca-file (cacert in \
             clouds.yaml) to the CA bundle that signed it"
        );
        assert!(line.contains(&expected), "{line}");
        let (status, body) = readyz(port).await;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("certificate signed by an unknown authority"), "{body}");
        // Backoff, not a storm: the retries are 1, 2, 4 s apart.
        process.wait_line("retry_in=4s", Duration::from_secs(10)).await;
        let attempts = process.log().matches("cannot authenticate").count();
        assert!(attempts <= 4, "{attempts} attempts in about 3 s:\n{}", process.log());
        assert!(!process.log().contains(&env["OPENSTACK_PASSWORD"]), "a password reached the log");
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn tls_insecure_true_connects_without_the_ca_and_says_so() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let conf = password_conf(&env, &env["OPENSTACK_TLS_AUTH_URL"], "tls-insecure = true\n");
    let (process, port, _dir) = start_alone(&conf);
    process
        .wait_line(
            "tls-insecure = true: the certificates of OpenStack's endpoints are not verified",
            WAIT,
        )
        .await;
    process.wait_line("authenticated to OpenStack", WAIT).await;
    assert_eq!(readyz(port).await.0, 200);
}

#[tokio::test]
async fn an_expired_certificate_and_one_for_another_host_are_named_as_such() {
    let ca = TestCa::new("test CA");
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let cases = [
        (ca.server(&["127.0.0.1"], Validity::Expired), "certificate expired or not yet valid"),
        (
            ca.server(&["ccm.example.invalid"], Validity::Now),
            "certificate not valid for this host name",
        ),
    ];
    for ((cert, key), reason) in cases {
        let server = TlsServer::start(&cert, &key).await;
        let conf = format!(
            "[Global]\nauth-url = https://127.0.0.1:{}/v3\nusername = u\npassword = p\n\
             tenant-name = t\ndomain-name = Default\nca-file = {}\n",
            server.port,
            ca_file.display()
        );
        let (process, _port, _dir) = start_alone(&conf);
        let line = process.wait_line("cannot authenticate to OpenStack", WAIT).await;
        let host = format!(
            "TLS with 127.0.0.1:{} failed: {reason} (invalid peer certificate: ",
            server.port
        );
        assert!(line.contains(&host), "{line}");
        assert!(line.contains("tls-insecure = true to skip verification (unsafe)"), "{line}");
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn the_ca_in_the_credentials_secret_is_rotated_without_a_restart() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    // The installer's shape: clouds.yaml and the CA bundle in the Secret, the cloud named in
    // cloud.conf; this clouds.yaml names no cacert file, so only the Secret's bundle is trusted.
    let clouds_yaml = format!(
        "clouds:\n  tls:\n    auth:\n      auth_url: {}\n      username: {}\n      password: {}\n      \
         project_name: {}\n      user_domain_name: {}\n      project_domain_name: {}\n    \
         region_name: {}\n",
        env["OPENSTACK_TLS_AUTH_URL"],
        env["OPENSTACK_USER"],
        env["OPENSTACK_PASSWORD"],
        env["OPENSTACK_PROJECT"],
        env["OPENSTACK_DOMAIN"],
        env["OPENSTACK_DOMAIN"],
        env["OPENSTACK_TLS_REGION"]
    );
    let b64 = |text: &str| {
        let secret = k8s_openapi::api::core::v1::Secret {
            data: Some(
                [("x".to_owned(), k8s_openapi::ByteString(text.as_bytes().to_vec()))].into(),
            ),
            ..Default::default()
        };
        serde_json::to_value(secret).unwrap()["data"]["x"].clone()
    };
    let wrong = TestCa::new("an old CA").pem();
    let fake = fake_kube_apiserver::FakeApiServer::start().await.unwrap();
    let secret = serde_json::json!({
        "metadata": {"name": "openstack-credentials"},
        "data": {"clouds.yaml": b64(&clouds_yaml), "cacert": b64(&wrong)},
    });
    fake.create("v1", "secrets", "kube-system", secret);
    let conf = "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n\
                cloud = tls\n";
    let (process, port, _dir) =
        start_ccm(&fake.url(), conf, &["--controllers=cloud-node", "--leader-elect=false"]);
    process.wait_line("certificate signed by an unknown authority", WAIT).await;
    assert_eq!(readyz(port).await.0, 503);

    let right = std::fs::read_to_string(&env["OPENSTACK_CA_FILE"]).unwrap();
    let rotated = serde_json::json!({"data": {"cacert": b64(&right)}});
    fake.patch("v1", "secrets", "kube-system", "openstack-credentials", rotated);
    process.wait_line("authenticated to OpenStack", WAIT).await;
    assert_eq!(readyz(port).await.0, 200);
    assert!(!process.log().contains(&env["OPENSTACK_PASSWORD"]), "a password reached the log");
}
