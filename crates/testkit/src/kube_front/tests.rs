use std::time::Instant;

use ccm_formats::kubeconfig::{ClientCertificate, Kubeconfig};
use fake_kube_apiserver::FakeApiServer;
use futures::StreamExt as _;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, WatchEvent, WatchParams,
};
use rcgen::{CertificateParams, KeyPair};

use super::*;
use crate::kube::NodeFixture;
use crate::tls::{TestCa, TlsServer, Validity};

const SLOW: Duration = Duration::from_secs(1);

async fn front_of(fake: &FakeApiServer, delay: Delay) -> KubeFront {
    KubeFront::start(Upstream::plain(&fake.url()), delay).await
}

/// Nodes through a kube client built from the front's kubeconfig, as the CCM builds one.
async fn nodes(front: &KubeFront, dir: &Path) -> Api<DynamicObject> {
    let kubeconfig = kube::config::Kubeconfig::read_from(front.kubeconfig(dir))
        .expect("the front's kubeconfig reads");
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("a config from the front's kubeconfig");
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
