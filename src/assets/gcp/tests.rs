use serde_json::json;

use super::*;
use crate::installconfig::{Defaults, parse};
use ccm_formats::gcfg;

const INFRA_ID: &str = "demo-x7k2p";

fn config(gcp: &str) -> InstallConfig {
    // Passthrough: the mode the installer allows with a shared VPC (`networkProjectID`).
    let text = format!(
        "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\n\
         credentialsMode: Passthrough\nplatform:\n  gcp: {gcp}\n"
    );
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

const HEAD: &str = "[global]
project-id      = my-project
regional        = true
multizone       = true
node-tags       = demo-x7k2p-master
node-tags       = demo-x7k2p-control-plane
node-tags       = demo-x7k2p-worker
node-instance-prefix = demo-x7k2p
external-instance-groups-prefix = demo-x7k2p
";

/// What the CCM reads with gcfg: `(key, every value)` of `[global]`.
fn read_back(text: &str) -> Vec<(String, Vec<String>)> {
    let doc = gcfg::parse(text).unwrap_or_else(|err| panic!("{err}\n{text}"));
    let mut keys: Vec<String> = Vec::new();
    for entry in doc.sections_named("global").flat_map(|s| &s.entries) {
        if !keys.contains(&entry.key) {
            keys.push(entry.key.clone());
        }
    }
    keys.into_iter()
        .map(|key| {
            let values = doc.get_all("global", &key).map(|e| e.text().to_owned()).collect();
            (key, values)
        })
        .collect()
}

#[test]
fn defaults_match_the_installer_template_and_end_with_an_empty_line() {
    let text = cloud_config(&config("{projectID: my-project, region: us-central1}"), INFRA_ID);
    assert_eq!(text, format!("{HEAD}subnetwork-name = demo-x7k2p-worker-subnet\n\n"));
    let values = read_back(&text);
    let get = |key: &str| values.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    assert_eq!(get("project-id").unwrap(), ["my-project"]);
    assert_eq!(
        (get("regional").unwrap(), get("multizone").unwrap()),
        (vec!["true".to_owned()], vec!["true".to_owned()])
    );
    assert_eq!(
        get("node-tags").unwrap(),
        ["demo-x7k2p-master", "demo-x7k2p-control-plane", "demo-x7k2p-worker"]
    );
    assert_eq!(get("node-instance-prefix").unwrap(), ["demo-x7k2p"]);
    assert_eq!(get("external-instance-groups-prefix").unwrap(), ["demo-x7k2p"]);
    assert_eq!(get("subnetwork-name").unwrap(), ["demo-x7k2p-worker-subnet"]);
    assert_eq!(values.len(), 7);
}

#[test]
fn a_shared_vpc_adds_the_network_project_and_uses_the_compute_subnet() {
    let shared = config(
        "{projectID: my-project, region: us-central1, networkProjectID: host-project, network: shared, computeSubnet: shared-compute, controlPlaneSubnet: shared-cp}",
    );
    let text = cloud_config(&shared, INFRA_ID);
    assert_eq!(
        text,
        format!("{HEAD}subnetwork-name = shared-compute\nnetwork-project-id = host-project\n\n")
    );
    let values = read_back(&text);
    assert_eq!(
        values[values.len() - 1],
        ("network-project-id".to_owned(), vec!["host-project".to_owned()])
    );
}

#[test]
fn compute_and_container_endpoints_become_api_endpoints() {
    let endpoints = config(
        "\n    projectID: my-project\n    region: us-central1\n    serviceEndpoints:\n    - {name: container, url: 'https://container-psc.p.googleapis.com'}\n    - {name: storage, url: 'https://storage-psc.p.googleapis.com'}\n    - {name: compute, url: 'https://compute-psc.p.googleapis.com/compute/v1/'}",
    );
    let text = cloud_config(&endpoints, INFRA_ID);
    assert_eq!(
        text,
        format!(
            "{HEAD}subnetwork-name = demo-x7k2p-worker-subnet\n\
             api-endpoint = https://compute-psc.p.googleapis.com/compute/v1/\n\
             container-api-endpoint = https://container-psc.p.googleapis.com\n\n"
        )
    );
    let values = read_back(&text);
    let get = |key: &str| values.iter().find(|(k, _)| k == key).map(|(_, v)| v[0].clone());
    assert_eq!(get("api-endpoint").unwrap(), "https://compute-psc.p.googleapis.com/compute/v1/");
    assert_eq!(get("container-api-endpoint").unwrap(), "https://container-psc.p.googleapis.com");
}

#[test]
fn openshift_api_spellings_of_the_service_names_match_too() {
    let endpoints = config(
        "\n    projectID: my-project\n    region: us-central1\n    serviceEndpoints:\n    - {name: Compute, url: 'https://compute-psc.p.googleapis.com'}\n    - {name: Container, url: 'https://container-psc.p.googleapis.com'}",
    );
    let text = cloud_config(&endpoints, INFRA_ID);
    assert!(
        text.ends_with(
            "api-endpoint = https://compute-psc.p.googleapis.com\n\
             container-api-endpoint = https://container-psc.p.googleapis.com\n\n"
        ),
        "{text}"
    );
}

#[test]
fn ingress_uid_is_the_md5_prefix_of_the_infra_id() {
    // printf %s demo-x7k2p | md5sum → 6055e31a27c992965e6d302b084f67c2
    assert_eq!(ingress_uid("demo-x7k2p"), "6055e31a27c99296");
    // printf %s ocp-abcde | md5sum → f9f7f3cbbc80f9921fbd792bead734b2
    assert_eq!(ingress_uid("ocp-abcde"), "f9f7f3cbbc80f992");
    assert_eq!(
        ingress_uid_config_map("demo-x7k2p"),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ingress-uid", "namespace": "kube-system"},
            "data": {"uid": "6055e31a27c99296", "provider-uid": "6055e31a27c99296"},
        })
    );
}

const KEY_FILE: &str = r#"{
  "type": "service_account",
  "project_id": "my-project",
  "private_key_id": "0123",
  "private_key": "-----BEGIN PRIVATE KEY-----\npr1vate-s3cr3t\n-----END PRIVATE KEY-----\n",
  "client_email": "installer@my-project.iam.gserviceaccount.com"
}"#;

#[test]
fn a_service_account_key_is_kept_whole_and_hidden_from_debug() {
    let account = from_file(KEY_FILE).unwrap();
    assert_eq!(account.project_id, "my-project");
    assert_eq!(account.client_email, "installer@my-project.iam.gserviceaccount.com");
    let debug = format!("{account:?} {account:#?}");
    assert!(!debug.contains("s3cr3t") && debug.contains("installer@"), "{debug}");
    let data = secret_data(&account);
    assert_eq!(data.keys().collect::<Vec<_>>(), ["service_account.json"]);
    assert_eq!(data["service_account.json"], KEY_FILE);
    let state = serde_json::to_string(&account).unwrap();
    assert_eq!(serde_json::from_str::<ServiceAccount>(&state).unwrap(), account);
}

#[test]
fn service_account_errors_name_the_field_and_never_the_key() {
    let without = |field: &str| {
        let mut value: Value = serde_json::from_str(KEY_FILE).unwrap();
        value.as_object_mut().unwrap().remove(field);
        value.to_string()
    };
    let hint = ": a service-account key (\"type\": \"service_account\") is required";
    let mut cases = vec![
        (
            "{\"private_key\": \"pr1vate-s3cr3t\"".to_owned(),
            "the service account file is not valid JSON".to_owned(),
        ),
        (
            "[\"pr1vate-s3cr3t\"]".to_owned(),
            "the service account file must hold a JSON object".to_owned(),
        ),
        (
            KEY_FILE.replace(
                "\"client_email\": \"installer@my-project.iam.gserviceaccount.com\"",
                "\"client_email\": 7",
            ),
            "the service account file's client_email must be a string".to_owned(),
        ),
        (
            KEY_FILE.replace("\"project_id\": \"my-project\"", "\"project_id\": \"\""),
            format!("the service account file has no project_id{hint}"),
        ),
    ];
    for field in ["type", "project_id", "private_key", "client_email"] {
        cases.push((without(field), format!("the service account file has no {field}{hint}")));
    }
    for (text, message) in cases {
        let err = from_file(&text).unwrap_err();
        let source = std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default();
        assert_eq!(err.to_string(), message);
        assert!(!format!("{err} {source} {err:?}").contains("s3cr3t"), "{err:?}");
    }
}

#[test]
fn infrastructure_matches_the_installer() {
    let (spec, status) = infrastructure(&config("{projectID: my-project, region: us-central1}"));
    assert_eq!(spec, Value::Null);
    assert_eq!(
        status,
        json!({
            "projectID": "my-project",
            "region": "us-central1",
            "cloudLoadBalancerConfig": {"dnsType": "PlatformDefault"},
        })
    );
    let tagged = config(
        "\n    projectID: my-project\n    region: us-central1\n    userProvisionedDNS: Enabled\n    userLabels: [{key: team, value: a}, {key: cost, value: b}]\n    userTags: [{parentID: '1234', key: env, value: prod}]",
    );
    let (_, status) = infrastructure(&tagged);
    assert_eq!(
        status,
        json!({
            "projectID": "my-project",
            "region": "us-central1",
            "resourceLabels": [{"key": "team", "value": "a"}, {"key": "cost", "value": "b"}],
            "resourceTags": [{"parentID": "1234", "key": "env", "value": "prod"}],
            "cloudLoadBalancerConfig": {"dnsType": "ClusterHosted"},
        })
    );
}
