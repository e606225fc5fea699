//! The IBM Cloud account looked up from `IC_API_KEY` through IAM, as `create manifests` does
//! when neither `--offline` nor `--ibm-account-id` is given; IAM is [`FakeIam`].

use testkit::create::CreateManifests;

use crate::fake_iam::FakeIam;
use crate::platforms::with_credentials;
use crate::support::{Test, outputs, tree};

/// The key `with_credentials` exports as `IC_API_KEY`, and the account the fake gives it.
const KEY: &str = "example-ibm-key-DO-NOT-LOG";
const ACCOUNT: &str = "fedcba9876543210fedcba9876543210";

/// The platform's example with its `IAM` service endpoint pointing at `iam_url`, and `ca` as
/// its `additionalTrustBundle`.
fn example_with_iam(platform: &str, iam_url: &str, ca: Option<&str>) -> Test {
    let t = Test::new().example(platform);
    let head = format!("platform:\n  {platform}:\n");
    let mut config = t.read("install-config.yaml").replace(
        &head,
        &format!("{head}    serviceEndpoints:\n    - name: IAM\n      url: {iam_url}\n"),
    );
    if let Some(ca) = ca {
        let indented: String = ca.lines().map(|l| format!("  {l}\n")).collect();
        config = format!("additionalTrustBundle: |\n{indented}{config}");
    }
    with_credentials(t.file("install-config.yaml", &config)).env("NO_PROXY", "127.0.0.1")
}

fn create(t: Test, extra: &[&str]) -> Test {
    t.create(&CreateManifests::online().flags(extra))
}

#[test]
fn the_account_is_the_api_keys_own_and_matches_the_offline_run() {
    for platform in ["ibmcloud", "powervs"] {
        let iam = FakeIam::start(&[(KEY, ACCOUNT), ("another-key", "0000")]);
        let online = create(example_with_iam(platform, iam.url(), Some(iam.ca())), &[]);
        let run = online.expect(0);

        let config = online.read("manifests/cloud-provider-config.yaml");
        assert!(config.contains(&format!("accountID = {ACCOUNT}\n")), "{platform}: {config}");
        assert!(config.contains(&format!("g2workerServiceAccountID = {ACCOUNT}\n")), "{config}");
        assert!(run.stderr.contains(&format!("IBM Cloud account {ACCOUNT}")), "{}", run.stderr);
        for secret in [KEY, "eyJfake"] {
            assert!(!run.stderr.contains(secret), "{platform}: {secret} logged: {}", run.stderr);
            assert!(!run.stdout.contains(secret), "{platform}: {secret} printed");
        }

        let mut requests = iam.requests();
        let calls: Vec<(&str, &str)> =
            requests.iter().map(|r| (r.method.as_str(), r.path.as_str())).collect();
        let lookup = [("POST", "/identity/token"), ("GET", "/v1/apikeys/details")];
        if platform == "ibmcloud" {
            // The service endpoint is HEADed first (reachable: a 404 will do); PowerVS has no check.
            assert_eq!(calls, [&[("HEAD", "/")][..], &lookup].concat(), "{platform}");
            requests.remove(0);
        } else {
            assert_eq!(calls, lookup, "{platform}");
        }
        assert_eq!(
            requests[0].body,
            format!("grant_type=urn%3Aibm%3Aparams%3Aoauth%3Agrant-type%3Aapikey&apikey={KEY}")
        );
        assert_eq!(requests[1].headers["iam-apikey"], KEY);
        assert!(requests[1].headers["authorization"].starts_with("Bearer eyJfake."));
        let online_requests = iam.requests().len();

        let offline = create(
            example_with_iam(platform, iam.url(), Some(iam.ca())),
            &["--offline", "--ibm-account-id", ACCOUNT],
        );
        offline.expect(0);
        assert_eq!(iam.requests().len(), online_requests, "{platform}: the offline run asked IAM");
        // Same outputs (minted keys aside) as when the account is given.
        assert_eq!(outputs(&offline.dir()), outputs(&online.dir()), "{platform}");
    }
}

#[test]
fn a_refused_or_unreachable_iam_stops_before_anything_is_written() {
    let iam = FakeIam::start(&[("some-other-key", ACCOUNT)]);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("https://{}", listener.local_addr().unwrap())
    };
    let host = iam.url().trim_start_matches("https://").to_owned();
    let untrusted = format!(
        "TLS with {host} failed: certificate signed by an unknown authority (invalid peer \
         certificate: UnknownIssuer); set additionalTrustBundle in install-config.yaml to the CA \
         bundle that signed it"
    );
    for (url, ca, expected) in [
        (
            iam.url(),
            Some(iam.ca()),
            "IAM answered HTTP 400: Provided API key could not be found. (BXNIM0415E)",
        ),
        (iam.url(), None, untrusted.as_str()),
        (closed.as_str(), None, "error sending request"),
    ] {
        // PowerVS: IBM Cloud's own overrides are HEADed before the lookup (the next test).
        let t = create(example_with_iam("powervs", url, ca), &[]);
        let before = tree(&t.dir());
        let run = t.expect(1);
        let lookup = format!("could not look up the IBM Cloud account of IC_API_KEY at {url}");
        assert!(run.stderr.contains(&lookup), "{}", run.stderr);
        assert!(run.stderr.contains(expected), "{}", run.stderr);
        assert!(run.stderr.contains("--ibm-account-id"), "{}", run.stderr);
        assert!(!run.stderr.contains(KEY), "the key was logged: {}", run.stderr);
        assert_eq!(tree(&t.dir()), before, "nothing may be written");
    }
}

#[test]
fn ibm_cloud_service_endpoints_that_do_not_answer_are_refused_in_the_installers_words() {
    let iam = FakeIam::start(&[(KEY, ACCOUNT)]);
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let host = iam.url().trim_start_matches("https://").to_owned();
    for (url, ca, reason) in [
        (closed.as_str(), Some(iam.ca()), "error sending request".to_owned()),
        (iam.url(), None, format!("TLS with {host} failed: certificate signed by an unknown")),
    ] {
        let t = create(example_with_iam("ibmcloud", url, ca), &[]);
        let before = tree(&t.dir());
        let run = t.expect(1);
        let head = format!(
            "platform.ibmcloud.serviceEndpoints[0].url: Invalid value: \"{url}\": Head \"{url}\": "
        );
        assert!(run.stderr.contains(&format!("{head}{reason}")), "{}", run.stderr);
        assert!(!run.stderr.contains("could not look up"), "checked first: {}", run.stderr);
        assert!(!run.stderr.contains(KEY), "the key was logged: {}", run.stderr);
        assert_eq!(tree(&t.dir()), before, "nothing may be written");
    }
    assert!(iam.requests().is_empty(), "nothing reached IAM: {:?}", iam.requests().len());
    // Offline, nothing is asked: the account comes from the flag.
    let offline = create(
        example_with_iam("ibmcloud", &closed, None),
        &["--offline", "--ibm-account-id", ACCOUNT],
    );
    offline.expect(0);
}
