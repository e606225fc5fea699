//! IBM Cloud's cloud config, Secret and Infrastructure, on exact text.

use serde_json::json;

use super::*;
use crate::installconfig::{Defaults, parse};
use ccm_formats::gcfg;

const INFRA_ID: &str = "ocp-x7k2p";
const ACCOUNT: &str = "1e1f75646aef447814a6d907cc83fb3c";

fn config(ibmcloud: &str) -> InstallConfig {
    let text = format!(
        "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\n\
         credentialsMode: Manual\nplatform:\n  ibmcloud: {ibmcloud}\n"
    );
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

fn platform(ibmcloud: &str) -> IbmCloudPlatform {
    config(ibmcloud).platform.ibmcloud.expect("an ibmcloud platform")
}

fn render(ibm: &IbmCloudPlatform) -> String {
    let zones = regions::zones(&ibm.region).unwrap_or_default();
    cloud_config(ibm, INFRA_ID, ACCOUNT, resource_group_name(ibm, INFRA_ID), zones)
}

const HEAD: &str = "[global]\nversion = 1.1.0\n[kubernetes]\nconfig-file = \"\"\n[provider]\n\
                    accountID = 1e1f75646aef447814a6d907cc83fb3c\nclusterID = ocp-x7k2p\n\
                    cluster-default-provider = g2\n";

#[test]
fn existing_subnets_are_listed_control_plane_first_in_input_order() {
    let ibm = platform(
        "{region: eu-gb, resourceGroupName: ocp-rg, vpcName: shared-vpc, \
         networkResourceGroupName: net-rg, controlPlaneSubnets: [cp-2, cp-1], \
         computeSubnets: [compute-2, compute-1]}",
    );
    let expected = format!(
        "{HEAD}region = eu-gb\ng2Credentials = /etc/vpc/ibmcloud_api_key\n\
         g2ResourceGroupName = ocp-rg\ng2VpcName = shared-vpc\n\
         g2workerServiceAccountID = 1e1f75646aef447814a6d907cc83fb3c\n\
         g2VpcSubnetNames = cp-2,cp-1,compute-2,compute-1\n\n\n"
    );
    assert_eq!(render(&ibm), expected);
}

#[test]
fn without_subnets_the_generated_names_of_every_zone_are_listed_sorted() {
    let ibm = platform("{region: us-south}");
    let expected = format!(
        "{HEAD}region = us-south\ng2Credentials = /etc/vpc/ibmcloud_api_key\n\
         g2ResourceGroupName = ocp-x7k2p\ng2VpcName = ocp-x7k2p-vpc\n\
         g2workerServiceAccountID = 1e1f75646aef447814a6d907cc83fb3c\n\
         g2VpcSubnetNames = ocp-x7k2p-subnet-compute-us-south-1,ocp-x7k2p-subnet-compute-us-south-2,\
         ocp-x7k2p-subnet-compute-us-south-3,ocp-x7k2p-subnet-control-plane-us-south-1,\
         ocp-x7k2p-subnet-control-plane-us-south-2,ocp-x7k2p-subnet-control-plane-us-south-3\n\n\n"
    );
    assert_eq!(render(&ibm), expected);
}

#[test]
fn one_endpoint_override_adds_one_line_before_the_empty_lines() {
    let ibm = platform(
        "{region: us-east, vpcName: vpc, controlPlaneSubnets: [cp], computeSubnets: [w], \
         serviceEndpoints: [{name: IAM, url: 'https://private.iam.cloud.ibm.com'}]}",
    );
    let expected = format!(
        "{HEAD}region = us-east\ng2Credentials = /etc/vpc/ibmcloud_api_key\n\
         g2ResourceGroupName = ocp-x7k2p\ng2VpcName = vpc\n\
         g2workerServiceAccountID = 1e1f75646aef447814a6d907cc83fb3c\ng2VpcSubnetNames = cp,w\n\
         iamEndpointOverride = https://private.iam.cloud.ibm.com\n\n\n"
    );
    assert_eq!(render(&ibm), expected);
}

#[test]
fn several_overrides_come_in_the_installer_order_and_the_vpc_url_loses_its_version() {
    let ibm = platform(
        "{region: us-south, vpcName: vpc, controlPlaneSubnets: [cp], computeSubnets: [w], \
         serviceEndpoints: [\
         {name: ResourceManager, url: 'https://private.resource-controller.cloud.ibm.com'}, \
         {name: COS, url: 'https://s3.direct.us-south.cloud-object-storage.appdomain.cloud'}, \
         {name: VPC, url: 'https://us-south.private.iaas.cloud.ibm.com/v1'}, \
         {name: IAM, url: 'https://private.iam.cloud.ibm.com'}]}",
    );
    let text = render(&ibm);
    let expected_tail = "g2VpcSubnetNames = cp,w\n\
         iamEndpointOverride = https://private.iam.cloud.ibm.com\n\
         g2EndpointOverride = https://us-south.private.iaas.cloud.ibm.com\n\
         rmEndpointOverride = https://private.resource-controller.cloud.ibm.com\n\n\n";
    assert!(text.ends_with(expected_tail), "{text}");
    let doc = gcfg::parse(&text).unwrap();
    assert_eq!(
        doc.get("provider", "g2EndpointOverride"),
        Some("https://us-south.private.iaas.cloud.ibm.com")
    );
    assert_eq!(doc.get("provider", "cosEndpointOverride"), None);
}

#[test]
fn only_a_trailing_api_version_is_stripped() {
    for (url, want) in [
        ("https://vpc.example/v1", "https://vpc.example"),
        ("https://vpc.example/v21/", "https://vpc.example"),
        ("https://vpc.example/api/v1", "https://vpc.example/api"),
        ("https://vpc.example", "https://vpc.example"),
        ("https://vpc.example/", "https://vpc.example/"),
        ("https://vpc.example/v1//", "https://vpc.example/v1//"),
        ("https://vpc.example/v", "https://vpc.example/v"),
        ("https://vpc.example/v1beta", "https://vpc.example/v1beta"),
    ] {
        assert_eq!(strip_api_version(url), want, "{url}");
    }
}

#[test]
fn the_secret_holds_the_api_key_under_its_one_key() {
    let data = secret_data(&Secret::new("s3cret-key"));
    assert_eq!(data, BTreeMap::from([("ibmcloud_api_key".to_owned(), "s3cret-key".to_owned())]));
    assert_eq!(SECRET_NAME, "ibmcloud-credentials");
}

#[test]
fn infrastructure_status_names_location_resource_group_provider_and_endpoints() {
    let (spec, status) = infrastructure(&config("{region: us-south}"), INFRA_ID);
    assert_eq!(spec, json!({}));
    assert_eq!(
        status,
        json!({"location": "us-south", "resourceGroupName": "ocp-x7k2p", "providerType": "VPC"})
    );
    let with = config(
        "{region: eu-de, resourceGroupName: rg, serviceEndpoints: [{name: IAM, url: 'https://private.iam.cloud.ibm.com'}]}",
    );
    let (_, status) = infrastructure(&with, INFRA_ID);
    assert_eq!(
        status,
        json!({
            "location": "eu-de", "resourceGroupName": "rg", "providerType": "VPC",
            "serviceEndpoints": [{"name": "IAM", "url": "https://private.iam.cloud.ibm.com"}],
        })
    );
}
