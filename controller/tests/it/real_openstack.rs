//! Against the real Keystone, Nova and Neutron of scripts/openstack-up.sh (ignored by default;
//! scripts/test.sh runs them with `--run-ignored only` after starting the stack). Kubernetes
//! is the wire-level fake API server.

use std::sync::Arc;
use std::time::Duration;

use fake_kube_apiserver::FakeApiServer;
use kube::api::Api;
use occm::cloud::{self, Cloud, Lookup, OpenStack};
use occm::config::{Credentials, Values, check_text, clouds};
use occm::controllers::lifecycle::{self, Outcome};
use occm::controllers::projection::CachedNode;
use occm::controllers::{Context, node};
use occm::metrics::Metrics;
use serde_json::json;

use crate::proxy::{ThrottlingNova, faulty_nova, forward};
use testkit::kube::NodeFixture;
use testkit::stack::StackEnv;
use testkit::sweep::Sweep;

use crate::support::{free_port, https, scene, start_ccm};

pub(crate) fn credentials(env: &StackEnv, cloud: &str) -> Credentials {
    let text = std::fs::read_to_string(&env["OPENSTACK_CLOUDS_YAML"]).unwrap();
    let entry = clouds::entry_from_text(&text, cloud, "clouds.yaml").unwrap();
    let mut values = Values::default();
    clouds::merge_entry(&mut values, &entry);
    occm::config::credentials(&values)
}

async fn wait_ready(cloud: &OpenStack, want: bool) {
    let mut ready = cloud.subscribe_ready();
    tokio::time::timeout(Duration::from_secs(60), ready.wait_for(|r| *r == want))
        .await
        .expect("readiness changed in time")
        .unwrap();
}

async fn connected(credentials: Credentials, timeout: Duration) -> Arc<OpenStack> {
    let cloud = OpenStack::new(Metrics::shared(), timeout);
    cloud.set_credentials(credentials);
    tokio::spawn(cloud.clone().keep_connected());
    wait_ready(&cloud, true).await;
    cloud
}

fn context(
    fake: &FakeApiServer,
    cloud: Arc<OpenStack>,
    metrics: Arc<Metrics>,
) -> Arc<Context<OpenStack>> {
    let (reader, _writer) = kube::runtime::reflector::store::<CachedNode>();
    Arc::new(Context::new(fake.client(), cloud, metrics, Default::default(), reader))
}

async fn node(fake: &FakeApiServer, name: &str) -> CachedNode {
    Api::<CachedNode>::all(fake.client()).get(name).await.unwrap()
}

fn unique(prefix: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("occm-{prefix}-{}-{nanos:x}", std::process::id())
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_password_and_application_credential_logins_list_servers() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    for key in ["OPENSTACK_CLOUD_PASSWORD", "OPENSTACK_CLOUD_APPCRED"] {
        let cloud = connected(credentials(&env, &env[key]), Duration::from_secs(30)).await;
        if let Err(e) = cloud.servers(None).await {
            panic!("{key}: {}", cloud::session::chain(&e));
        }
        assert_eq!(cloud.region().as_deref(), Some(env["OPENSTACK_REGION"].as_str()));
    }
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_wrong_password_is_a_clear_authentication_error() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let mut creds = credentials(&env, "ccm-password");
    creds.password = Some("definitely-wrong".to_owned().into());
    let err = cloud::auth::connect(&creds, Duration::from_secs(30)).await.unwrap_err();
    assert_eq!(err.kind().as_str(), "auth", "{}", cloud::session::chain(&err));
    let text = cloud::session::chain(&err);
    assert!(text.starts_with("OpenStack authentication failed"), "{text}");
    assert!(!text.contains("definitely-wrong"));
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_server_initializes_its_node_then_stop_taints_and_delete_removes_it() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let name = unique("init");
    let server = scene(&env, &["server-create", "--name", &name, "--wait-active"]).await;
    let id = server["id"].as_str().unwrap().to_owned();
    let fixed = server["fixed_ips"][0].as_str().unwrap().to_owned();
    let metrics = Metrics::shared();
    let cloud = connected(credentials(&env, "ccm-password"), Duration::from_secs(30)).await;
    let fake = FakeApiServer::start().await.unwrap();
    fake.create("v1", "nodes", "", NodeFixture::tainted(&name).ready("False").build());
    let ctx = context(&fake, cloud.clone(), metrics);

    node::initialize(&ctx, &node(&fake, &name).await).await.unwrap();
    let got = fake.get("v1", "nodes", "", &name).unwrap();
    assert_eq!(got["spec"]["providerID"], format!("openstack:///{id}"));
    assert_eq!(got["spec"]["taints"], json!([]));
    assert_eq!(got["status"]["addresses"][0], json!({"type": "InternalIP", "address": fixed}));
    assert_eq!(
        got["metadata"]["labels"]["node.kubernetes.io/instance-type"],
        env["OPENSTACK_FLAVOR"]
    );
    assert_eq!(got["metadata"]["labels"]["topology.kubernetes.io/region"], env["OPENSTACK_REGION"]);
    assert_eq!(
        got["metadata"]["labels"]["topology.kubernetes.io/zone"],
        server["availability_zone"].as_str().unwrap()
    );

    scene(&env, &["server-stop", &id, "--wait"]).await;
    assert_eq!(lifecycle::check(&ctx, &node(&fake, &name).await).await.unwrap(), Outcome::Tainted);
    let taints = fake.get("v1", "nodes", "", &name).unwrap()["spec"]["taints"].clone();
    assert_eq!(taints[0]["key"], "node.cloudprovider.kubernetes.io/shutdown");

    scene(&env, &["server-delete", &id, "--wait"]).await;
    assert_eq!(lifecycle::check(&ctx, &node(&fake, &name).await).await.unwrap(), Outcome::Deleted);
    assert!(fake.get("v1", "nodes", "", &name).is_none());
    let events = fake.list("events.k8s.io/v1", "events");
    assert!(events.iter().any(|e| e["reason"] == "DeletingNode"));
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_node_without_a_server_by_name_is_removed_like_by_id() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let cloud = connected(credentials(&env, "ccm-password"), Duration::from_secs(30)).await;
    let err = cloud.server(&Lookup::Name(unique("nobody"))).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let err =
        cloud.server(&Lookup::Id("00000000-0000-0000-0000-000000000000".into())).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_nova_500_and_timeouts_keep_a_not_ready_node() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let nova_root = env["OPENSTACK_COMPUTE_URL"].trim_end_matches("/v2.1").to_owned();
    let gone = "openstack:///00000000-0000-0000-0000-00000000dead";
    for hang in [false, true] {
        let cloud = OpenStack::new(Metrics::shared(), Duration::from_secs(2));
        cloud.set_endpoint_override("compute", &faulty_nova(nova_root.clone(), hang).await);
        cloud.set_credentials(credentials(&env, "ccm-password"));
        tokio::spawn(cloud.clone().keep_connected());
        wait_ready(&cloud, true).await;
        let fake = FakeApiServer::start().await.unwrap();
        fake.create(
            "v1",
            "nodes",
            "",
            json!({"metadata": {"name": "w"}, "spec": {"providerID": gone},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        );
        let ctx = context(&fake, cloud, Metrics::shared());
        let err = lifecycle::check(&ctx, &node(&fake, "w").await).await.unwrap_err();
        assert!(
            matches!(err.kind().as_str(), "server_error" | "timeout"),
            "hang={hang}: {}: {}",
            err.kind(),
            cloud::session::chain(&err)
        );
        assert!(fake.get("v1", "nodes", "", "w").is_some(), "a transient error deleted the node");
    }
    // The same node with a healthy Nova: its server really is gone, so it is deleted.
    let cloud = connected(credentials(&env, "ccm-password"), Duration::from_secs(30)).await;
    let fake = FakeApiServer::start().await.unwrap();
    fake.create(
        "v1",
        "nodes",
        "",
        json!({"metadata": {"name": "w"}, "spec": {"providerID": gone},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
    );
    let ctx = context(&fake, cloud, Metrics::shared());
    assert_eq!(lifecycle::check(&ctx, &node(&fake, "w").await).await.unwrap(), Outcome::Deleted);
}

/// Issue 40: one limit for all of the CCM's OpenStack requests. A 429 with `Retry-After: 1` and
/// a 503 without it are each sent again (after 1 s, then after the backoff's 2 to 3 s), and the
/// lookup ends with Nova's real answer; eight lookups at once never have more than the limit's
/// two in flight at the front.
#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_nova_429_and_503_are_sent_again_and_requests_stay_within_the_limit() {
    let env = StackEnv::load();
    let nova_root = env["OPENSTACK_COMPUTE_URL"].trim_end_matches("/v2.1").to_owned();
    let throttled = vec![(429, Some("1")), (503, None)];
    let front = ThrottlingNova::start(nova_root, throttled, Duration::from_millis(200)).await;
    let metrics = Metrics::shared();
    let limit = occm::cloud::limit::Settings { in_flight: 2, per_second: 100.0 };
    let cloud = OpenStack::with_limit(metrics.clone(), Duration::from_secs(30), limit);
    cloud.set_endpoint_override("compute", &front.url);
    cloud.set_credentials(credentials(&env, "ccm-password"));
    tokio::spawn(cloud.clone().keep_connected());
    wait_ready(&cloud, true).await;

    let gone = Lookup::Id("00000000-0000-0000-0000-00000000dead".into());
    let started = std::time::Instant::now();
    let err = cloud.server(&gone).await.unwrap_err();
    let took = started.elapsed();
    assert!(err.is_not_found(), "Nova's own answer after the retries: {err}");
    assert_eq!(metrics.calls("compute", "server_get", "throttled"), 2);
    assert_eq!(front.seen.lock().unwrap().0, 3, "two throttled answers, then Nova's");
    // 1 s (Retry-After) + 2 to 3 s (the backoff's second wait) + three 200 ms answers.
    assert!(took >= Duration::from_millis(3600), "sent again too early: {took:?}");
    assert!(took < Duration::from_secs(6), "{took:?}");

    let lookups = (0..8).map(|_| cloud.server(&gone));
    let results = futures::future::join_all(lookups).await;
    assert!(results.iter().all(|r| r.as_ref().is_err_and(cloud::Error::is_not_found)));
    let (count, _, peak) = *front.seen.lock().unwrap();
    assert_eq!((count, peak), (11, 2), "eight more lookups, at most two in flight");
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_secret_rotation_switches_credentials_without_restart() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let fake = FakeApiServer::start().await.unwrap();
    let clouds = |password: &str| {
        let yaml = format!(
            "clouds:\n  openstack:\n    auth:\n      auth_url: {}\n      username: {}\n      password: {password}\n      project_name: {}\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: {}\n",
            env["OPENSTACK_AUTH_URL"],
            env["OPENSTACK_USER"],
            env["OPENSTACK_PROJECT"],
            env["OPENSTACK_REGION"]
        );
        let secret = k8s_openapi::api::core::v1::Secret {
            data: Some(
                [("clouds.yaml".to_owned(), k8s_openapi::ByteString(yaml.into_bytes()))].into(),
            ),
            ..Default::default()
        };
        serde_json::to_value(secret).unwrap()["data"].clone()
    };
    fake.create(
        "v1",
        "secrets",
        "kube-system",
        json!({"metadata": {"name": "openstack-credentials"}, "data": clouds("wrong-password")}),
    );
    let checked = check_text(
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n",
        "cloud.conf",
    )
    .unwrap();
    let settings = occm::config::live::Settings::new(checked, "cloud.conf", 1).unwrap();
    let (_settings, current) = tokio::sync::watch::channel(std::sync::Arc::new(settings));
    let cloud = OpenStack::new(Metrics::shared(), Duration::from_secs(30));
    tokio::spawn(cloud.clone().keep_connected());
    tokio::spawn(occm::reload::feed_cloud(fake.client(), current, cloud.clone()));
    assert!(!cloud.ready());
    fake.patch(
        "v1",
        "secrets",
        "kube-system",
        "openstack-credentials",
        json!({"data": clouds(&env["OPENSTACK_PASSWORD"])}),
    );
    wait_ready(&cloud, true).await;
    cloud.servers(None).await.unwrap();
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_keystone_down_at_start_then_back_makes_the_process_ready() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let keystone: reqwest::Url = env["OPENSTACK_AUTH_URL"].parse().unwrap();
    let real = format!("{}:{}", keystone.host_str().unwrap(), keystone.port().unwrap());
    let fake = FakeApiServer::start().await.unwrap();
    let proxy_port = free_port();
    let conf = format!(
        "[Global]\nauth-url = http://127.0.0.1:{proxy_port}/v3\nusername = {}\npassword = {}\ntenant-name = {}\nuser-domain-name = Default\ntenant-domain-name = Default\nregion = {}\n",
        env["OPENSTACK_USER"],
        env["OPENSTACK_PASSWORD"],
        env["OPENSTACK_PROJECT"],
        env["OPENSTACK_REGION"]
    );
    let (process, port, _dir) = start_ccm(&fake.url(), &conf, &["--leader-elect=false"]);
    process.wait_line("cannot authenticate to OpenStack", Duration::from_secs(30)).await;
    let client = https();
    let readyz = || client.get(format!("https://127.0.0.1:{port}/readyz")).send();
    assert_eq!(readyz().await.unwrap().status(), 503);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", proxy_port)).await.unwrap();
    tokio::spawn(forward(listener, real));
    process.wait_line("authenticated to OpenStack", Duration::from_secs(90)).await;
    assert_eq!(readyz().await.unwrap().status(), 200);
    assert!(!process.log().contains(&env["OPENSTACK_PASSWORD"]), "a password reached the log");
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_binary_with_secret_credentials_initializes_a_node_end_to_end() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let name = unique("e2e");
    let server = scene(&env, &["server-create", "--name", &name, "--wait-active"]).await;
    let id = server["id"].as_str().unwrap().to_owned();
    let fake = FakeApiServer::start().await.unwrap();
    let clouds_yaml = std::fs::read_to_string(&env["OPENSTACK_CLOUDS_YAML"]).unwrap();
    // The installer's shape: the cloud is named in cloud.conf, the Secret holds clouds.yaml.
    let secret = k8s_openapi::api::core::v1::Secret {
        data: Some(
            [("clouds.yaml".to_owned(), k8s_openapi::ByteString(clouds_yaml.into_bytes()))].into(),
        ),
        ..Default::default()
    };
    let data = serde_json::to_value(secret).unwrap()["data"].clone();
    fake.create(
        "v1",
        "secrets",
        "kube-system",
        json!({"metadata": {"name": "openstack-credentials"}, "data": data}),
    );
    fake.create("v1", "nodes", "", NodeFixture::tainted(&name).ready("False").build());
    let conf = format!(
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\ncloud = {}\n",
        env["OPENSTACK_CLOUD_APPCRED"]
    );
    let (process, port, _dir) =
        start_ccm(&fake.url(), &conf, &["--leader-elect-retry-period=200ms"]);
    process.wait_line("initialized", Duration::from_secs(60)).await;
    let got = fake.get("v1", "nodes", "", &name).unwrap();
    assert_eq!(got["spec"]["providerID"], format!("openstack:///{id}"));
    let client = https();
    let ready = client.get(format!("https://127.0.0.1:{port}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let metrics = client
        .get(format!("https://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("operation=\"server_list\",result=\"ok\""), "{metrics}");
    assert!(metrics.contains("operation=\"port_list\",result=\"ok\""), "{metrics}");
    assert!(!process.log().contains(&env["OPENSTACK_APPCRED_SECRET"]), "a secret reached the log");
    scene(&env, &["server-delete", &id, "--wait"]).await;
}

#[tokio::test]
#[ignore = "needs real OpenStack (scripts/openstack-up.sh)"]
async fn real_token_auth_lists_servers() {
    let _sweep = Sweep::start();
    let env = StackEnv::load();
    let output = tokio::process::Command::new("openstack")
        .args([
            "--os-cloud",
            &env["OPENSTACK_CLOUD_PASSWORD"],
            "token",
            "issue",
            "-f",
            "value",
            "-c",
            "id",
        ])
        .env("OS_CLIENT_CONFIG_FILE", &env["OPENSTACK_CLOUDS_YAML"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let token = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let password = credentials(&env, &env["OPENSTACK_CLOUD_PASSWORD"]);
    let creds =
        Credentials { token: Some(token.into()), password: None, username: None, ..password };
    let cloud = connected(creds, Duration::from_secs(30)).await;
    if let Err(e) = cloud.servers(None).await {
        panic!("token auth: {}", cloud::session::chain(&e));
    }
}
