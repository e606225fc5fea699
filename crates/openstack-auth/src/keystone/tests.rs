use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};

use super::*;

/// A Keystone on loopback that issues tokens `tok-<n>` (the n-th login asked for) living
/// `lifetime` seconds, with a catalog pointing at itself, refuses the password `wrong`, and
/// answers 503 while `down`.
struct FakeKeystone {
    url: String,
    logins: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<Value>>>,
    down: Arc<AtomicBool>,
}

impl FakeKeystone {
    async fn start(lifetime: i64) -> FakeKeystone {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let logins = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let (count, seen, base, off) = (logins.clone(), bodies.clone(), url.clone(), down.clone());
        let app = axum::Router::new().route(
            "/identity/v3/auth/tokens",
            axum::routing::post(move |body: axum::body::Bytes| {
                let body: Value = serde_json::from_slice(&body).unwrap();
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                seen.lock().unwrap().push(body.clone());
                let base = base.clone();
                async move {
                    let password = &body["auth"]["identity"]["password"]["user"]["password"];
                    if off.load(Ordering::SeqCst) {
                        return (StatusCode::SERVICE_UNAVAILABLE, HeaderMap::new(), "{}".to_owned());
                    }
                    if password == "wrong" {
                        return (StatusCode::UNAUTHORIZED, HeaderMap::new(), "{}".to_owned());
                    }
                    let now = Timestamp::now();
                    let expires = now + jiff::SignedDuration::from_secs(lifetime);
                    let token = json!({"token": {
                        "issued_at": now.to_string(),
                        "expires_at": expires.to_string(),
                        "catalog": [{"type": "compute", "endpoints": [
                            {"interface": "internal", "region": "RegionOne", "url": format!("{base}/internal")},
                            {"interface": "public", "region": "RegionTwo", "url": format!("{base}/two")},
                            {"interface": "public", "region": "RegionOne", "url": format!("{base}/public")},
                        ]}],
                    }});
                    let mut headers = HeaderMap::new();
                    headers.insert("x-subject-token", format!("tok-{n}").parse().unwrap());
                    (StatusCode::CREATED, headers, token.to_string())
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeKeystone { url, logins, bodies, down }
    }

    fn logins(&self) -> usize {
        self.logins.load(Ordering::SeqCst)
    }

    fn keystone(&self, password: &str) -> Keystone {
        let identity = Identity::Password {
            user: "ccm-user".into(),
            domain: "Default".into(),
            password: password.to_owned().into(),
        };
        Keystone::new(&format!("{}/identity/v3", self.url), identity, None).unwrap()
    }
}

/// The token a request would carry.
async fn token_of(keystone: &Keystone, client: &Client) -> String {
    let request = keystone.authenticate(client, client.get("http://127.0.0.1:9/")).await.unwrap();
    let request = request.build().unwrap();
    request.headers()["x-auth-token"].to_str().unwrap().to_owned()
}

/// See: issue 36. osauth's own login renewed any token with fewer than 10 minutes left before
/// every request: 20 requests with 5-minute tokens were 20 logins.
#[tokio::test]
async fn a_five_minute_token_serves_every_request_with_one_login() {
    let fake = FakeKeystone::start(300).await;
    let (keystone, client) = (fake.keystone("secret"), Client::new());
    for _ in 0..20 {
        assert_eq!(token_of(&keystone, &client).await, "tok-1");
    }
    let filters = EndpointFilters::default().with_region("RegionOne");
    let url = keystone.get_endpoint(&client, "compute", &filters).await.unwrap();
    assert_eq!(url.as_str(), format!("{}/public", fake.url));
    assert_eq!(fake.logins(), 1);
}

#[tokio::test]
async fn a_token_due_for_renewal_is_renewed_by_the_next_call() {
    // Issued for no time at all: due at once.
    let fake = FakeKeystone::start(0).await;
    let (keystone, client) = (fake.keystone("secret"), Client::new());
    assert_eq!(token_of(&keystone, &client).await, "tok-1");
    assert_eq!(token_of(&keystone, &client).await, "tok-2");
    assert_eq!(fake.logins(), 2);
}

/// Makes the token in use due for renewal now.
async fn due(keystone: &Keystone) {
    keystone.cache.write().await.as_mut().expect("a token").renew_at = Instant::now();
}

#[tokio::test]
async fn keystone_down_at_renewal_keeps_the_living_token_and_tries_again_later() {
    let fake = FakeKeystone::start(300).await;
    let (keystone, client) = (fake.keystone("secret"), Client::new());
    assert_eq!(token_of(&keystone, &client).await, "tok-1");
    due(&keystone).await;
    fake.down.store(true, Ordering::SeqCst);
    assert_eq!(token_of(&keystone, &client).await, "tok-1", "it still lives");
    assert_eq!(token_of(&keystone, &client).await, "tok-1");
    assert_eq!(fake.logins(), 2, "one failed renewal, the next one only after RETRY");
    fake.down.store(false, Ordering::SeqCst);
    due(&keystone).await;
    assert_eq!(token_of(&keystone, &client).await, "tok-3");
    // A token past its life is not kept: the failure is the call's.
    fake.down.store(true, Ordering::SeqCst);
    due(&keystone).await;
    keystone.cache.write().await.as_mut().unwrap().valid_until = Instant::now();
    let request = client.get("http://127.0.0.1:9/");
    let err = keystone.authenticate(&client, request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InternalServerError, "{err}");
}

#[tokio::test]
async fn calls_refused_together_log_in_once() {
    let fake = FakeKeystone::start(300).await;
    let (keystone, client) = (fake.keystone("secret"), Client::new());
    assert_eq!(token_of(&keystone, &client).await, "tok-1");
    let refresh = || keystone.refresh(&client);
    let refused = tokio::join!(refresh(), refresh(), refresh(), refresh(), refresh());
    for result in <[_; 5]>::from(refused) {
        result.unwrap();
    }
    assert_eq!(fake.logins(), 2);
    assert_eq!(token_of(&keystone, &client).await, "tok-2");
    // A refusal told after that login logs in again.
    keystone.refresh(&client).await.unwrap();
    assert_eq!(token_of(&keystone, &client).await, "tok-3");
}

#[tokio::test]
async fn a_refused_login_is_an_authentication_failure_and_keeps_no_token() {
    let fake = FakeKeystone::start(300).await;
    let (keystone, client) = (fake.keystone("wrong"), Client::new());
    let request = client.get("http://127.0.0.1:9/");
    let err = keystone.authenticate(&client, request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AuthenticationFailed);
    assert!(keystone.cache.read().await.is_none());
}

#[tokio::test]
async fn the_login_body_is_keystones_for_each_method() {
    let fake = FakeKeystone::start(300).await;
    let client = Client::new();
    let auth_url = format!("{}/identity", fake.url);
    let scope = Some((IdOrName::from_name("ccm"), Some(IdOrName::from_id("default"))));
    let cases = [
        (
            Identity::Password { user: "u".into(), domain: "D".into(), password: "p".into() },
            scope.clone(),
        ),
        (Identity::Token("t".into()), Some((IdOrName::from_id("pid"), None))),
        (
            Identity::ApplicationCredential {
                credential: IdOrName::from_name("ac"),
                user_id: Some("uid".into()),
                secret: "s".into(),
            },
            None,
        ),
    ];
    for (identity, scope) in cases {
        let keystone = Keystone::new(&auth_url, identity, scope).unwrap();
        keystone.refresh(&client).await.unwrap();
    }
    let bodies = fake.bodies.lock().unwrap().clone();
    assert_eq!(
        bodies,
        [
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "name": "u", "domain": {"name": "D"}, "password": "p"}}},
                "scope": {"project": {"name": "ccm", "domain": {"id": "default"}}},
            }}),
            json!({"auth": {
                "identity": {"methods": ["token"], "token": {"id": "t"}},
                "scope": {"project": {"id": "pid"}},
            }}),
            json!({"auth": {"identity": {
                "methods": ["application_credential"],
                "application_credential": {"name": "ac", "secret": "s", "user": {"id": "uid"}},
            }}}),
        ]
    );
}

#[test]
fn the_token_url_is_under_v3_whether_or_not_the_auth_url_names_it() {
    let url = |auth: &str| {
        let identity = Identity::Token("t".into());
        Keystone::new(auth, identity, None).map(|k| k.token_url.to_string())
    };
    for (auth, want) in [
        ("http://k:5000", "http://k:5000/v3/auth/tokens"),
        ("http://k:5000/v3", "http://k:5000/v3/auth/tokens"),
        ("https://k/identity/v3/", "https://k/identity/v3/auth/tokens"),
        ("https://k/identity", "https://k/identity/v3/auth/tokens"),
    ] {
        assert_eq!(url(auth).as_deref(), Ok(want), "{auth}");
    }
    assert!(url("not a url").unwrap_err().starts_with("\"not a url\" is not a URL"));
    assert!(url("mailto:k").unwrap_err().contains("not an http(s) URL"));
}

#[test]
fn an_endpoint_is_chosen_by_region_then_by_the_first_interface_that_has_one() {
    let text = json!([{"type": "network", "endpoints": [
        {"interface": "public", "region": "R1", "url": "http://pub1/"},
        {"interface": "internal", "region": "R1", "url": "http://int1/"},
        {"interface": "publicURL", "region": "R2", "url": "http://pub2/"},
    ]}]);
    let catalog: Vec<Service> = serde_json::from_value(text).unwrap();
    let find = |interfaces: Vec<osauth::InterfaceType>, region: &str| {
        let filters = EndpointFilters::new(interfaces, region);
        endpoint(&catalog, "network", &filters).map(|u| u.to_string())
    };
    use osauth::InterfaceType::{Admin, Internal, Public};
    assert_eq!(find(vec![Public], "R1").unwrap(), "http://pub1/");
    assert_eq!(find(vec![Internal, Public], "R1").unwrap(), "http://int1/");
    assert_eq!(find(vec![Admin, Public], "R2").unwrap(), "http://pub2/");
    assert_eq!(find(vec![Internal], "R2").unwrap_err().kind(), ErrorKind::EndpointNotFound);
    let any_region = EndpointFilters::default();
    assert!(endpoint(&catalog, "network", &any_region).is_ok());
    let err = endpoint(&catalog, "compute", &any_region).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::EndpointNotFound);
    let said = "Requested endpoint was not found: Endpoint for service compute was not found";
    assert_eq!(err.to_string(), said, "osauth's words");
}

#[tokio::test]
async fn neither_debug_nor_the_request_shows_a_secret() {
    let fake = FakeKeystone::start(300).await;
    let (keystone, client) = (fake.keystone("hunter2"), Client::new());
    let request = keystone.authenticate(&client, client.get("http://127.0.0.1:9/")).await.unwrap();
    let shown = format!("{keystone:?} {request:?}");
    assert!(!shown.contains("hunter2") && !shown.contains("tok-1"), "{shown}");
    assert!(shown.contains("password"), "{shown}");
}
