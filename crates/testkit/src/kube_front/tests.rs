use std::time::Instant;

use ccm_formats::kubeconfig::{ClientCertificate, Kubeconfig};
use fake_kube_apiserver::FakeApiServer;
use futures::StreamExt as _;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, WatchEvent, WatchParams,
};
use rcgen::{CertificateParams, KeyPair};

use super::delay::{Read, read, uniform};
use super::*;
use crate::kube::NodeFixture;
use crate::tls::{TestCa, TlsServer, Validity};

const SLOW: Duration = Duration::from_secs(1);

async fn front_of(fake: &FakeApiServer, delay: Delay) -> KubeFront {
    KubeFront::start(Upstream::plain(&fake.url()), delay).await
}

/// Nodes through a kube client built from the front's kubeconfig, as the CCM builds one.
async fn nodes(front: &KubeFront, dir: &Path) -> Api<DynamicObject> {
    nodes_with(front, dir, true).await
}

/// [`nodes`] with kube's default retry of 429, 503 and 504 on or off: on, a client retries a
/// failure up to 15 times with a backoff growing to minutes (`RetryPolicy::server_retry`), and
/// a test of the failure itself would wait for all of them.
async fn nodes_with(front: &KubeFront, dir: &Path, retry: bool) -> Api<DynamicObject> {
    let kubeconfig = kube::config::Kubeconfig::read_from(front.kubeconfig(dir))
        .expect("the front's kubeconfig reads");
    let options = kube::config::KubeConfigOptions::default();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("a config from the front's kubeconfig");
    config.default_retry = retry;
    let client = kube::Client::try_from(config).expect("a client for the front");
    let gvk = GroupVersionKind::gvk("", "v1", "Node");
    Api::all_with(client, &ApiResource::from_gvk_with_plural(&gvk, "nodes"))
}

fn names(list: &[DynamicObject]) -> Vec<String> {
    list.iter().filter_map(|node| node.metadata.name.clone()).collect()
}

#[test]
fn only_collection_gets_are_lists_and_true_watch_queries_are_watches() {
    let cases = [
        ("GET", "/api/v1/nodes?limit=100&resourceVersion=0", Some(Read::List("nodes"))),
        ("GET", "/api/v1/nodes", Some(Read::List("nodes"))),
        ("GET", "/api/v1/nodes?watch=false", Some(Read::List("nodes"))),
        ("GET", "/api/v1/nodes/foo", None),
        ("GET", "/api/v1/nodes/foo/status", None),
        ("GET", "/api/v1/nodes?watch=true&resourceVersion=5", Some(Read::Watch("nodes"))),
        ("GET", "/api/v1/nodes?fieldSelector=a%3Db&watch=1", Some(Read::Watch("nodes"))),
        ("GET", "/api/v1/watch/nodes", Some(Read::Watch("nodes"))),
        ("GET", "/api/v1/namespaces/ns/services", Some(Read::List("services"))),
        ("GET", "/api/v1/namespaces/ns/services/lb", None),
        ("GET", "/api/v1/namespaces", Some(Read::List("namespaces"))),
        ("GET", "/api/v1/namespaces/ns", None),
        ("GET", "/api/v1/namespaces/ns/status", None),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases", Some(Read::List("leases"))),
        ("GET", "/apis/discovery.k8s.io/v1/endpointslices", Some(Read::List("endpointslices"))),
        ("POST", "/api/v1/nodes", None),
        ("PATCH", "/api/v1/nodes/foo/status", None),
        ("GET", "/api/v1", None),
        ("GET", "/apis/coordination.k8s.io/v1", None),
        ("GET", "/version", None),
    ];
    for (method, target, expected) in cases {
        assert_eq!(read(method, target), expected, "{method} {target}");
    }
}

#[test]
fn lists_of_holds_that_resources_lists_only() {
    let mut delay = Delay::lists_of("nodes", SLOW);
    assert_eq!(delay.choose("GET", "/api/v1/nodes?limit=500"), Some(SLOW));
    assert_eq!(delay.choose("GET", "/api/v1/nodes/foo"), None);
    assert_eq!(delay.choose("GET", "/api/v1/nodes?watch=true"), None);
    assert_eq!(delay.choose("GET", "/api/v1/namespaces/ns/services"), None);
    assert_eq!(delay.choose("PATCH", "/api/v1/nodes/foo"), None);
    assert_eq!(Delay::none().choose("GET", "/api/v1/nodes"), None);
}

#[test]
fn watch_events_of_lags_that_resources_watches_only() {
    let mut delay = Delay::watch_events_of("services", SLOW);
    let watch = "/api/v1/services?watch=true&resourceVersion=7";
    assert_eq!(delay.each_piece("GET", watch), Some(SLOW));
    assert_eq!(delay.each_piece("GET", "/api/v1/namespaces/ns/services?watch=1"), Some(SLOW));
    assert_eq!(delay.choose("GET", watch), None, "the headers come at once");
    assert_eq!(delay.each_piece("GET", "/api/v1/services"), None);
    assert_eq!(delay.each_piece("GET", "/api/v1/nodes?watch=true"), None);
    assert_eq!(delay.each_piece("PATCH", "/api/v1/namespaces/ns/services/web"), None);
    assert_eq!(Delay::none().each_piece("GET", watch), None);
}

#[tokio::test]
async fn a_lagging_watch_passes_an_event_on_late_and_a_get_reads_the_write_at_once() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    let front = front_of(&fake, Delay::watch_events_of("nodes", SLOW)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes(&front, dir.path()).await;
    let list = nodes.list(&ListParams::default()).await.expect("a list");
    let version = list.metadata.resource_version.expect("a list's resourceVersion");
    let watch = nodes.watch(&WatchParams::default().timeout(60), &version).await;
    let mut events = watch.expect("a watch").boxed();

    let created = Instant::now();
    fake.create("v1", "nodes", "", NodeFixture::tainted("late").build());
    nodes.get("late").await.expect("the new node, read at once");
    let added = async {
        while let Some(event) = events.next().await {
            if let WatchEvent::Added(node) = event.expect("a watch event") {
                return node.metadata.name;
            }
        }
        None
    };
    let added = tokio::time::timeout(Duration::from_secs(10), added).await;
    assert_eq!(added.expect("the ADDED event within 10 s").as_deref(), Some("late"));
    assert!(created.elapsed() >= SLOW, "passed on after {:?}", created.elapsed());
    assert_eq!(front.delayed(), 1, "the watch, counted once: {:?}", front.requests());
}

#[test]
fn a_random_delay_repeats_with_its_seed() {
    let max = Duration::from_millis(500);
    let requests = [
        "/api/v1/nodes?limit=500",
        "/api/v1/nodes/foo",
        "/api/v1/nodes?watch=true",
        "/api/v1/namespaces/ns/services",
        "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lease",
        "/api/v1/services?watch=1",
    ];
    let draws = |seed| {
        let mut delay = Delay::random(max, seed);
        let rounds = requests.iter().cycle().take(60);
        rounds.map(|target| delay.choose("GET", target)).collect::<Vec<_>>()
    };
    let first = draws(42);
    assert_eq!(first, draws(42), "one seed, one sequence");
    assert_ne!(first, draws(43), "another seed, another sequence");
    let held: Vec<Duration> = first.iter().flatten().copied().collect();
    assert_eq!(held.len(), 40, "lists and watches are held, gets are not: {first:?}");
    assert!(held.iter().all(|d| *d <= max), "{held:?}");
    // Spread over the range, not one value.
    assert!(held.iter().any(|d| *d < max / 4) && held.iter().any(|d| *d > max * 3 / 4));
}

#[test]
fn a_draw_covers_zero_to_max_inclusive() {
    let max = Duration::from_millis(7);
    assert_eq!(uniform(0, max), Duration::ZERO);
    assert_eq!(uniform(u64::MAX, max), max);
    assert_eq!(uniform(u64::MAX, Duration::ZERO), Duration::ZERO);
}

#[tokio::test]
async fn a_node_list_answers_late_and_a_get_at_once() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
    let front = front_of(&fake, Delay::none()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes(&front, dir.path()).await;

    let start = Instant::now();
    nodes.list(&ListParams::default()).await.expect("an undelayed list");
    assert!(start.elapsed() < SLOW, "no delay yet: {:?}", start.elapsed());
    assert_eq!(front.delayed(), 0);

    front.set_delay(Delay::lists_of("nodes", SLOW));
    let start = Instant::now();
    let list = nodes.list(&ListParams::default().limit(100)).await.expect("a delayed list");
    assert!(start.elapsed() >= SLOW, "answered after {:?}", start.elapsed());
    assert_eq!(names(&list.items), ["n1"]);
    assert_eq!(front.delayed(), 1);

    let start = Instant::now();
    nodes.get("n1").await.expect("the node");
    assert!(start.elapsed() < SLOW, "a get waited {:?}", start.elapsed());
    assert_eq!(front.delayed(), 1);

    let seen = front.requests();
    let lists = seen.iter().filter(|(m, t)| m == "GET" && t.starts_with("/api/v1/nodes?"));
    assert_eq!(lists.count(), 2, "{seen:?}");
    assert!(seen.contains(&("GET".into(), "/api/v1/nodes/n1".into())), "{seen:?}");
}

#[tokio::test]
async fn a_watch_streams_an_event_while_it_stays_open() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    let front = front_of(&fake, Delay::none()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes(&front, dir.path()).await;
    let list = nodes.list(&ListParams::default()).await.expect("a list");
    let version = list.metadata.resource_version.expect("a list's resourceVersion");

    // Open for minutes: a front that buffered would show nothing, not even the headers,
    // within the limit.
    let params = WatchParams::default().timeout(290);
    let limit = Duration::from_secs(10);
    let watch = tokio::time::timeout(limit, nodes.watch(&params, &version)).await;
    let mut events = watch.expect("the watch's headers within 10 s").expect("a watch").boxed();
    fake.create("v1", "nodes", "", NodeFixture::tainted("late").build());
    let added = tokio::time::timeout(limit, async {
        while let Some(event) = events.next().await {
            if let WatchEvent::Added(node) = event.expect("a watch event") {
                return node.metadata.name;
            }
        }
        None
    })
    .await
    .expect("the ADDED event within 10 s, while the watch is open");
    assert_eq!(added.as_deref(), Some("late"));
    let seen = front.requests();
    assert!(seen.iter().any(|(_, t)| t.contains("watch=true")), "{seen:?}");
}

#[tokio::test]
async fn a_random_delay_holds_lists_and_watches_not_gets() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
    let front = front_of(&fake, Delay::random(Duration::from_millis(50), 7)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes(&front, dir.path()).await;
    nodes.list(&ListParams::default()).await.expect("a list");
    nodes.get("n1").await.expect("a get");
    let watch = nodes.watch(&WatchParams::default().timeout(10), "0").await.expect("a watch");
    drop(watch);
    assert_eq!(front.delayed(), 2, "{:?}", front.requests());
}

#[tokio::test]
async fn the_query_body_and_content_type_reach_the_upstream_as_sent() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    let front = front_of(&fake, Delay::none()).await;
    let http = reqwest::Client::new();
    let query = "labelSelector=app%3Dweb%2Ctier%21%3Ddb&limit=5";
    let url = format!("{}/api/v1/namespaces/default/services?{query}", front.url());
    let answer = http.get(&url).bearer_auth("not-for-upstream").send().await.expect("a list");
    assert_eq!(answer.status(), 200);
    let content_type = answer.headers()[header::CONTENT_TYPE].to_str().expect("ASCII");
    assert!(content_type.starts_with("application/json"), "{content_type}");

    let service = crate::kube::load_balancer_service("default", "web", &[(80, 30080)]);
    let url = format!("{}/api/v1/namespaces/default/services", front.url());
    let body = service.to_string();
    let answer = (http.post(&url).header(header::CONTENT_TYPE, "application/json"))
        .body(body.clone())
        .send()
        .await
        .expect("a create");
    assert_eq!(answer.status(), 201, "{}", answer.text().await.unwrap_or_default());

    let seen = fake.requests();
    assert_eq!(seen[0].query, query);
    assert_eq!((seen[1].method.as_str(), seen[1].body.as_str()), ("POST", body.as_str()));
    assert_eq!(seen[1].content_type.as_deref(), Some("application/json"));
    assert!(fake.get("v1", "services", "default", "web").is_some());
}

/// A client certificate and its key, PEM, self-signed (the TLS server asks for none).
fn client_identity() -> (String, String) {
    let key = KeyPair::generate().expect("client key");
    let params = CertificateParams::new(Vec::<String>::new()).expect("client parameters");
    (params.self_signed(&key).expect("client certificate").pem(), key.serialize_pem())
}

/// A TLS upstream with a certificate for 127.0.0.1 from `ca`.
async fn tls_upstream(ca: &TestCa) -> TlsServer {
    let (cert, key) = ca.server(&["127.0.0.1"], Validity::Now);
    TlsServer::start(&cert, &key).await
}

#[tokio::test]
async fn an_upstream_kubeconfig_with_embedded_data_is_trusted_and_authenticates() {
    let ca = TestCa::new("front upstream CA");
    let server = tls_upstream(&ca).await;
    let (cert, key) = client_identity();
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("https://127.0.0.1:{}", server.port);
    let text = Kubeconfig {
        server: &url,
        server_ca: Some(&ca.pem()),
        user: "tester",
        client: Some(ClientCertificate { cert: &cert, key: &key }),
    }
    .to_yaml()
    .expect("a kubeconfig");
    let path = dir.path().join("upstream.kubeconfig");
    std::fs::write(&path, text).expect("write the kubeconfig");

    let front = KubeFront::start(Upstream::from_kubeconfig(&path), Delay::none()).await;
    let answer = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.expect("a body"), "{}");
}

#[tokio::test]
async fn an_upstream_kubeconfig_names_files_relative_to_itself() {
    let ca = TestCa::new("front upstream CA");
    let other = TestCa::new("another CA");
    let server = tls_upstream(&ca).await;
    let (cert, key) = client_identity();
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("pki")).expect("pki dir");
    for (name, pem) in [("ca.crt", ca.pem()), ("other.crt", other.pem())] {
        std::fs::write(dir.path().join("pki").join(name), pem).expect("write a CA");
    }
    std::fs::write(dir.path().join("pki/client.crt"), cert).expect("write the certificate");
    std::fs::write(dir.path().join("pki/client.key"), key).expect("write the key");
    let kubeconfig = |ca_file: &str| {
        let text = serde_saphyr::to_string(&json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {
                "server": format!("https://127.0.0.1:{}/", server.port),
                "certificate-authority": ca_file,
            }}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
            "users": [{"name": "u", "user": {
                "client-certificate": "pki/client.crt",
                "client-key": "pki/client.key",
            }}],
        }))
        .expect("a kubeconfig");
        let path = dir.path().join(format!("{ca_file}.kubeconfig").replace('/', "-"));
        std::fs::write(&path, text).expect("write the kubeconfig");
        Upstream::from_kubeconfig(&path)
    };

    let front = KubeFront::start(kubeconfig("pki/ca.crt"), Delay::none()).await;
    let answer = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
    assert_eq!(answer.status(), 200);

    // Trusting only the CA it names: the server's certificate is not another CA's.
    let front = KubeFront::start(kubeconfig("pki/other.crt"), Delay::none()).await;
    let answer = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
    assert_eq!(answer.status(), 502);
    let status: Value = answer.json().await.expect("a Status");
    let message = status["message"].as_str().expect("a message");
    assert!(message.contains("certificate"), "{message}");
}

#[test]
#[should_panic(expected = "rustls refused the CA or the client certificate of user tester")]
fn a_client_key_that_is_not_the_certificates_panics_naming_rustls() {
    let (cert, _) = client_identity();
    let (_, key) = client_identity();
    let dir = tempfile::tempdir().expect("temp dir");
    let text = Kubeconfig {
        server: "https://127.0.0.1:1",
        server_ca: None,
        user: "tester",
        client: Some(ClientCertificate { cert: &cert, key: &key }),
    }
    .to_yaml()
    .expect("a kubeconfig");
    let path = dir.path().join("mismatch.kubeconfig");
    std::fs::write(&path, text).expect("write the kubeconfig");
    Upstream::from_kubeconfig(&path);
}

#[test]
fn a_v1_client_certificate_panics_saying_rustls_takes_v3_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = crate::openssl::OpensslCa::new("ca");
    let (cert, key) = ca.v1_client("u", &[]);
    let text = Kubeconfig {
        server: "https://127.0.0.1:1",
        server_ca: Some(&ca.pem()),
        user: "v1-user",
        client: Some(ClientCertificate { cert: &cert, key: &key }),
    }
    .to_yaml()
    .expect("a kubeconfig");
    let path = dir.path().join("v1.kubeconfig");
    std::fs::write(&path, text).expect("write the kubeconfig");
    let panic = std::panic::catch_unwind(|| Upstream::from_kubeconfig(&path))
        .expect_err("rustls refuses a v1 client certificate");
    let message = panic.downcast_ref::<String>().expect("a formatted panic");
    assert!(message.contains("the client certificate is X.509 v1"), "{message}");
}

#[test]
#[should_panic(expected = "the front presents a client certificate only")]
fn a_token_user_is_refused_not_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = serde_saphyr::to_string(&json!({
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))
    .expect("a kubeconfig");
    let path = dir.path().join("token.kubeconfig");
    std::fs::write(&path, text).expect("write the kubeconfig");
    Upstream::from_kubeconfig(&path);
}

/// The API server's `Status` in a kube client's error, or a panic.
fn api_status(result: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("not an API error: {other:?}"),
    }
}

#[test]
fn a_request_names_the_resource_it_acts_on_whatever_its_verb() {
    let cases = [
        ("/api/v1/nodes", Some("nodes")),
        ("/api/v1/nodes/n1/status?fieldManager=x", Some("nodes")),
        ("/api/v1/watch/pods", Some("pods")),
        ("/api/v1/namespaces/ns/configmaps/cloud-conf", Some("configmaps")),
        ("/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", Some("leases")),
        ("/apis/config.openshift.io/v1/clusteroperators/co/status", Some("clusteroperators")),
        ("/api/v1/namespaces/ns", Some("namespaces")),
        ("/api/v1/namespaces/ns/status", Some("namespaces")),
        ("/api/v1", None),
        ("/apis/apps/v1", None),
        ("/apis", None),
        ("/version", None),
        ("/openapi/v3", None),
    ];
    for (target, expected) in cases {
        assert_eq!(fault::resource_of(target), expected, "{target}");
    }
}

#[test]
fn a_failure_of_one_resource_hits_every_verb_of_it_and_nothing_else() {
    let fail = Fault::Fail(StatusCode::SERVICE_UNAVAILABLE);
    let delay = Delay::fail_of("leases", 503);
    let leases = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";
    assert_eq!(delay.fault_for(leases), Some(fail));
    assert_eq!(delay.fault_for(&format!("{leases}/l?fieldManager=m")), Some(fail));
    assert_eq!(delay.fault_for("/api/v1/nodes"), None);
    assert_eq!(delay.fault_for("/version"), None);
    let all = Delay::fail(503);
    for target in [leases, "/api/v1/nodes", "/version", "/apis"] {
        assert_eq!(all.fault_for(target), Some(fail), "{target}");
    }
    assert_eq!(Delay::hang_of("nodes").fault_for("/api/v1/nodes/n1"), Some(Fault::Hang));
    assert_eq!(Delay::none().fault_for("/api/v1/nodes"), None);
    // A fault is no delay: its requests never reach the upstream to be delayed.
    assert_eq!(Delay::fail(503).choose("GET", "/api/v1/nodes"), None);
}

#[test]
#[should_panic(expected = "200 is not an HTTP error status")]
fn a_failure_must_be_an_error_status() {
    let _ = Delay::fail(200);
}

#[test]
fn a_lasting_fault_ends_by_itself_and_stays_ended() {
    let start = tokio::time::Instant::now();
    let mut active = Active::new(Delay::fail(503).lasting(Duration::from_secs(60)), start);
    let target = "/api/v1/nodes";
    assert!(active.at(start + Duration::from_secs(59)).fault_for(target).is_some());
    assert_eq!(active.at(start + Duration::from_secs(60)).fault_for(target), None);
    assert_eq!(active.ends, None, "ended: none from now on");
    assert_eq!(active.at(start).fault_for(target), None);
    let mut forever = Active::new(Delay::fail(503), start);
    assert!(forever.at(start + Duration::from_secs(86_400)).fault_for(target).is_some());
}

#[tokio::test]
async fn a_failure_is_the_api_servers_status_and_too_many_requests_says_when_to_retry() {
    let answer = fault::failure(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.status(), 503);
    assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/json");
    assert!(answer.headers().get(header::RETRY_AFTER).is_none());
    let body = axum::body::to_bytes(answer.into_body(), 1 << 16).await.expect("a body");
    let status: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        (status["kind"].as_str(), status["status"].as_str(), status["code"].as_u64()),
        (Some("Status"), Some("Failure"), Some(503))
    );
    assert_eq!(status["reason"], "ServiceUnavailable");
    let message = status["message"].as_str().expect("a message");
    assert!(message.starts_with("the server is currently unable to handle the request"));

    let answer = fault::failure(StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(answer.headers()[header::RETRY_AFTER], "1");
    let body = axum::body::to_bytes(answer.into_body(), 1 << 16).await.expect("a body");
    let status: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["details"]["retryAfterSeconds"], 1);

    let answer = fault::failure(StatusCode::IM_A_TEAPOT);
    let body = axum::body::to_bytes(answer.into_body(), 1 << 16).await.expect("a body");
    let status: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(status.get("reason").is_none(), "no reason the API server would not give");
}

#[tokio::test]
async fn a_failure_answers_every_request_itself_until_none_ends_it() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
    let front = front_of(&fake, Delay::none()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes_with(&front, dir.path(), false).await;
    nodes.list(&ListParams::default()).await.expect("a list before the outage");
    let reached = fake.requests().len();

    front.set_delay(Delay::fail(503));
    let status = api_status(nodes.list(&ListParams::default()).await);
    assert_eq!((status.code, status.reason.as_str()), (503, "ServiceUnavailable"));
    let status = api_status(nodes.get("n1").await);
    assert_eq!(status.code, 503);
    let version = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
    assert_eq!(version.status(), 503, "discovery fails too");
    assert_eq!(fake.requests().len(), reached, "nothing reached the upstream");
    assert_eq!(front.faulted(), 3);

    front.set_delay(Delay::none());
    let list = nodes.list(&ListParams::default()).await.expect("a list after the outage");
    assert_eq!(names(&list.items), ["n1"]);
    assert_eq!(front.faulted(), 3);
}

#[tokio::test]
async fn a_kube_client_with_its_default_retry_sees_no_short_outage() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
    let outage = Duration::from_millis(500);
    let front = front_of(&fake, Delay::fail(503).lasting(outage)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes(&front, dir.path()).await;
    let start = Instant::now();
    let list = tokio::time::timeout(Duration::from_secs(30), nodes.list(&ListParams::default()))
        .await
        .expect("a list within 30 s")
        .expect("a list once the outage ended, after retries");
    assert!(start.elapsed() >= outage, "listed after {:?}", start.elapsed());
    assert_eq!(names(&list.items), ["n1"]);
    assert!(front.faulted() > 1, "retried: {} failures", front.faulted());
}

#[tokio::test]
async fn a_held_request_goes_on_when_the_hang_is_replaced() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    fake.create("v1", "nodes", "", NodeFixture::tainted("n1").build());
    let front = front_of(&fake, Delay::hang_of("nodes")).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes(&front, dir.path()).await;

    let mut held = tokio::spawn({
        let nodes = nodes.clone();
        async move { nodes.get("n1").await }
    });
    // Still unanswered a while later (a bounded wait, not a sleep: it ends with the answer).
    let early = tokio::time::timeout(Duration::from_millis(300), &mut held).await;
    assert!(early.is_err(), "a held request was answered: {early:?}");
    assert_eq!(front.faulted(), 1);
    let other = reqwest::get(format!("{}/version", front.url())).await.expect("an answer");
    assert_eq!(other.status(), 200, "other requests go on");
    assert!(fake.requests().iter().all(|r| !r.path.contains("nodes")), "{:?}", fake.requests());

    front.set_delay(Delay::none());
    let answer = tokio::time::timeout(Duration::from_secs(10), held).await;
    let node = answer.expect("answered within 10 s").expect("the task").expect("the node");
    assert_eq!(node.metadata.name.as_deref(), Some("n1"));
}

#[tokio::test]
async fn a_held_request_fails_when_the_hang_gives_way_to_a_failure() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    let front = front_of(&fake, Delay::hang()).await;
    let url = format!("{}/api/v1/nodes", front.url());
    let held = tokio::spawn(async move { reqwest::get(url).await });
    tokio::task::yield_now().await;
    // Wait until the front holds it.
    let holding = async {
        while front.faulted() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), holding).await.expect("held within 10 s");
    front.set_delay(Delay::fail(504));
    let answer = tokio::time::timeout(Duration::from_secs(10), held).await;
    let answer = answer.expect("answered within 10 s").expect("the task").expect("an answer");
    assert_eq!(answer.status(), 504);
    assert_eq!(front.faulted(), 1, "one request, counted once");
}

#[tokio::test]
async fn a_failure_cuts_an_open_watch_and_the_next_one_fails() {
    let fake = FakeApiServer::start().await.expect("fake API server");
    let front = front_of(&fake, Delay::none()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = nodes_with(&front, dir.path(), false).await;
    let list = nodes.list(&ListParams::default()).await.expect("a list");
    let version = list.metadata.resource_version.expect("a list's resourceVersion");
    let params = WatchParams::default().timeout(290);
    let mut events = nodes.watch(&params, &version).await.expect("a watch").boxed();

    front.set_delay(Delay::fail(503).lasting(Duration::from_secs(60)));
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.next().await {
                None => return "ended",
                Some(Err(_)) => return "broke",
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the watch stayed open through the outage");
    let status = api_status(nodes.watch(&params, &version).await.map(|_| ()));
    assert_eq!(status.code, 503);
    assert_eq!(front.faulted(), 2, "the cut watch and the refused one");
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn a_node_list_from_the_real_api_server_answers_late() {
    let stack = crate::kube_stack::KubeStack::load();
    let dir = tempfile::tempdir().expect("temp dir");
    let user = crate::kube_stack::unique("front");
    let upstream = stack.client_kubeconfig(dir.path(), &user, &["system:masters"]);
    let delay = Delay::lists_of("nodes", SLOW);
    let front = KubeFront::start(Upstream::from_kubeconfig(&upstream), delay).await;
    let nodes = nodes(&front, dir.path()).await;
    let start = Instant::now();
    let list = nodes.list(&ListParams::default()).await.expect("a list of the real nodes");
    assert!(start.elapsed() >= SLOW, "answered after {:?}", start.elapsed());
    assert!(!list.items.is_empty(), "the real cluster has its node");
    assert_eq!(front.delayed(), 1);
    nodes.get(&names(&list.items)[0]).await.expect("a node by name");
    assert_eq!(front.delayed(), 1);
}
