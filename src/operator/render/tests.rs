//! The operator renders exactly what `create manifests` writes (every example and platform
//! fixture, object by object), and reads the live objects by CCCMO's rules.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;
use crate::create::{self, Env, Request};

/// The IBM account the tests name (`--ibm-account-id`, offline).
const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every example (`assets/examples/<platform>`) and every platform fixture
/// (`tests/fixtures/<platform>/<variant>`), by name.
fn cases() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for row in platform::PLATFORMS {
        let example = repo().join("assets/examples").join(row.name);
        if example.is_dir() {
            out.push((row.name.to_owned(), example));
        }
        let Ok(entries) = std::fs::read_dir(repo().join("tests/fixtures").join(row.name)) else {
            continue;
        };
        let mut variants: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        variants.sort();
        for variant in variants.into_iter().filter(|p| p.is_dir()) {
            let name = variant.file_name().unwrap().to_string_lossy().into_owned();
            out.push((format!("{}/{name}", row.name), variant));
        }
    }
    out
}

/// `create manifests --offline` on a copy of `from` (its install-config passed through
/// `edit`), with the credentials every platform reads, as tests/it runs it.
fn create(from: &Path, edit: impl FnOnce(String) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, home, cwd) =
        (tmp.path().join("cluster"), tmp.path().join("home"), tmp.path().join("cwd"));
    for d in [&dir, &cwd] {
        std::fs::create_dir_all(d).unwrap();
    }
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let config = dir.join("install-config.yaml");
    std::fs::write(&config, edit(std::fs::read_to_string(&config).unwrap())).unwrap();
    let clouds = dir.join("clouds.yaml");
    if let Ok(text) = std::fs::read_to_string(&clouds) {
        let ca = format!("cacert: {}", dir.join("ca.pem").display());
        std::fs::write(&clouds, text.replace("cacert: ca.pem", &ca)).unwrap();
    }
    let fixtures = repo().join("tests/fixtures/credentials");
    for (rel, fixture) in [
        (".aws/credentials", "aws-credentials"),
        (".azure/osServicePrincipal.json", "osServicePrincipal.json"),
        (".gcp/osServiceAccount.json", "osServiceAccount.json"),
    ] {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(fixtures.join(fixture), path).unwrap();
    }
    let mut vars = vec![("HOME", home.into_os_string()), ("IC_API_KEY", "example-ibm-key".into())];
    if clouds.exists() {
        vars.push(("OS_CLIENT_CONFIG_FILE", clouds.into_os_string()));
    }
    let env =
        Env::from_vars(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()), cwd);
    let request = Request {
        offline: true,
        infra_id: Some("demo-x7k2p".into()),
        ibm_account_id: Some(ACCOUNT.into()),
        ..Request::new(&dir, env)
    };
    create::create_manifests(&request).unwrap_or_else(|e| panic!("{}: {e:#}", from.display()));
    tmp
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The live cluster `create manifests`' output in `dir` becomes once installed: its
/// Infrastructure, cloud-provider ConfigMap and credentials Secret (base64 `data`, as the API
/// returns a Secret), and the Network and Proxy the installer makes from the install-config.
fn cluster_of(dir: &Path) -> Cluster {
    let optional = |rel: &str| dir.join(rel).exists().then(|| yaml(&dir.join(rel)));
    let credentials = optional("openshift/99_cloud-creds-secret.yaml").map(|mut secret| {
        if let Some(Value::Object(strings)) = secret.as_object_mut().unwrap().remove("stringData") {
            for (key, value) in strings {
                secret["data"][key] = json!(STANDARD.encode(value.as_str().unwrap()));
            }
        }
        secret
    });
    let config = create::load_install_config(dir, &Env::default()).unwrap().config;
    let network = json!({
        "apiVersion": "config.openshift.io/v1",
        "kind": "Network",
        "metadata": {"name": "cluster"},
        "spec": {"clusterNetwork": config.networking.cluster_network,
                 "serviceNetwork": config.networking.service_network},
    });
    let proxy = config.proxy.map(|proxy| {
        json!({"apiVersion": "config.openshift.io/v1", "kind": "Proxy",
               "metadata": {"name": "cluster"}, "spec": proxy, "status": proxy})
    });
    Cluster {
        infrastructure: yaml(&dir.join("manifests/cluster-infrastructure-02-config.yml")),
        cloud_config: optional("manifests/cloud-provider-config.yaml"),
        credentials,
        network: Some(network),
        proxy,
    }
}

/// Every file under `manifests/ccm/` in `dir`: path → (object, written as a secret).
fn written(dir: &Path) -> BTreeMap<String, (Value, bool)> {
    let Ok(entries) = std::fs::read_dir(dir.join("manifests/ccm")) else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for entry in entries {
        let path = entry.unwrap().path();
        let secret = path.metadata().unwrap().permissions().mode() & 0o777 == 0o600;
        let rel = format!("manifests/ccm/{}", path.file_name().unwrap().to_string_lossy());
        out.insert(rel, (yaml(&path), secret));
    }
    out
}

/// Renders `from`'s cluster and compares it with what `create manifests` wrote; returns how
/// many objects there were.
fn assert_parity(name: &str, from: &Path, edit: impl FnOnce(String) -> String) -> usize {
    let tmp = create(from, edit);
    let dir = tmp.path().join("cluster");
    let rendered = objects(&cluster_of(&dir), &Images::default())
        .unwrap_or_else(|e| panic!("{name}: {e} ({})", e.reason()));
    let rendered: BTreeMap<String, (Value, bool)> =
        rendered.into_iter().map(|o| (o.path, (o.value, o.secret))).collect();
    let written = written(&dir);
    assert_eq!(rendered.keys().collect::<Vec<_>>(), written.keys().collect::<Vec<_>>(), "{name}");
    for (path, object) in &written {
        assert_eq!(&rendered[path], object, "{name}: {path}");
    }
    written.len()
}

#[test]
fn the_operator_renders_every_ccm_object_create_manifests_writes_for_every_example_and_fixture() {
    let mut with_ccm = Vec::new();
    for (name, from) in cases() {
        if assert_parity(&name, &from, |text| text) > 0 {
            with_ccm.push(name);
        }
    }
    // Not vacuous: every platform with a CCM has an example here, and each wrote its CCM.
    for row in platform::PLATFORMS.iter().filter(|p| p.provider.ccm().is_some()) {
        assert!(with_ccm.iter().any(|n| n == row.name), "{}: no CCM objects compared", row.name);
    }
}

#[test]
fn the_operator_renders_the_install_config_proxy_as_create_manifests_does() {
    let proxy = "proxy:\n  httpProxy: http://proxy.example.com:3128\n  noProxy: .example.com\n";
    let from = repo().join("assets/examples/openstack");
    assert!(assert_parity("openstack+proxy", &from, |text| format!("{text}{proxy}")) > 0);
}

/// An OpenStack cluster as the installer leaves it, with `cloud_config`'s data.
fn openstack(data: Value) -> Cluster {
    let clouds = "clouds:\n  openstack:\n    auth: {}\n";
    Cluster {
        infrastructure: json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "Infrastructure",
            "metadata": {"name": "cluster"},
            "spec": {"cloudConfig": {"name": "cloud-provider-config", "key": "config"}},
            "status": {
                "controlPlaneTopology": "HighlyAvailable",
                "infrastructureName": "demo-x7k2p",
                "platformStatus": {"type": "OpenStack"},
            },
        }),
        cloud_config: Some(json!({"data": data})),
        credentials: Some(json!({"data": {"clouds.yaml": STANDARD.encode(clouds)}})),
        network: Some(json!({"spec": {"clusterNetwork": [{"cidr": "10.128.0.0/14"}]}})),
        proxy: None,
    }
}

const GOOD: &str = "[Global]\nregion = r1\n";

fn object<'a>(objects: &'a [Object], path: &str) -> &'a Value {
    &objects.iter().find(|o| o.path == path).unwrap_or_else(|| panic!("no {path}")).value
}

fn deployment(cluster: &Cluster) -> Value {
    let objects = objects(cluster, &Images::default()).unwrap();
    object(&objects, "manifests/ccm/20-deployment.yaml").clone()
}

#[test]
fn the_cloud_conf_key_is_read_before_the_infrastructure_key() {
    let cluster = openstack(json!({"config": "[Global]\nsecret-name = x\n", "cloud.conf": GOOD}));
    let objects = objects(&cluster, &Images::default()).unwrap();
    let conf = object(&objects, "manifests/ccm/10-cloud-conf.yaml")["data"]["cloud.conf"].clone();
    assert!(conf.as_str().unwrap().contains("region = r1"), "{conf}");
    assert_eq!(
        cloud_conf(&cluster, &Images::default()).unwrap()[0].value["data"]["cloud.conf"],
        conf
    );
}

#[test]
fn a_cloud_config_without_the_key_is_refused_naming_the_config_map_and_the_key() {
    let error = objects(&openstack(json!({"other": GOOD})), &Images::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "openshift-config/cloud-provider-config: key \"config\" specified in \
         Infrastructure/cluster spec.cloudConfig.key does not exist (nor does key \"cloud.conf\")"
    );
    assert_eq!(error.reason(), "CloudConfigKeyMissing");
    assert!(error.is_cloud_config());
}

#[test]
fn a_missing_cloud_config_is_refused_naming_it() {
    let cluster = Cluster { cloud_config: None, ..openstack(json!({})) };
    let error = objects(&cluster, &Images::default()).unwrap_err();
    assert_eq!(error.reason(), "CloudConfigMissing");
    assert!(error.to_string().starts_with("openshift-config/cloud-provider-config: not found"));
}

#[test]
fn a_non_default_secret_name_is_refused_with_the_transforms_own_words() {
    let cluster = openstack(json!({"config": "[Global]\nsecret-name = other\n"}));
    for error in [
        objects(&cluster, &Images::default()).unwrap_err(),
        cloud_conf(&cluster, &Images::default()).unwrap_err(),
    ] {
        assert_eq!(error.reason(), "CloudConfigInvalid");
        let message = error.to_string();
        assert!(message.starts_with("openshift-config/cloud-provider-config: data.config: "));
        assert!(
            message.contains("'[Global] secret-name' is set to a non-default value"),
            "{message}"
        );
    }
}

#[test]
fn a_cloud_config_that_does_not_parse_is_refused_with_its_line() {
    let cluster = openstack(json!({"config": "[Global\n"}));
    let error = objects(&cluster, &Images::default()).unwrap_err();
    assert_eq!(error.reason(), "CloudConfigInvalid");
    assert!(error.to_string().contains("cloud.conf does not parse: line 1"), "{error}");
}

#[test]
fn a_single_replica_control_plane_runs_one_ccm_and_any_other_two() {
    let mut cluster = openstack(json!({"config": GOOD}));
    assert_eq!(deployment(&cluster)["spec"]["replicas"], 2);
    cluster.infrastructure["status"]["controlPlaneTopology"] = json!("SingleReplica");
    assert_eq!(deployment(&cluster)["spec"]["replicas"], 1);
}

#[test]
fn the_proxy_status_is_appended_to_the_ccm_env_only_where_set() {
    let mut cluster = openstack(json!({"config": GOOD}));
    let env = |cluster: &Cluster| {
        deployment(cluster)["spec"]["template"]["spec"]["containers"][0]["env"].clone()
    };
    let without = env(&cluster);
    cluster.proxy = Some(json!({"status": {
        "httpProxy": "http://proxy:3128", "httpsProxy": "", "noProxy": ".cluster.local,10.0.0.0/16",
    }}));
    let mut want = without.as_array().unwrap().clone();
    want.push(json!({"name": "HTTP_PROXY", "value": "http://proxy:3128"}));
    want.push(json!({"name": "NO_PROXY", "value": ".cluster.local,10.0.0.0/16"}));
    assert_eq!(env(&cluster), Value::Array(want));
}

#[test]
fn the_route_controller_runs_exactly_when_the_cloud_config_names_a_router() {
    let args = |config: &str| {
        deployment(&openstack(json!({"config": config})))["spec"]["template"]["spec"]["containers"]
            [0]["args"]
            .clone()
    };
    let args_of = |config: &str| {
        args(config)
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let routed = args_of("[Global]\n[Route]\nrouter-id = 5e1f0c3a-7b2d-4c8e-9a6f-0d1e2f3a4b5c\n");
    assert!(routed.contains(&"--cluster-cidr=10.128.0.0/14".to_owned()), "{routed:?}");
    assert!(!routed.iter().any(|a| a.starts_with("--configure-cloud-routes")), "{routed:?}");
    for unrouted in [GOOD, "[Route]\nrouter-id =\n"] {
        let args = args_of(unrouted);
        assert!(args.contains(&"--configure-cloud-routes=false".to_owned()), "{args:?}");
        assert!(!args.iter().any(|a| a.starts_with("--cluster-cidr")), "{args:?}");
    }
}

#[test]
fn credentials_that_are_not_base64_are_refused_naming_the_key_never_the_value() {
    let mut cluster = openstack(json!({"config": GOOD}));
    cluster.credentials = Some(json!({"data": {"clouds.yaml": "not base64 at all!"}}));
    let error = objects(&cluster, &Images::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "kube-system/openstack-credentials: data.clouds.yaml: not base64"
    );
    assert_eq!(error.reason(), "CredentialsInvalid");
    assert!(!error.is_cloud_config());
}

#[test]
fn the_infrastructure_names_the_platform_its_secret_and_its_cloud_config() {
    let cluster = openstack(json!({}));
    assert_eq!(
        cloud_config_ref(&cluster.infrastructure),
        Some(("cloud-provider-config", "config"))
    );
    assert_eq!(credentials_secret(&cluster.infrastructure), Some("openstack-credentials"));
    assert!(has_ccm(&cluster.infrastructure));
    let mut none = cluster.clone();
    none.infrastructure["status"]["platformStatus"]["type"] = json!("None");
    assert_eq!(objects(&none, &Images::default()), Ok(Vec::new()));
    assert_eq!(credentials_secret(&none.infrastructure), None);
    let mut unknown = cluster;
    unknown.infrastructure["status"]["platformStatus"]["type"] = json!("Moon");
    let error = objects(&unknown, &Images::default()).unwrap_err();
    assert_eq!(error.reason(), "UnsupportedPlatform");
    assert!(error.to_string().contains("\"Moon\""), "{error}");
}
