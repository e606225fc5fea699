//! `/metrics` answers only whom the real API server (scripts/kube-up.sh) allows (issue 36,
//! item 4): the generated in-cluster CCM, run as the generated ServiceAccount (its
//! `system:auth-delegator` binding applied with the rest of `manifests/ccm/`), asks the API server
//! about each token (TokenReview) and each request (SubjectAccessReview, `get` on `/metrics`),
//! remembers both answers for 10 s, and serves the health paths to anyone. It used to serve
//! `/metrics` to anyone at all.

use std::time::Duration;

use serde_json::{Value, json};
use testkit::kube_stack::{KubeStack, request};
use testkit::stack::StackEnv;

use crate::in_cluster::{Generated, OnDrop};
use crate::support::{Process, free_port, https};

/// What a review is in the audit log, as [`request`] writes it.
const TOKEN_REVIEW: &str = "create authentication.k8s.io/tokenreviews";
const ACCESS_REVIEW: &str = "create authorization.k8s.io/subjectaccessreviews";

/// A GET of `path` on the CCM at `port`, with `token` as its bearer token: status and body.
async fn get(port: u16, path: &str, token: Option<&str>) -> (u16, String) {
    let mut request = https().get(format!("https://127.0.0.1:{port}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let send = tokio::time::timeout(Duration::from_secs(30), request.send());
    let response = send.await.expect("an answer within 30 s").unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Waits (bounded) until the server on `port` answers `/healthz`.
async fn serving(port: u16, process: &Process) {
    for _ in 0..150 {
        let response = https().get(format!("https://127.0.0.1:{port}/healthz")).send().await;
        if response.is_ok_and(|r| r.status() == 200) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("/healthz did not answer within 30 s; log:\n{}", process.log());
}

/// How many reviews of each kind the CCM (`user`) asked in `events`, each answered 201.
fn reviews(events: &[Value], user: &str) -> (usize, usize) {
    let by_ccm: Vec<&Value> = events.iter().filter(|e| e["user"]["username"] == user).collect();
    let count = |kind: &str| {
        let asked: Vec<&&Value> = by_ccm.iter().filter(|e| request(e) == kind).collect();
        for event in &asked {
            assert_eq!(event["responseStatus"]["code"], 201, "{kind} refused: {event}");
        }
        asked.len()
    };
    (count(TOKEN_REVIEW), count(ACCESS_REVIEW))
}

/// Two ServiceAccounts of the CCM's namespace with tokens: `scraper`, which a ClusterRole of the
/// test's own lets get `/metrics`, and `stranger`, which nothing lets; the cluster-wide objects
/// deleted at drop.
fn scrapers(kube: &KubeStack, ns: &str) -> (String, String, OnDrop) {
    let role = format!("{ns}-metrics-reader");
    let mut objects = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}]}),
    ];
    for name in ["scraper", "stranger"] {
        objects.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": ns}}));
    }
    let mut delete = kube.kubectl();
    delete.args(["delete", "clusterrolebinding,clusterrole", &role, "--ignore-not-found"]);
    let guard = OnDrop(vec![delete]);
    kube.create(&json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string());
    let token = |account: &str| {
        let args = ["create", "token", account, "-n", ns, "--duration=1h"];
        kube.run(&args, None).trim().to_owned()
    };
    (token("scraper"), token("stranger"), guard)
}

#[tokio::test]
#[ignore = "needs real Kubernetes (scripts/kube-up.sh)"]
async fn metrics_need_a_token_the_api_server_allows_and_its_answers_are_cached() {
    let env = StackEnv::load();
    let generated = Generated::apply(&env, &env["OPENSTACK_CLOUD_APPCRED"]).await;
    let (kube, ns, ccm) = (&generated.kube, generated.ns.name.clone(), generated.user());
    let (scraper, stranger, _cluster_objects) = scrapers(kube, &ns);
    let audit = kube.audit();
    // No controller: this test is about the server (leader election and the OpenStack login
    // still run, as the Deployment's flags say).
    let (process, port) = generated.start(&["--controllers=-cloud-node"]);
    serving(port, &process).await;

    // The health paths to anyone; /metrics and anything else only with a token.
    assert_eq!(get(port, "/healthz", None).await, (200, "ok".to_owned()));
    let (status, body) = get(port, "/readyz", None).await;
    assert!(status == 200 || status == 503, "/readyz: {status} {body}");
    assert_eq!(get(port, "/metrics", None).await, (401, "Unauthorized".to_owned()));
    assert_eq!(get(port, "/nowhere", None).await.0, 401);
    assert_eq!(get(port, "/metrics", Some("not-a-token")).await, (401, "Unauthorized".to_owned()));
    let forbidden = format!(
        "forbidden: User \"system:serviceaccount:{ns}:stranger\" cannot get path \"/metrics\""
    );
    assert_eq!(get(port, "/metrics", Some(&stranger)).await, (403, forbidden.clone()));
    let (status, metrics) = get(port, "/metrics", Some(&scraper)).await;
    assert_eq!(status, 200, "{metrics}");
    assert!(metrics.contains("# TYPE occm_openstack_connected gauge"), "{metrics}");

    // Scraped again and again within the 10 s: nothing more asked of the API server.
    for _ in 0..5 {
        assert_eq!(get(port, "/metrics", Some(&scraper)).await.0, 200);
        assert_eq!(get(port, "/metrics", Some(&stranger)).await, (403, forbidden.clone()));
        assert_eq!(get(port, "/metrics", Some("not-a-token")).await.0, 401);
    }
    // One TokenReview per token (the unknown one too), one SubjectAccessReview per user.
    let events = audit.wait_for(Duration::from_secs(10), |e| reviews(e, &ccm) >= (3, 2));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(reviews(&audit.events(), &ccm), (3, 2), "{events:?}");

    // Past the 10 s, asked once more.
    tokio::time::sleep(Duration::from_secs(10)).await;
    for _ in 0..3 {
        assert_eq!(get(port, "/metrics", Some(&scraper)).await.0, 200);
    }
    audit.wait_for(Duration::from_secs(10), |e| reviews(e, &ccm) >= (4, 3));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(reviews(&audit.events(), &ccm), (4, 3));
    drop(process);

    // An API server that cannot be reached: 503 naming the review, never the metrics; the
    // health paths still open.
    let dir = tempfile::tempdir().unwrap();
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let nowhere = testkit::kube::kubeconfig(dir.path(), &nowhere);
    let flag = format!("--authentication-kubeconfig={}", nowhere.display());
    let (process, port) = generated.start(&["--controllers=-cloud-node", &flag]);
    serving(port, &process).await;
    let (status, body) = get(port, "/metrics", Some(&scraper)).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.starts_with("cannot authorize the request: the API server's TokenReview failed"),
        "{body}"
    );
    assert_eq!(get(port, "/healthz", None).await.0, 200);
}
