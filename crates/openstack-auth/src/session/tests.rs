use std::time::Duration;

use super::*;
use crate::Origin;

const SECOND: Duration = Duration::from_secs(1);

fn password() -> Credentials {
    Credentials {
        auth_url: Some("http://127.0.0.1:9/v3".into()),
        username: Some("u".into()),
        password: Some("p".to_owned().into()),
        ..Credentials::default()
    }
}

fn ca_pem(name: &str) -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&rcgen::KeyPair::generate().unwrap()).unwrap().pem()
}

async fn error(c: &Credentials) -> String {
    connect(c, SECOND).await.unwrap_err().to_string()
}

#[tokio::test]
async fn unusable_credentials_are_reported_before_any_call() {
    assert_eq!(error(&Credentials { auth_url: None, ..password() }).await, "auth-url is not set");
    let nothing = Credentials { password: None, ..password() };
    assert!(error(&nothing).await.contains("no password, token"));
    let trust = Credentials { trust_id: Some("t".into()), ..password() };
    assert!(error(&trust).await.contains("trust"));
    let by_id = Credentials { username: None, user_id: Some("uid".into()), ..password() };
    assert!(error(&by_id).await.contains("needs username"));
}

#[tokio::test]
async fn keys_are_named_as_their_source_spells_them() {
    let yaml = Credentials { origin: Origin::CloudsYaml, auth_url: None, ..password() };
    assert_eq!(error(&yaml).await, "auth_url is not set");
    let by_id = Credentials {
        origin: Origin::CloudsYaml,
        username: None,
        user_id: Some("uid".into()),
        ..password()
    };
    assert_eq!(
        error(&by_id).await,
        "password authentication needs username (user_id alone is not supported)"
    );
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem").display().to_string();
    let ca =
        Credentials { origin: Origin::CloudsYaml, ca_file: Some(missing.clone()), ..password() };
    assert!(error(&ca).await.starts_with(&format!("cacert {missing}: ")));
}

#[tokio::test]
async fn an_explicit_auth_type_wins_over_what_is_set() {
    let token_only =
        Credentials { auth_type: Some("v3token".into()), origin: Origin::CloudsYaml, ..password() };
    assert_eq!(error(&token_only).await, "token is not set");
    let unknown = Credentials { auth_type: Some("v3oidc".into()), ..password() };
    assert!(error(&unknown).await.contains("auth-type v3oidc is not supported"));
    let secret_first =
        Credentials { application_credential_secret: Some("s".to_owned().into()), ..password() };
    assert!(error(&secret_first).await.contains("needs application-credential-id or"));
}

#[tokio::test]
async fn a_bad_ca_file_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("ca.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    for path in [garbage, dir.path().join("missing.pem")] {
        let creds = Credentials { ca_file: Some(path.display().to_string()), ..password() };
        let err = error(&creds).await;
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
}

#[test]
fn every_certificate_of_both_bundles_is_read_and_a_broken_one_is_named() {
    let both = [ca_pem("a"), ca_pem("b")].concat();
    let ok = Credentials {
        ca_bundle: Some(both.clone()),
        trust_bundle: Some(both),
        ..Credentials::default()
    };
    assert!(http_client(&ok, SECOND).is_ok());
    let broken = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
    let bad = Credentials {
        origin: Origin::CloudsYaml,
        trust_bundle: Some(broken.into()),
        ..Credentials::default()
    };
    let err = http_client(&bad, SECOND).unwrap_err().to_string();
    assert!(err.starts_with("additionalTrustBundle is not a PEM bundle"), "{err}");
}

#[tokio::test]
async fn keystone_unreachable_is_a_call_error_not_an_auth_error() {
    assert!(matches!(connect(&password(), SECOND).await, Err(Error::Call(_))));
}

#[test]
fn the_project_domain_falls_back_to_the_shared_domain_then_default() {
    let named = |c: &Credentials| format!("{:?}", project_scope(c).map(|(_, d)| d));
    let project = Credentials { project_name: Some("p".into()), ..Credentials::default() };
    assert!(named(&project).contains("Default"), "{}", named(&project));
    let shared = Credentials { domain_name: Some("corp".into()), ..project.clone() };
    assert!(named(&shared).contains("corp"), "{}", named(&shared));
    let own = Credentials { project_domain_id: Some("d1".into()), ..shared };
    assert!(named(&own).contains("d1"), "{}", named(&own));
    assert_eq!(project_scope(&Credentials::default()).map(|_| ()), None);
}

#[test]
fn endpoint_overrides_answer_to_both_spellings_and_a_bad_url_is_named() {
    let mut c = Credentials::default();
    c.endpoint_overrides.insert("load_balancer".into(), "https://lb.example/v2".into());
    let overrides = endpoint_overrides(&c).unwrap();
    assert!(overrides.contains_key("load-balancer") && overrides.contains_key("load_balancer"));
    c.endpoint_overrides.insert("network".into(), "not a url".into());
    let err = endpoint_overrides(&c).unwrap_err().to_string();
    assert!(err.starts_with("network_endpoint_override \"not a url\""), "{err}");
}

/// Writes `text` to `dir/name`; the path.
fn file(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// See: issue 36 (reqwest's `Identity` refuses it: rustls parses it as X.509 v3).
#[tokio::test]
async fn a_v1_client_certificate_is_presented_to_a_server_that_requires_one() {
    use testkit::openssl::{ClientAuthServer, OpensslCa};
    use testkit::tls::{TestCa, Validity};

    let client_ca = OpensslCa::new("client CA");
    let (cert, key) = client_ca.v1_client("occm", &[]);
    let server_ca = TestCa::new("Keystone CA");
    let (server_cert, server_key) = server_ca.server(&["127.0.0.1"], Validity::Now);
    let server =
        ClientAuthServer::start(&server_cert, &server_key, &client_ca.pem(), &[("v3", "{}")]);
    let dir = tempfile::tempdir().unwrap();
    let c = Credentials {
        ca_bundle: Some(server_ca.pem()),
        cert_file: Some(file(dir.path(), "client.crt", &cert)),
        key_file: Some(file(dir.path(), "client.key", &key)),
        ..password()
    };
    let client = http_client(&c, SECOND).unwrap_or_else(|e| panic!("{e}"));
    let url = format!("https://127.0.0.1:{}/v3", server.port);
    let answer = client.get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "{}");
    assert!(server.log().contains("depth=0 CN = occm"), "{}", server.log());
    drop(client); // s_server serves one connection at a time

    // Verification off takes the same identity.
    let insecure = Credentials { ca_bundle: None, tls_insecure: true, ..c };
    let answer = http_client(&insecure, SECOND).unwrap().get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 200);
}

#[test]
fn a_client_key_not_of_the_certificate_is_named_with_both_files() {
    let key_pem = |key: &rcgen::KeyPair| key.serialize_pem();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["occm".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap().pem();
    let dir = tempfile::tempdir().unwrap();
    let (cert, other) = (
        file(dir.path(), "client.crt", &cert),
        file(dir.path(), "other.key", &key_pem(&rcgen::KeyPair::generate().unwrap())),
    );
    let c = Credentials {
        origin: Origin::CloudsYaml,
        cert_file: Some(cert.clone()),
        key_file: Some(other.clone()),
        ..password()
    };
    assert_eq!(
        http_client(&c, SECOND).unwrap_err().to_string(),
        format!(
            "cert {cert}, key {other}: the private key does not belong to the certificate \
             (their public keys differ)"
        )
    );
}
