//! The path rules, the caches and the answers, against a stub API server that answers reviews
//! as kube-apiserver does (the real one judges them in tests/it/real_kube_metrics_auth.rs).

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::http::{HeaderValue, Request as HttpRequest, Response as HttpResponse};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

use super::*;

/// The reviews a stub API server received: `(kind, body)`.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// How the stub answers: `Ok(status)` completes the review as the API server does; `Err(code)`
/// fails it with that HTTP status; `None` never answers.
pub(crate) type Answer = Arc<dyn Fn(&str, &Value) -> Option<Result<Value, u16>> + Send + Sync>;

/// kube-apiserver's judgement in these tests: `good` is `scraper`, who may get `/metrics`;
/// `admin` is in `system:masters`; `nobody` is a user with no grant; anything else is unknown.
pub(crate) fn apiserver() -> Answer {
    Arc::new(|kind, body| {
        Some(Ok(match kind {
            "TokenReview" => match body["spec"]["token"].as_str() {
                Some("good") => json!({"authenticated": true, "user": {"username": "scraper",
                    "uid": "u-1", "groups": ["system:authenticated"]}}),
                Some("admin") => json!({"authenticated": true, "user": {"username": "admin",
                    "groups": ["system:masters", "system:authenticated"]}}),
                Some("nobody") => json!({"authenticated": true, "user": {"username": "nobody",
                    "groups": ["system:authenticated"]}}),
                _ => json!({"authenticated": false, "error": "invalid bearer token"}),
            },
            _ => {
                let spec = &body["spec"];
                let allowed = spec["user"] == "scraper"
                    && spec["nonResourceAttributes"] == json!({"path": "/metrics", "verb": "get"});
                if allowed {
                    json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding"})
                } else {
                    json!({"allowed": false})
                }
            }
        }))
    })
}

/// A kube client whose every request goes to `answer`, recorded in the returned list.
pub(crate) fn stub(answer: Answer) -> (kube::Client, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let service = tower::service_fn(move |request: HttpRequest<kube::client::Body>| {
        let (answer, record) = (answer.clone(), record.clone());
        async move {
            let bytes = request.into_body().collect().await.unwrap().to_bytes();
            let mut body: Value = serde_json::from_slice(&bytes).unwrap();
            let kind = body["kind"].as_str().unwrap().to_owned();
            record
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((kind.clone(), body.clone()));
            let Some(answer) = answer(&kind, &body) else {
                return std::future::pending().await;
            };
            let (code, text) = match answer {
                Ok(status) => {
                    body["status"] = status;
                    (201, body.to_string())
                }
                Err(code) => (
                    code,
                    json!({"kind": "Status", "apiVersion": "v1", "status":
                    "Failure", "message": "no", "reason": "Forbidden", "code": code})
                    .to_string(),
                ),
            };
            let response = HttpResponse::builder().status(code).body(Body::from(text)).unwrap();
            Ok::<_, Infallible>(response)
        }
    });
    (kube::Client::new(service, "default"), seen)
}

fn delegation(answer: Answer) -> (Delegation, Seen) {
    let (client, seen) = stub(answer);
    let open = OpenPaths::new(["/healthz", "/readyz", "/livez", "", "/debug/*"].map(String::from));
    (Delegation::new(open, client.clone(), client), seen)
}

fn token(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
    headers
}

/// How many reviews of each kind: (TokenReview, SubjectAccessReview).
fn counts(seen: &Seen) -> (usize, usize) {
    let seen = seen.lock().unwrap();
    let tokens = seen.iter().filter(|(kind, _)| kind == "TokenReview").count();
    (tokens, seen.len() - tokens)
}

#[test]
fn open_paths_are_exact_or_a_prefix_before_a_final_star() {
    let open = OpenPaths::new(["/healthz", "", "/debug/*"].map(String::from));
    for path in ["/healthz", "/debug/", "/debug/pprof/heap"] {
        assert!(open.contains(path), "{path}");
    }
    for path in ["/healthz/", "/healthzx", "/metrics", "/debug", ""] {
        assert!(!open.contains(path), "{path}");
    }
    assert!(!OpenPaths::new([String::new()]).contains(""), "an empty item opens nothing");
}

#[test]
fn only_a_bearer_token_is_taken() {
    assert_eq!(bearer(&token("Bearer abc")), Some("abc"));
    assert_eq!(bearer(&token("bearer  abc ")), Some("abc"), "the scheme in any case");
    for refused in ["Basic YWJjOmRlZg==", "Bearer", "Bearer  ", "abc"] {
        assert_eq!(bearer(&token(refused)), None, "{refused}");
    }
    assert_eq!(bearer(&HeaderMap::new()), None);
    assert_eq!((verb(&Method::HEAD), verb(&Method::OPTIONS)), ("get".into(), "options".into()));
}

#[tokio::test(start_paused = true)]
async fn open_paths_and_missing_tokens_ask_the_api_server_nothing() {
    let (delegation, seen) = delegation(apiserver());
    let get = |path: &'static str, headers: HeaderMap| {
        let delegation = &delegation;
        async move { delegation.verdict(&Method::GET, path, &headers).await }
    };
    assert_eq!(get("/healthz", HeaderMap::new()).await, Verdict::Allowed);
    assert_eq!(get("/debug/x", token("Bearer unknown")).await, Verdict::Allowed);
    assert_eq!(get("/metrics", HeaderMap::new()).await, Verdict::Unauthenticated);
    assert_eq!(get("/metrics", token("Basic YWJjOmRlZg==")).await, Verdict::Unauthenticated);
    assert_eq!(counts(&seen), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn each_answer_is_asked_once_per_ttl() {
    let (delegation, seen) = delegation(apiserver());
    let get = |value: &'static str| {
        let delegation = &delegation;
        async move { delegation.verdict(&Method::GET, "/metrics", &token(value)).await }
    };
    let forbidden =
        Verdict::Forbidden(r#"forbidden: User "nobody" cannot get path "/metrics""#.into());
    // A scrape every second for just under the TTLs: one review of each kind per token.
    for _ in 0..10 {
        assert_eq!(get("Bearer good").await, Verdict::Allowed);
        assert_eq!(get("Bearer nobody").await, forbidden);
        assert_eq!(get("Bearer stolen").await, Verdict::Unauthenticated);
        tokio::time::advance(Duration::from_millis(999)).await;
    }
    assert_eq!(counts(&seen), (3, 2), "{:?}", seen.lock().unwrap());
    // Past the TTLs, asked again.
    tokio::time::advance(TOKEN_TTL.max(ALLOWED_TTL).max(DENIED_TTL)).await;
    assert_eq!(get("Bearer good").await, Verdict::Allowed);
    assert_eq!(get("Bearer nobody").await, forbidden);
    assert_eq!(get("Bearer stolen").await, Verdict::Unauthenticated);
    assert_eq!(counts(&seen), (6, 4));
}

#[tokio::test(start_paused = true)]
async fn the_reviews_say_who_asks_what_and_system_masters_needs_no_review() {
    let (delegation, seen) = delegation(apiserver());
    let verdict = delegation.verdict(&Method::GET, "/metrics", &token("Bearer good")).await;
    assert_eq!(verdict, Verdict::Allowed);
    // Another path, another verb: another decision, the same token.
    let verdict = delegation.verdict(&Method::POST, "/metrics", &token("Bearer good")).await;
    assert_eq!(
        verdict,
        Verdict::Forbidden(r#"forbidden: User "scraper" cannot create path "/metrics""#.into())
    );
    let admin = delegation.verdict(&Method::GET, "/anything", &token("Bearer admin")).await;
    assert_eq!(admin, Verdict::Allowed);
    let seen = seen.lock().unwrap();
    let bodies: Vec<&Value> = seen.iter().map(|(_, body)| body).collect();
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    assert_eq!(bodies[0]["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(bodies[0]["spec"], json!({"token": "good"}), "no audiences: the API server's own");
    assert_eq!(bodies[1]["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(
        bodies[1]["spec"],
        json!({"user": "scraper", "uid": "u-1", "groups": ["system:authenticated"],
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"}})
    );
    assert_eq!(bodies[2]["spec"]["nonResourceAttributes"]["verb"], "create");
    assert_eq!(bodies[3]["spec"], json!({"token": "admin"}), "no SubjectAccessReview for it");
}

#[tokio::test(start_paused = true)]
async fn a_reason_given_is_said_and_a_denial_wins_over_an_allowance() {
    let answer: Answer = Arc::new(|kind, _| {
        Some(Ok(if kind == "TokenReview" {
            json!({"authenticated": true, "user": {"username": "scraper"}})
        } else {
            json!({"allowed": true, "denied": true, "reason": "a webhook said no"})
        }))
    });
    let (delegation, _) = delegation(answer);
    let verdict = delegation.verdict(&Method::GET, "/metrics", &token("Bearer good")).await;
    let why = r#"forbidden: User "scraper" cannot get path "/metrics": a webhook said no"#;
    assert_eq!(verdict, Verdict::Forbidden(why.into()));
}

#[tokio::test(start_paused = true)]
async fn no_answer_is_503_never_served_and_not_cached() {
    // The next review of a kind fails with a code, once.
    let failing: Arc<Mutex<Option<(&str, u16)>>> = Arc::new(Mutex::new(Some(("TokenReview", 500))));
    let next = failing.clone();
    let fallback = apiserver();
    let answer: Answer = Arc::new(move |kind, body| {
        let mut next = next.lock().unwrap();
        match *next {
            Some((failing, code)) if failing == kind => {
                *next = None;
                Some(Err(code))
            }
            _ => fallback(kind, body),
        }
    });
    let (delegation, seen) = delegation(answer);
    let good = token("Bearer good");
    let get = || delegation.verdict(&Method::GET, "/metrics", &good);
    let why = "cannot authorize the request: the API server answered the TokenReview with 500: no";
    assert_eq!(get().await, Verdict::Unavailable(why.into()));
    assert_eq!(get().await, Verdict::Allowed, "the failure was not cached");
    assert_eq!(counts(&seen), (2, 1));

    // The SubjectAccessReview refused (this controller lacks system:auth-delegator).
    *failing.lock().unwrap() = Some(("SubjectAccessReview", 403));
    tokio::time::advance(ALLOWED_TTL).await;
    let why = "cannot authorize the request: the API server refused this controller's \
               SubjectAccessReview (bind its identity to the ClusterRole system:auth-delegator): no";
    assert_eq!(get().await, Verdict::Unavailable(why.into()));
    assert_eq!(get().await, Verdict::Allowed);
}

#[tokio::test(start_paused = true)]
async fn a_silent_api_server_is_503_after_the_timeout() {
    let (delegation, _) = delegation(Arc::new(|_, _| None));
    let verdict = delegation.verdict(&Method::GET, "/metrics", &token("Bearer good")).await;
    let why = "cannot authorize the request: the API server did not answer the TokenReview \
               within 10s";
    assert_eq!(verdict, Verdict::Unavailable(why.into()));
}

#[tokio::test]
async fn an_api_server_that_cannot_be_reached_is_503() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = testkit::kube::kubeconfig(dir.path(), &format!("http://{closed}"));
    let delegation =
        Delegation::connect(OpenPaths::default(), None, None, Some(&kubeconfig)).await.unwrap();
    let verdict = delegation.verdict(&Method::GET, "/metrics", &token("Bearer good")).await;
    let Verdict::Unavailable(why) = verdict else { panic!("{verdict:?}") };
    assert!(
        why.starts_with("cannot authorize the request: the API server's TokenReview failed"),
        "{why}"
    );
}
