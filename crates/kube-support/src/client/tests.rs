use std::path::{Path, PathBuf};

use base64::Engine as _;
use ccm_formats::kubeconfig::{ClientCertificate, Kubeconfig};
use ccm_tls_explain::chain;
use testkit::openssl::{ClientAuthServer, OpensslCa};
use testkit::tls::{TestCa, Validity};

/// What `GET /version` answers (kube-apiserver's fields).
const VERSION: &str = r#"{"major": "1", "minor": "37", "gitVersion": "v1.37.0-v1cert",
  "gitCommit": "0", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
  "goVersion": "go1.25", "compiler": "gc", "platform": "linux/amd64"}"#;

/// An API server stand-in that, like kube-apiserver, takes client certificates of any X.509
/// version signed by `client_ca` and no connection without one; and the CA of its own
/// certificate (for 127.0.0.1).
fn api_server(client_ca: &OpensslCa) -> (ClientAuthServer, TestCa) {
    let server_ca = TestCa::new("API server CA");
    let (cert, key) = server_ca.server(&["127.0.0.1"], Validity::Now);
    let server = ClientAuthServer::start(&cert, &key, &client_ca.pem(), &[("version", VERSION)]);
    (server, server_ca)
}

/// A kubeconfig in `dir` for `server`, trusting `server_ca`, as `user` with `client`.
fn kubeconfig(
    dir: &Path,
    server: &ClientAuthServer,
    server_ca: &TestCa,
    client: Option<ClientCertificate<'_>>,
) -> PathBuf {
    let url = format!("https://127.0.0.1:{}", server.port);
    let ca = server_ca.pem();
    let text = Kubeconfig { server: &url, server_ca: Some(&ca), user: "v1-user", client };
    let path = dir.join("v1.kubeconfig");
    std::fs::write(&path, text.to_yaml().expect("a kubeconfig")).expect("write the kubeconfig");
    path
}

async fn client(path: &Path) -> Result<::kube::Client, super::Error> {
    super::client(Some(path)).await
}

/// See: issue 36.
#[tokio::test]
async fn a_v1_client_certificate_in_the_kubeconfig_is_presented_and_accepted() {
    let client_ca = OpensslCa::new("client CA");
    let (cert, key) = client_ca.v1_client("v1-user", &["system:masters"]);
    let (server, server_ca) = api_server(&client_ca);
    let dir = tempfile::tempdir().unwrap();
    let identity = ClientCertificate { cert: &cert, key: &key };
    let path = kubeconfig(dir.path(), &server, &server_ca, Some(identity));

    let client = client(&path).await.unwrap_or_else(|e| panic!("{}", chain(&e)));
    let version = client.apiserver_version().await.unwrap_or_else(|e| panic!("{}", chain(&e)));
    assert_eq!(version.git_version, "v1.37.0-v1cert");
    let log = server.log();
    assert!(log.contains("depth=0 CN = v1-user, O = system:masters"), "{log}");
}

#[tokio::test]
async fn the_stand_in_refuses_a_client_without_a_certificate() {
    let client_ca = OpensslCa::new("client CA");
    let (server, server_ca) = api_server(&client_ca);
    let dir = tempfile::tempdir().unwrap();
    let path = kubeconfig(dir.path(), &server, &server_ca, None);
    let client = client(&path).await.unwrap_or_else(|e| panic!("{}", chain(&e)));
    let err = client.apiserver_version().await.unwrap_err();
    assert!(chain(&err).contains("CertificateRequired"), "{}", chain(&err));
}

#[tokio::test]
async fn a_key_not_of_the_certificate_is_said_once_naming_the_kubeconfig_and_user() {
    let client_ca = OpensslCa::new("client CA");
    let (cert, _) = client_ca.v1_client("v1-user", &[]);
    let (_, other_key) = client_ca.v1_client("other", &[]);
    let (server, server_ca) = api_server(&client_ca);
    let dir = tempfile::tempdir().unwrap();
    let identity = ClientCertificate { cert: &cert, key: &other_key };
    let path = kubeconfig(dir.path(), &server, &server_ca, Some(identity));
    let Err(err) = client(&path).await else { panic!("a client with another's key") };
    assert_eq!(
        chain(&err),
        format!(
            "cannot build the Kubernetes client from kubeconfig {} (user \"v1-user\"): \
             client-certificate and client-key: the private key does not belong to the \
             certificate (their public keys differ)",
            path.display()
        )
    );
}

/// An exec plugin (a script in `dir`) answering with `cert` and `key` as its credential.
fn exec_plugin(dir: &Path, cert: &str, key: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": cert, "clientKeyData": key},
    });
    std::fs::write(dir.join("credential.json"), credential.to_string()).unwrap();
    let plugin = dir.join("plugin.sh");
    std::fs::write(&plugin, format!("#!/bin/sh\ncat {}\n", dir.join("credential.json").display()))
        .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    plugin
}

/// kube-rs runs an exec plugin and loads its certificate itself: a v1 one cannot be
/// presented, and the one line says which file, which user, what and how to reissue it.
#[tokio::test]
async fn an_exec_plugins_v1_certificate_is_refused_in_one_line_saying_how_to_reissue() {
    let client_ca = OpensslCa::new("client CA");
    let (cert, key) = client_ca.v1_client("v1-user", &[]);
    let (server, server_ca) = api_server(&client_ca);
    let dir = tempfile::tempdir().unwrap();
    let plugin = exec_plugin(dir.path(), &cert, &key);
    let text = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": format!("https://127.0.0.1:{}", server.port),
            "certificate-authority-data": base64::engine::general_purpose::STANDARD
                .encode(server_ca.pem()),
        }}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "plugged"}}],
        "current-context": "x",
        "users": [{"name": "plugged", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": plugin.display().to_string(),
            "interactiveMode": "Never",
        }}}],
    });
    let path = dir.path().join("exec.kubeconfig");
    std::fs::write(&path, text.to_string()).unwrap();
    let Err(err) = client(&path).await else { panic!("kube-rs presents no v1 certificate") };
    assert_eq!(
        chain(&err),
        format!(
            "cannot build the Kubernetes client from kubeconfig {} (user \"plugged\"): the exec \
             plugin's client certificate is X.509 v1, which kube-rs cannot present: have it \
             issued as v3 (openssl x509 -req … -extfile <(printf \
             'extendedKeyUsage=clientAuth'))",
            path.display()
        )
    );
}
