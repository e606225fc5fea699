use serde_json::json;

use super::*;
use crate::assets::go_json::go_html_escape;
use crate::installconfig::{Defaults, parse};

const INFRA_ID: &str = "demo-x7k2p";

fn config(azure: &str) -> InstallConfig {
    let text = format!(
        "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\nplatform:\n  azure: {azure}\n"
    );
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

fn principal() -> ServicePrincipal {
    ServicePrincipal {
        subscription_id: "11111111-2222-3333-4444-555555555555".into(),
        tenant_id: "66666666-7777-8888-9999-000000000000".into(),
        client_id: Some("client-id".into()),
        client_secret: Some(Secret::new("cl1ent-s3cr3t")),
    }
}

/// The expected text is written with four-space indents for legibility; the format uses tabs.
fn tabs(text: &str) -> String {
    text.replace("\n    ", "\n\t")
}

#[test]
fn public_cloud_defaults_match_the_installer_byte_for_byte() {
    let expected = r#"{
    "cloud": "AzurePublicCloud",
    "tenantId": "66666666-7777-8888-9999-000000000000",
    "aadClientId": "",
    "aadClientSecret": "",
    "aadClientCertPath": "",
    "aadClientCertPassword": "",
    "useManagedIdentityExtension": false,
    "userAssignedIdentityID": "",
    "subscriptionId": "11111111-2222-3333-4444-555555555555",
    "resourceGroup": "demo-x7k2p-rg",
    "location": "eastus",
    "vnetName": "demo-x7k2p-vnet",
    "vnetResourceGroup": "demo-x7k2p-rg",
    "subnetName": "demo-x7k2p-worker-subnet",
    "securityGroupName": "demo-x7k2p-nsg",
    "routeTableName": "demo-x7k2p-node-routetable",
    "vmType": "standard",
    "loadBalancerSku": "standard",
    "cloudProviderBackoff": true,
    "useInstanceMetadata": true,
    "excludeMasterFromStandardLB": false,
    "cloudProviderBackoffDuration": 6,
    "putVMSSVMBatchSize": 0,
    "enableMigrateToIPBasedBackendPoolAPI": false
}
"#;
    let text = cloud_config(&config("{region: eastus}"), INFRA_ID, &principal());
    assert_eq!(text, tabs(expected));
    assert!(!text.contains("cl1ent-s3cr3t") && !text.contains("client-id"), "{text}");
}

const EXISTING: &str = "\n    region: usgovvirginia\n    cloudName: AzureUSGovernmentCloud\n    resourceGroupName: cluster-rg\n    networkResourceGroupName: network-rg\n    virtualNetwork: shared-vnet\n    computeSubnet: compute-subnet\n    controlPlaneSubnet: control-subnet";

#[test]
fn existing_resources_replace_the_generated_names() {
    let expected = r#"{
    "cloud": "AzureUSGovernmentCloud",
    "tenantId": "66666666-7777-8888-9999-000000000000",
    "aadClientId": "",
    "aadClientSecret": "",
    "aadClientCertPath": "",
    "aadClientCertPassword": "",
    "useManagedIdentityExtension": false,
    "userAssignedIdentityID": "",
    "subscriptionId": "11111111-2222-3333-4444-555555555555",
    "resourceGroup": "cluster-rg",
    "location": "usgovvirginia",
    "vnetName": "shared-vnet",
    "vnetResourceGroup": "network-rg",
    "subnetName": "compute-subnet",
    "securityGroupName": "demo-x7k2p-nsg",
    "routeTableName": "demo-x7k2p-node-routetable",
    "vmType": "standard",
    "loadBalancerSku": "standard",
    "cloudProviderBackoff": true,
    "useInstanceMetadata": true,
    "excludeMasterFromStandardLB": false,
    "cloudProviderBackoffDuration": 6,
    "putVMSSVMBatchSize": 0,
    "enableMigrateToIPBasedBackendPoolAPI": false
}
"#;
    assert_eq!(cloud_config(&config(EXISTING), INFRA_ID, &principal()), tabs(expected));
}

const STACK: &str = "{region: mtcazs, cloudName: AzureStackCloud, armEndpoint: 'https://management.mtcazs.example.com'}";

#[test]
fn azure_stack_adds_the_arm_endpoint_and_drops_instance_metadata() {
    let expected = r#"{
    "cloud": "AzureStackCloud",
    "tenantId": "66666666-7777-8888-9999-000000000000",
    "aadClientId": "",
    "aadClientSecret": "",
    "aadClientCertPath": "",
    "aadClientCertPassword": "",
    "useManagedIdentityExtension": false,
    "userAssignedIdentityID": "",
    "subscriptionId": "11111111-2222-3333-4444-555555555555",
    "resourceManagerEndpoint": "https://management.mtcazs.example.com",
    "resourceGroup": "demo-x7k2p-rg",
    "location": "mtcazs",
    "vnetName": "demo-x7k2p-vnet",
    "vnetResourceGroup": "demo-x7k2p-rg",
    "subnetName": "demo-x7k2p-worker-subnet",
    "securityGroupName": "demo-x7k2p-nsg",
    "routeTableName": "demo-x7k2p-node-routetable",
    "vmType": "standard",
    "loadBalancerSku": "standard",
    "cloudProviderBackoff": true,
    "excludeMasterFromStandardLB": false,
    "cloudProviderBackoffDuration": 6,
    "putVMSSVMBatchSize": 0,
    "enableMigrateToIPBasedBackendPoolAPI": false
}
"#;
    assert_eq!(cloud_config(&config(STACK), INFRA_ID, &principal()), tabs(expected));
}

#[test]
fn html_characters_are_escaped_as_go_does() {
    assert_eq!(
        go_html_escape("a<b>&c\u{2028}\u{2029}é"),
        "a\\u003cb\\u003e\\u0026c\\u2028\\u2029é"
    );
    let text = go_json_indented(&json!({"k": ["<x>"]}));
    assert_eq!(text, "{\n\t\"k\": [\n\t\t\"\\u003cx\\u003e\"\n\t]\n}\n");
}

#[test]
fn the_service_principal_file_is_parsed_without_echoing_values() {
    let file = r#"{"subscriptionId":"11111111-2222-3333-4444-555555555555","clientId":"client-id","clientSecret":"cl1ent-s3cr3t","tenantId":"66666666-7777-8888-9999-000000000000","extra":1}"#;
    assert_eq!(from_file(file).unwrap(), principal());
    let manual = from_file(r#"{"subscriptionId":"s","tenantId":"t","clientSecret":""}"#).unwrap();
    assert_eq!((manual.client_id, manual.client_secret), (None, None));
    let cases = [
        ("{\"clientSecret\": \"cl1ent-s3cr3t\"", "the service principal file is not valid JSON"),
        ("\"cl1ent-s3cr3t\"", "the service principal file must hold a JSON object"),
        (r#"{"tenantId":"t"}"#, "the service principal file has no subscriptionId"),
        (r#"{"subscriptionId":"s","tenantId":""}"#, "the service principal file has no tenantId"),
        (
            r#"{"subscriptionId":"s","tenantId":"t","clientSecret":["cl1ent-s3cr3t"]}"#,
            "the service principal file's clientSecret must be a string",
        ),
    ];
    for (text, message) in cases {
        let err = from_file(text).unwrap_err();
        let chain = format!(
            "{err}: {}",
            std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default()
        );
        assert_eq!(err.to_string(), message);
        assert!(!chain.contains("s3cr3t"), "{chain}");
    }
}

#[test]
fn env_values_need_subscription_and_tenant_and_a_whole_client_pair() {
    assert!(from_env(None, Some(""), None, None).unwrap().is_none());
    let full = from_env(
        Some("11111111-2222-3333-4444-555555555555"),
        Some("66666666-7777-8888-9999-000000000000"),
        Some("client-id"),
        Some("cl1ent-s3cr3t"),
    );
    assert_eq!(full.unwrap(), Some(principal()));
    let manual = from_env(Some("s"), Some("t"), None, None).unwrap().unwrap();
    assert_eq!(
        manual.client().unwrap_err().to_string(),
        "the service principal has no clientId (AZURE_CLIENT_ID): the azure-credentials Secret needs a client ID and secret unless credentialsMode is Manual"
    );
    let cases = [
        ((None, Some("t"), None, None), "AZURE_TENANT_ID is set but AZURE_SUBSCRIPTION_ID is not"),
        ((Some("s"), None, None, None), "AZURE_SUBSCRIPTION_ID is set but AZURE_TENANT_ID is not"),
        (
            (Some("s"), Some("t"), Some("c"), None),
            "AZURE_CLIENT_ID is set but AZURE_CLIENT_SECRET is not",
        ),
        (
            (Some("s"), Some("t"), None, Some("x")),
            "AZURE_CLIENT_SECRET is set but AZURE_CLIENT_ID is not",
        ),
        (
            (None, None, Some("c"), Some("x")),
            "AZURE_CLIENT_ID is set but AZURE_SUBSCRIPTION_ID is not",
        ),
    ];
    for ((subscription, tenant, id, secret), message) in cases {
        let err = from_env(subscription, tenant, id, secret).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn the_secret_holds_the_client_and_cluster_names_and_debug_hides_it() {
    let sp = principal();
    let debug = format!("{sp:?} {sp:#?}");
    assert!(!debug.contains("cl1ent-s3cr3t") && debug.contains("client-id"), "{debug}");
    let data = secret_data(&sp, &config(EXISTING), INFRA_ID).unwrap();
    let expected = [
        ("azure_client_id", "client-id"),
        ("azure_client_secret", "cl1ent-s3cr3t"),
        ("azure_region", "usgovvirginia"),
        ("azure_resource_prefix", "demo-x7k2p"),
        ("azure_resourcegroup", "cluster-rg"),
        ("azure_subscription_id", "11111111-2222-3333-4444-555555555555"),
        ("azure_tenant_id", "66666666-7777-8888-9999-000000000000"),
    ];
    let data: Vec<_> = data.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(data, expected);
    let no_secret = ServicePrincipal { client_secret: None, ..sp.clone() };
    let err = secret_data(&no_secret, &config(EXISTING), INFRA_ID).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the service principal has no clientSecret (AZURE_CLIENT_SECRET): the azure-credentials Secret needs a client ID and secret unless credentialsMode is Manual"
    );
    let state = serde_json::to_string(&sp).unwrap();
    assert_eq!(serde_json::from_str::<ServicePrincipal>(&state).unwrap(), sp);
}

#[test]
fn infrastructure_matches_the_installer() {
    let (spec, status) = infrastructure(&config("{region: eastus}"), INFRA_ID);
    assert_eq!(spec, Value::Null);
    assert_eq!(
        status,
        json!({
            "resourceGroupName": "demo-x7k2p-rg",
            "networkResourceGroupName": "demo-x7k2p-rg",
            "cloudName": "AzurePublicCloud",
            "ipFamily": "IPv4",
            "cloudLoadBalancerConfig": {"dnsType": "PlatformDefault"},
        })
    );
    let (_, status) = infrastructure(&config(EXISTING), INFRA_ID);
    assert_eq!(
        status,
        json!({
            "resourceGroupName": "cluster-rg",
            "networkResourceGroupName": "network-rg",
            "cloudName": "AzureUSGovernmentCloud",
            "ipFamily": "IPv4",
            "cloudLoadBalancerConfig": {"dnsType": "PlatformDefault"},
        })
    );
    // The installer takes user tags on the public cloud only.
    let tagged = config("{region: eastus, userTags: {team: a, cost: b}}");
    let (_, status) = infrastructure(&tagged, INFRA_ID);
    let tags = json!([{"key": "cost", "value": "b"}, {"key": "team", "value": "a"}]);
    assert_eq!(status["resourceTags"], tags);
    let (_, status) = infrastructure(&config(STACK), INFRA_ID);
    assert_eq!(status["armEndpoint"], "https://management.mtcazs.example.com");
    assert_eq!(status["cloudName"], "AzureStackCloud");
}
