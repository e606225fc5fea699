//! PowerVS's cloud config and Infrastructure, on exact text.

use serde_json::json;

use super::*;
use crate::installconfig::{Defaults, parse};
use ccm_formats::gcfg;

const INFRA_ID: &str = "ocp-x7k2p";
const ACCOUNT: &str = "1e1f75646aef447814a6d907cc83fb3c";

fn config(powervs: &str) -> InstallConfig {
    let text = format!(
        "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\n\
         sshKey: ssh-ed25519 AAAA\ncredentialsMode: Manual\nplatform:\n  powervs: {powervs}\n"
    );
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

fn platform(powervs: &str) -> PowerVsPlatform {
    config(powervs).platform.powervs.expect("a powervs platform")
}

#[test]
fn defaults_name_the_vpc_subnets_and_workspace_after_the_infra_id() {
    let pvs = platform("{region: dal, zone: dal10, userID: me}");
    assert_eq!(
        cloud_config(&pvs, INFRA_ID, ACCOUNT),
        "[global]\nversion = 1.1.0\n[kubernetes]\nconfig-file = \"\"\n[provider]\n\
         accountID = 1e1f75646aef447814a6d907cc83fb3c\nclusterID = ocp-x7k2p\n\
         cluster-default-provider = g2\nregion = us-south\n\
         g2Credentials = /etc/vpc/ibmcloud_api_key\ng2ResourceGroupName = \n\
         g2VpcName = vpc-ocp-x7k2p\ng2workerServiceAccountID = 1e1f75646aef447814a6d907cc83fb3c\n\
         g2VpcSubnetNames = ocp-x7k2p-vpcsubnet-us-south-1,ocp-x7k2p-vpcsubnet-us-south-2,\
         ocp-x7k2p-vpcsubnet-us-south-3\n\
         powerVSCloudInstanceID = \npowerVSCloudInstanceName = ocp-x7k2p-power-iaas\n\
         powerVSRegion = dal\npowerVSZone = dal10\n\
         g2EndpointOverride = \niamEndpointOverride = \npowerVSEndpointOverride = \n\
         rcEndpointOverride = \nrmEndpointOverride = \n"
    );
}

#[test]
fn a_workspace_guid_and_overrides_are_written_as_given() {
    let pvs = platform(
        "{region: mad, zone: mad02, userID: me, powervsResourceGroup: ocp-rg, \
         serviceInstanceGUID: 6f2c1b6e-1f5a-4c39-9d43-3d2b1b1e9a10, vpcRegion: eu-es, \
         vpcName: shared-vpc, vpcSubnets: [subnet-a, subnet-b], serviceEndpoints: [\
         {name: IAM, url: 'https://private.iam.cloud.ibm.com'}, \
         {name: VPC, url: 'https://eu-es.private.iaas.cloud.ibm.com/v1'}, \
         {name: Power, url: 'https://private.mad.power-iaas.cloud.ibm.com'}, \
         {name: ResourceController, url: 'https://private.resource-controller.cloud.ibm.com'}, \
         {name: ResourceManager, url: 'https://private.resource-controller.cloud.ibm.com'}, \
         {name: COS, url: 'https://s3.direct.eu-de.cloud-object-storage.appdomain.cloud'}]}",
    );
    let text = cloud_config(&pvs, INFRA_ID, ACCOUNT);
    assert_eq!(
        text,
        "[global]\nversion = 1.1.0\n[kubernetes]\nconfig-file = \"\"\n[provider]\n\
         accountID = 1e1f75646aef447814a6d907cc83fb3c\nclusterID = ocp-x7k2p\n\
         cluster-default-provider = g2\nregion = eu-es\n\
         g2Credentials = /etc/vpc/ibmcloud_api_key\ng2ResourceGroupName = ocp-rg\n\
         g2VpcName = shared-vpc\ng2workerServiceAccountID = 1e1f75646aef447814a6d907cc83fb3c\n\
         g2VpcSubnetNames = subnet-a,subnet-b\n\
         powerVSCloudInstanceID = 6f2c1b6e-1f5a-4c39-9d43-3d2b1b1e9a10\n\
         powerVSCloudInstanceName = \npowerVSRegion = mad\npowerVSZone = mad02\n\
         g2EndpointOverride = https://eu-es.private.iaas.cloud.ibm.com/v1\n\
         iamEndpointOverride = https://private.iam.cloud.ibm.com\n\
         powerVSEndpointOverride = https://private.mad.power-iaas.cloud.ibm.com\n\
         rcEndpointOverride = https://private.resource-controller.cloud.ibm.com\n\
         rmEndpointOverride = https://private.resource-controller.cloud.ibm.com\n"
    );
    let doc = gcfg::parse(&text).unwrap();
    assert_eq!(doc.get("provider", "powerVSCloudInstanceName"), Some(""));
    assert_eq!(doc.get("kubernetes", "config-file"), Some(""));
}

#[test]
fn the_vpc_region_follows_the_powervs_region_unless_set() {
    assert_eq!(vpc_region(&platform("{region: wdc, zone: wdc06, userID: me}")), Some("us-east"));
    let set = platform("{region: wdc, zone: wdc06, userID: me, vpcRegion: us-south}");
    assert_eq!(vpc_region(&set), Some("us-south"));
    // An empty region is the zone's, as the installer's validation fills it.
    let from_zone = platform("{zone: wdc07}");
    assert_eq!((from_zone.region.as_str(), vpc_region(&from_zone)), ("wdc", Some("us-east")));
    // Not an install-config the validation accepts (unknown zone), so built directly.
    let unknown = PowerVsPlatform {
        region: "atlantis".to_owned(),
        zone: "atl01".to_owned(),
        ..PowerVsPlatform::default()
    };
    assert_eq!(vpc_region(&unknown), None);
    assert_eq!(subnet_names(&unknown, INFRA_ID), Vec::<String>::new());
    assert!(REGIONS.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
    assert!(REGIONS.iter().all(|(_, vpc)| regions::zones(vpc).is_some()), "every VPC region known");
}

#[test]
fn infrastructure_carries_region_zone_group_and_endpoints() {
    let (spec, status) = infrastructure(&config("{region: dal, zone: dal10, userID: me}"));
    assert_eq!(spec, json!({}));
    assert_eq!(status, json!({"region": "dal", "zone": "dal10"}));
    let with = config(
        "{region: dal, zone: dal10, userID: me, powervsResourceGroup: rg, \
         serviceEndpoints: [{name: IAM, url: 'https://private.iam.cloud.ibm.com'}]}",
    );
    let endpoints = json!([{"name": "IAM", "url": "https://private.iam.cloud.ibm.com"}]);
    let (spec, status) = infrastructure(&with);
    assert_eq!(spec, json!({"serviceEndpoints": endpoints}));
    assert_eq!(
        status,
        json!({"region": "dal", "zone": "dal10", "resourceGroup": "rg", "serviceEndpoints": endpoints})
    );
}
