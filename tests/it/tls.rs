//! `create manifests` over TLS against local servers whose certificate is wrong on purpose (no
//! OpenStack needed): another CA, an expired certificate, one for another host name. Each fails
//! with one line naming the host, the verifier's reason and the fix, and writes nothing.

use testkit::create::CreateManifests;
use testkit::tls::{TestCa, TlsServer, Validity};

use crate::support::{Test, tree};

#[tokio::test(flavor = "multi_thread")]
async fn another_ca_an_expired_or_a_misnamed_certificate_is_named_and_nothing_is_written() {
    let ca = TestCa::new("the cloud's CA");
    let other = TestCa::new("another CA");
    let cases = [
        (
            &other,
            ca.server(&["127.0.0.1"], Validity::Now),
            "certificate signed by an unknown authority",
        ),
        (&ca, ca.server(&["127.0.0.1"], Validity::Expired), "certificate expired or not yet valid"),
        (
            &ca,
            ca.server(&["ccm.example.invalid"], Validity::Now),
            "certificate not valid for this host name",
        ),
    ];
    for (trusted, (cert, key), reason) in cases {
        let server = TlsServer::start(&cert, &key).await;
        let config = testkit::install_config::text(&testkit::install_config::openstack(
            "tls",
            "9a1b0c2d-0000-4000-8000-000000000001",
        ));
        let t = Test::new().file("install-config.yaml", &config).file("ca.pem", &trusted.pem());
        let clouds = format!(
            "clouds:\n  tls:\n    auth:\n      auth_url: https://127.0.0.1:{}/v3\n      \
             application_credential_id: id\n      application_credential_secret: s\n    \
             auth_type: v3applicationcredential\n    cacert: {}\n",
            server.port,
            t.dir().join("ca.pem").display()
        );
        let t = t.file("clouds.yaml", &clouds);
        let clouds_path = t.dir().join("clouds.yaml").display().to_string();
        let t = t.env("OS_CLIENT_CONFIG_FILE", &clouds_path).create(&CreateManifests::online());
        let before = tree(&t.dir());
        let t2 = &t;
        let err = tokio::task::block_in_place(|| t2.expect(1)).stderr;
        let line = format!(
            "TLS with 127.0.0.1:{} failed: {reason} (invalid peer certificate: ",
            server.port
        );
        assert!(err.contains(&line), "{err}");
        assert!(
            err.contains("verify: false in clouds.yaml to skip verification (unsafe)"),
            "{err}"
        );
        assert_eq!(tree(&t.dir()), before, "nothing may be written");
    }
}
