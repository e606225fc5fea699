use serde_json::json;

use super::*;
use crate::installconfig::{Defaults, parse};

const BASE: &str = "\n    prismCentral:\n      endpoint: {address: pc.example.com, port: 9440}\n      username: admin@example.com\n      password: 'pr1sm-s3cr3t'\n    prismElements:\n    - {endpoint: {address: pe.example.com, port: 9440}, uuid: 0005b0f1-8f43-a0f2-02b7-3cecef193712, name: pe-cluster}\n    subnetUUIDs: [c7938dc6-7659-453e-a688-e26020c68e43]";

const VIPS: &str = "\n    apiVIPs: [10.0.0.5]\n    ingressVIPs: [10.0.0.7]";

fn config(nutanix: &str) -> InstallConfig {
    let text = format!(
        "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\nplatform:\n  nutanix: {nutanix}\n"
    );
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

#[test]
fn cloud_config_matches_the_installer_byte_for_byte() {
    let expected = "{
\t\"prismCentral\": {
\t\t\"address\": \"pc.example.com\",
\t\t\"port\": 9440,
\t\t\"credentialRef\": {
\t\t\t\"kind\": \"Secret\",
\t\t\t\"name\": \"nutanix-credentials\",
\t\t\t\"namespace\": \"openshift-cloud-controller-manager\"
\t\t}
\t},
\t\"topologyDiscovery\": {
\t\t\"type\": \"Prism\",
\t\t\"topologyCategories\": null
\t},
\t\"enableCustomLabeling\": true
}
";
    let text = cloud_config(&config(&format!("{BASE}{VIPS}")), "demo-x7k2p");
    assert_eq!(text, expected);
    assert!(!text.contains("s3cr3t") && !text.contains("admin@"), "{text}");
}

#[test]
fn credentials_are_the_installer_basic_auth_json() {
    let config = config(BASE);
    let expected = r#"[{"type":"basic_auth","data":{"prismCentral":{"username":"admin@example.com","password":"pr1sm-s3cr3t"},"prismElements":null}}]"#;
    assert_eq!(credentials_json(&config), expected);
    let data = secret_data(&config);
    assert_eq!(
        data.into_iter().collect::<Vec<_>>(),
        [("credentials".to_owned(), expected.to_owned())]
    );
    // Go's json.Marshal escapes HTML characters; the value reads back the same.
    let html = config_with_password("a<b>&\"c\\");
    let text = credentials_json(&html);
    assert!(text.contains(r#""password":"a\u003cb\u003e\u0026\"c\\""#), "{text}");
    let back: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back[0]["data"]["prismCentral"]["password"], "a<b>&\"c\\");
    let debug = format!("{:?}", config.platform.nutanix);
    assert!(!debug.contains("s3cr3t"), "{debug}");
}

fn config_with_password(password: &str) -> InstallConfig {
    let mut config = config(BASE);
    if let Some(nutanix) = config.platform.nutanix.as_mut() {
        nutanix.prism_central.password = crate::installconfig::Secret::new(password);
    }
    config
}

#[test]
fn infrastructure_matches_the_installer() {
    let endpoint = |address: &str| json!({"address": address, "port": 9440});
    let spec = json!({
        "prismCentral": endpoint("pc.example.com"),
        "prismElements": [{"endpoint": endpoint("pe.example.com"), "name": "pe-cluster"}],
        "failureDomains": [],
    });
    assert_eq!(infrastructure(&config(BASE)), (spec.clone(), Value::Null));
    let (with_vips, status) = infrastructure(&config(&format!("{BASE}{VIPS}")));
    assert_eq!(with_vips, spec);
    assert_eq!(
        status,
        json!({
            "apiServerInternalIP": "10.0.0.5",
            "apiServerInternalIPs": ["10.0.0.5"],
            "ingressIP": "10.0.0.7",
            "ingressIPs": ["10.0.0.7"],
            "loadBalancer": {"type": "OpenShiftManagedDefault"},
        })
    );
    let user_managed = config(&format!("{BASE}{VIPS}\n    loadBalancer: {{type: UserManaged}}"));
    assert_eq!(infrastructure(&user_managed).1["loadBalancer"], json!({"type": "UserManaged"}));
}

#[test]
fn failure_domains_reference_elements_and_subnets_by_uuid() {
    let domains = "\n    failureDomains:\n    - name: fd-a\n      prismElement: {uuid: 0005b0f1-aaaa, endpoint: {address: pe-a, port: 9440}, name: pe-a}\n      subnetUUIDs: [s-1, s-2]";
    let (spec, _) = infrastructure(&config(&format!("{BASE}{domains}")));
    assert_eq!(
        spec["failureDomains"],
        json!([{
            "name": "fd-a",
            "cluster": {"type": "UUID", "uuid": "0005b0f1-aaaa"},
            "subnets": [{"type": "UUID", "uuid": "s-1"}, {"type": "UUID", "uuid": "s-2"}],
        }])
    );
}

#[test]
fn an_unnamed_prism_element_is_left_for_the_caller_to_name() {
    let unnamed = BASE.replace(", name: pe-cluster", "");
    let (spec, _) = infrastructure(&config(&unnamed));
    assert_eq!(spec["prismElements"][0]["name"], "");
}
