//! Validation rules, one behaviour per test, on small inline install-configs.

use crate::installconfig::{Defaults, Error, parse};

mod common;

const HEAD: &str = "apiVersion: v1\nmetadata:\n  name: ocp\nbaseDomain: example.com\n";

/// The errors of `HEAD` + `rest`, as printed (without the file prefix); the per-platform
/// rule tables use it too.
pub(super) fn errors(rest: &str) -> Vec<String> {
    match parse(&format!("{HEAD}{rest}"), "install-config.yaml", &Defaults::default()) {
        Ok(_) => Vec::new(),
        Err(Error::Invalid { errors, .. }) => errors.iter().map(ToString::to_string).collect(),
        Err(other) => panic!("not a validation error: {other}"),
    }
}

/// A rule table: (what the case shows, text `rest` builds an install-config tail from, the
/// exact errors), each checked with [`errors`].
pub(super) type Cases = [(&'static str, &'static str, &'static [&'static str])];

/// Checks every case of `cases`, naming the failing one.
#[track_caller]
pub(super) fn check_cases(cases: &Cases, rest: impl Fn(&str) -> String) {
    for (what, body, expected) in cases {
        assert_eq!(errors(&rest(body)), *expected, "{what}");
    }
}

/// The smallest `vsphere` platform the installer accepts, as a flow mapping: one vCenter
/// `vc` and one failure domain, with `extra` keys (`, apiVIPs: [...]`) appended.
pub(crate) fn vsphere(extra: &str) -> String {
    format!(
        "vsphere: {{vcenters: [{{server: vc, user: u, password: p, datacenters: [dc]}}], \
         failureDomains: [{{name: fd, region: r, zone: z, server: vc, topology: {{datacenter: dc, \
         computeCluster: /dc/host/c, networks: [n], datastore: /dc/datastore/ds}}}}]{extra}}}"
    )
}

#[track_caller]
fn assert_errors(rest: &str, expected: &[&str]) {
    assert_eq!(errors(rest), expected, "for:\n{rest}");
}

#[test]
fn minimal_configs_of_every_platform_are_valid() {
    for platform in [
        "openstack: {}",
        "aws: {region: us-east-1}",
        "azure: {region: eastus}",
        "gcp: {projectID: p, region: us-central1}",
        "ibmcloud: {region: us-south}",
        "nutanix: {prismCentral: {endpoint: {address: pc, port: 9440}, username: u, password: p}, prismElements: [{endpoint: {address: pe, port: 9440}, uuid: x}], subnetUUIDs: [s]}",
        &vsphere(""),
        "baremetal: {apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.7], hosts: []}",
        "none: {}",
        "none:",
        "external: {platformName: oci, cloudControllerManager: External}",
    ] {
        assert_errors(&format!("platform:\n  {platform}\n"), &[]);
    }
    let powervs = "sshKey: ssh-ed25519 AAAA\nplatform:\n  powervs: {region: dal, zone: dal10}\n";
    assert_errors(powervs, &[]);
}

#[test]
fn platforms_name_their_required_fields() {
    assert_errors(
        "platform:\n  aws: {}\n",
        &["platform.aws.region: Required value: region must be specified"],
    );
    assert_errors(
        "platform:\n  azure: {cloudName: AzureStackCloud}\n",
        &[
            "platform.azure.armEndpoint: Required value: ARM endpoint must be set when installing on Azure Stack",
            "platform.azure.region: Required value: region should be set to one of the supported Azure regions",
        ],
    );
    assert_errors(
        "platform:\n  gcp: {}\n",
        &[
            "platform.gcp.projectID: Required value: must provide a GCP project ID",
            "platform.gcp.region: Required value: must provide a region",
        ],
    );
    assert_errors(
        "platform:\n  powervs: {}\n",
        &[
            "platform.powervs.zone: Required value: zone must be specified",
            "sshKey: Required value: sshKey is required",
        ],
    );
    assert_errors(
        "platform:\n  nutanix: {}\n",
        &[
            "platform.nutanix.prismCentral.endpoint.address: Required value: must specify the Prism Central endpoint address",
            "platform.nutanix.prismCentral.endpoint.port: Invalid value: 0: The Prism Central endpoint port is invalid, must be in the range of 1 to 65535",
            "platform.nutanix.prismCentral.password: Required value: must specify the Prism Central password",
            "platform.nutanix.prismCentral.username: Required value: must specify the Prism Central username",
            "platform.nutanix.prismElements: Required value: must specify one Prism Element",
            "platform.nutanix.subnetUUIDs: Required value: must specify at least one subnet",
        ],
    );
    assert_errors(
        "platform:\n  vsphere: {vcenters: [{server: vc}], failureDomains: [{name: a, region: r, zone: z, server: other}]}\n",
        &[
            "platform.vsphere.failureDomains.server: Invalid value: \"other\": server does not exist in vcenters",
            "platform.vsphere.failureDomains.topology.computeCluster: Required value: must specify a computeCluster",
            "platform.vsphere.failureDomains.topology.datacenter: Required value: must specify a datacenter",
            "platform.vsphere.failureDomains.topology.datastore: Required value: must specify a datastore",
            "platform.vsphere.failureDomains.topology.networks: Required value: must specify a network",
            "platform.vsphere.vcenters[0].datacenters: Required value: must specify at least one datacenter",
            "platform.vsphere.vcenters[0].password: Required value: must specify the password",
            "platform.vsphere.vcenters[0].username: Required value: must specify the username",
        ],
    );
    assert_errors(
        "platform:\n  external: {cloudControllerManager: Yes}\n",
        &[
            "platform.external.cloudControllerManager: Unsupported value: \"Yes\": supported values: \"\", \"External\"",
        ],
    );
    assert_errors(
        "platform:\n  aws: {region: r, ipFamily: IPv6, serviceEndpoints: [{name: ec2, url: 'https://a'}, {name: ec2, url: 'https://'}, {name: s3, url: 'http://s3.example.com/x'}, {name: sts, url: 'sts.example.com/x'}]}\n",
        &[
            "platform.aws.ipFamily: Unsupported value: \"IPv6\": supported values: \"IPv4\", \"DualStackIPv4Primary\", \"DualStackIPv6Primary\"",
            "platform.aws.serviceEndpoints[1].name: Invalid value: \"ec2\": duplicate service endpoint not allowed for ec2, service endpoint already defined at platform.aws.serviceEndpoints[0]",
            "platform.aws.serviceEndpoints[1].url: Invalid value: \"https://\": host cannot be empty, empty host provided",
            "platform.aws.serviceEndpoints[2].url: Invalid value: \"http://s3.example.com/x\": invalid scheme http, only https allowed",
            "platform.aws.serviceEndpoints[3].url: Invalid value: \"sts.example.com/x\": no path or request parameters must be provided, \"/x\" was provided",
        ],
    );
}

#[test]
fn service_endpoint_names_are_what_the_infrastructure_crd_accepts() {
    assert_errors(
        "platform:\n  aws: {region: r, serviceEndpoints: [{name: EC2, url: 'https://a'}, {name: elasticloadbalancing, url: 'https://b'}]}\n",
        &[
            "platform.aws.serviceEndpoints[0].name: Invalid value: \"EC2\": must be an AWS service ID: lowercase letters, digits and '-' (ec2, elasticloadbalancing)",
        ],
    );
    assert_errors(
        "platform:\n  ibmcloud: {region: us-south, serviceEndpoints: [{name: iam, url: 'https://a'}, {name: VPC, url: 'https://b'}, {name: Power, url: 'https://c'}]}\n",
        &[
            "platform.ibmcloud.serviceEndpoints[0].name: Unsupported value: \"iam\": supported values: \"CIS\", \"COS\", \"COSConfig\", \"DNSServices\", \"GlobalCatalog\", \"GlobalSearch\", \"GlobalTagging\", \"HyperProtect\", \"IAM\", \"KeyProtect\", \"ResourceController\", \"ResourceManager\", \"VPC\"",
            "platform.ibmcloud.serviceEndpoints[2].name: Unsupported value: \"Power\": supported values: \"CIS\", \"COS\", \"COSConfig\", \"DNSServices\", \"GlobalCatalog\", \"GlobalSearch\", \"GlobalTagging\", \"HyperProtect\", \"IAM\", \"KeyProtect\", \"ResourceController\", \"ResourceManager\", \"VPC\"",
        ],
    );
    assert_errors(
        "sshKey: ssh-ed25519 AAAA\nplatform:\n  powervs: {region: dal, zone: dal10, userID: u, serviceEndpoints: [{name: Power, url: 'https://a'}, {name: IAM, url: 'https://b'}]}\n",
        &[],
    );
    assert_errors(
        "platform:\n  gcp: {projectID: p, region: r, serviceEndpoints: [{name: compute, url: 'https://a'}, {name: Container, url: 'https://b'}]}\n",
        &[],
    );
}

#[test]
fn networks_must_be_valid_and_disjoint() {
    let networking = "platform:\n  none: {}\nnetworking:\n  machineNetwork: [{cidr: 10.0.0.5/16}, {cidr: nope}]\n  serviceNetwork: [10.0.128.0/17]\n  clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 12}]\n";
    assert_errors(
        networking,
        &[
            "networking.clusterNetwork[0].hostPrefix: Invalid value: 12: cluster network host subnetwork prefix must not be larger size than CIDR 10.128.0.0/14",
            "networking.machineNetwork[0]: Invalid value: \"10.0.0.5/16\": invalid network address. got 10.0.0.5/16, expecting 10.0.0.0/16",
            "networking.machineNetwork[1].cidr: Invalid value: \"nope\": invalid CIDR address: nope",
            "networking.serviceNetwork[0]: Invalid value: \"10.0.128.0/17\": service network must not overlap with any of the machine networks",
        ],
    );
    assert_errors(
        "platform:\n  none: {}\nnetworking:\n  networkType: OpenShiftSDN\n",
        &[
            "networking.networkType: Invalid value: \"OpenShiftSDN\": networkType OpenShiftSDN is not supported, please use OVNKubernetes",
        ],
    );
    assert_errors(
        "platform:\n  none: {}\nnetworking:\n  machineNetwork: [{cidr: 100.64.0.0/16}]\n",
        &[
            "networking.machineNetwork[0]: Invalid value: \"100.64.0.0/16\": must not overlap with OVNKubernetes default internal subnet 100.64.0.0/16",
        ],
    );
}

#[test]
fn ip_families_follow_the_platform() {
    let v6 = "networking:\n  machineNetwork: [{cidr: 'fd00::/48'}]\n  clusterNetwork: [{cidr: 'fd01::/48', hostPrefix: 64}]\n  serviceNetwork: ['fd02::/112']\n";
    assert_errors(&format!("{v6}platform:\n  none: {{}}\n"), &[]);
    assert_errors(
        &format!("{v6}platform:\n  aws: {{region: r}}\n"),
        &[
            "networking: Invalid value: \"IPv6\": single-stack IPv6 is not supported for this platform",
        ],
    );
    let dual = "networking:\n  machineNetwork: [{cidr: 10.0.0.0/16}, {cidr: 'fd00::/48'}]\n  clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}, {cidr: 'fd01::/48', hostPrefix: 64}]\n  serviceNetwork: [172.30.0.0/16, 'fd02::/112']\n";
    assert_errors(&format!("{dual}platform:\n  openstack: {{}}\n"), &[]);
    assert_errors(
        &format!("{dual}platform:\n  gcp: {{projectID: p, region: r}}\n"),
        &[
            "networking: Invalid value: \"DualStack\": dual-stack IPv4/IPv6 is not supported for this platform, specify only one type of address",
        ],
    );
    assert_errors(
        &format!("{dual}platform:\n  aws: {{region: r, ipFamily: DualStackIPv4Primary}}\n"),
        &[],
    );
}

#[test]
fn vips_follow_the_installer_rules() {
    assert_errors(
        "platform:\n  openstack:\n    apiVIPs: [10.1.0.5]\n    ingressVIPs: [10.0.0.5]\n",
        &[
            "platform.openstack.apiVIPs: Invalid value: \"10.1.0.5\": IP expected to be in one of the machine networks: 10.0.0.0/16",
        ],
    );
    assert_errors(
        "platform:\n  openstack:\n    apiVIPs: [10.0.0.9]\n    ingressVIPs: [10.0.0.9]\n",
        &[
            "platform.openstack.apiVIPs: Invalid value: \"10.0.0.9\": VIP for API must not be one of the Ingress VIPs",
        ],
    );
    assert_errors(
        "platform:\n  openstack:\n    apiVIPs: [10.0.0.1, 10.0.0.2, 10.0.0.3]\n    ingressVIPs: [10.0.0.9, 10.0.0.10]\n",
        &[
            "platform.openstack.apiVIPs: Too many: 3: must have at most 2 items",
            "platform.openstack.ingressVIPs: Invalid value: []string{\"10.0.0.9\", \"10.0.0.10\"}: If two Ingress VIPs are given, one must be an IPv4 address, the other an IPv6",
        ],
    );
    assert_errors(
        "platform:\n  openstack:\n    loadBalancer: {type: UserManaged}\n",
        &[
            "platform.openstack.apiVIPs: Required value: must specify at least one VIP for the API",
            "platform.openstack.ingressVIPs: Required value: must specify at least one VIP for the Ingress",
        ],
    );
    // A user-managed load balancer may use one address outside the machine networks.
    assert_errors(
        "platform:\n  openstack:\n    loadBalancer: {type: UserManaged}\n    apiVIPs: [192.168.1.1]\n    ingressVIPs: [192.168.1.1]\n",
        &[],
    );
    assert_errors(
        &format!("platform:\n  {}\n", vsphere(", apiVIPs: [192.168.1.1]")),
        &[
            "platform.vsphere.ingressVIPs: Required value: must specify VIP for ingress, when VIP for API is set",
        ],
    );
    assert_errors(
        "platform:\n  openstack:\n    loadBalancer: {type: Octavia}\n",
        &[
            "platform.openstack.loadBalancer.type: Invalid value: \"Octavia\": invalid load balancer type",
        ],
    );
    assert_errors(
        "platform:\n  openstack:\n    apiFloatingIP: 1.2.3\n",
        &[
            "platform.openstack.apiFloatingIP: Invalid value: \"1.2.3\": \"1.2.3\" is not a valid IP",
            "platform.openstack.apiFloatingIP: Invalid value: \"1.2.3\": Cannot set floating ips when external network not specified",
        ],
    );
}

#[test]
fn top_level_fields_are_checked() {
    assert_errors(
        "platform:\n  openstack: {}\nproxy: {}\n",
        &["proxy: Required value: must include httpProxy or httpsProxy"],
    );
    assert_errors(
        "platform:\n  openstack: {}\nproxy:\n  httpProxy: 'ftp://proxy'\n  httpsProxy: proxy.example.com\n  noProxy: '.example.com,10.0.0.0/8,*.bad'\n",
        &[
            "proxy.httpProxy: Unsupported value: \"ftp\": supported values: \"http\"",
            "proxy.httpsProxy: Invalid value: \"proxy.example.com\": parse \"proxy.example.com\": invalid URI for request",
            "proxy.noProxy: Invalid value: \".example.com,10.0.0.0/8,*.bad\": each element of noProxy must be a IP, CIDR or domain without wildcard characters, which is violated by element 2 \"*.bad\"",
        ],
    );
    assert_errors(
        "platform:\n  openstack: {}\nadditionalTrustBundle: not a cert\n",
        &["additionalTrustBundle: Invalid value: \"not a cert\": invalid block"],
    );
    assert_errors(
        "platform:\n  openstack: {}\npublish: Internal\n",
        &[
            "publish: Invalid value: \"Internal\": Internal publish strategy is not supported on \"openstack\" platform",
        ],
    );
    assert_errors(
        "platform:\n  aws: {region: r}\npublish: Private\n",
        &[
            "publish: Unsupported value: \"Private\": supported values: \"External\", \"Internal\", \"Mixed\"",
        ],
    );
    assert_errors(
        "platform:\n  openstack: {}\nfeatureGates: [Foo=maybe]\n",
        &[
            "featureGates: Forbidden: featureGates can only be used with the CustomNoUpgrade feature set",
            "featureGates[0]: Invalid value: \"Foo=maybe\": must match the format <feature-name>=<bool>, could not parse boolean value",
        ],
    );
    assert_errors(
        "platform:\n  openstack: {}\nsshKey: not-a-key\n",
        &["sshKey: Invalid value: \"not-a-key\": ssh: no key found"],
    );
}

#[test]
fn machine_pools_are_checked() {
    assert_errors(
        "platform:\n  openstack: {}\ncontrolPlane: {replicas: 0}\ncompute: [{name: worker}, {name: worker}, {name: infra}]\n",
        &[
            "compute[1].name: Duplicate value: \"worker\"",
            "compute[2].name: Unsupported value: \"infra\": supported values: \"worker\", \"edge\"",
            "controlPlane.replicas: Invalid value: 0: number of control plane replicas must be positive",
        ],
    );
    assert_errors(
        "platform:\n  openstack: {}\ncontrolPlane: {replicas: 1}\ncompute: [{name: worker, replicas: 0}]\n",
        &[],
    );
}

#[test]
fn credentials_mode_follows_the_platform_table() {
    let cases = [
        ("aws: {region: r}", "Mint", None),
        ("aws: {region: r}", "Passthrough", None),
        ("gcp: {projectID: p, region: r}", "Manual", None),
        (
            "azure: {region: r}",
            "Mint",
            Some(
                "credentialsMode: Unsupported value: \"Mint\": supported values: \"Manual\", \"Passthrough\"",
            ),
        ),
        (
            "azure: {region: r, cloudName: AzureStackCloud, armEndpoint: 'https://arm'}",
            "Passthrough",
            Some(
                "credentialsMode: Unsupported value: \"Passthrough\": supported values: \"Manual\"",
            ),
        ),
        (
            "ibmcloud: {region: r}",
            "Passthrough",
            Some(
                "credentialsMode: Unsupported value: \"Passthrough\": supported values: \"Manual\"",
            ),
        ),
        (
            "nutanix: {prismCentral: {endpoint: {address: pc, port: 9440}, username: u, password: p}, prismElements: [{endpoint: {address: pe, port: 9440}, uuid: x}], subnetUUIDs: [s]}",
            "Mint",
            Some("credentialsMode: Unsupported value: \"Mint\": supported values: \"Manual\""),
        ),
        ("openstack: {}", "Manual", None),
        (
            "openstack: {}",
            "Mint",
            Some("credentialsMode: Unsupported value: \"Mint\": supported values: \"Manual\""),
        ),
        (
            &vsphere(""),
            "Manual",
            Some(
                "credentialsMode: Invalid value: \"Manual\": cannot be set when using the \"vsphere\" platform",
            ),
        ),
        (
            "none: {}",
            "Manual",
            Some(
                "credentialsMode: Invalid value: \"Manual\": cannot be set when using the \"none\" platform",
            ),
        ),
        (
            "aws: {region: r}",
            "Borrow",
            Some(
                "credentialsMode: Unsupported value: \"Borrow\": supported values: \"Manual\", \"Mint\", \"Passthrough\"",
            ),
        ),
    ];
    for (platform, mode, expected) in cases {
        let got = errors(&format!("platform:\n  {platform}\ncredentialsMode: {mode}\n"));
        assert_eq!(got, expected.into_iter().collect::<Vec<_>>(), "{platform} {mode}");
    }
}

#[test]
fn cluster_names_follow_the_platform_rule() {
    let head = "apiVersion: v1\nbaseDomain: example.com\n";
    let name_errors = |name: &str, platform: &str| -> Vec<String> {
        let text = format!("{head}metadata:\n  name: {name}\nplatform:\n  {platform}\n");
        match parse(&text, "f", &Defaults::default()) {
            Err(Error::Invalid { errors, .. }) => errors.iter().map(ToString::to_string).collect(),
            _ => Vec::new(),
        }
    };
    assert_eq!(
        name_errors("a.b", "openstack: {}"),
        ["metadata.name: Invalid value: \"a.b\": cluster name must not contain '.'"]
    );
    assert_eq!(
        name_errors("'1abc'", "gcp: {projectID: p, region: r}"),
        [
            "metadata.name: Invalid value: \"1abc\": cluster name must begin with a lower-case letter"
        ]
    );
    assert!(name_errors("a.b", "aws: {region: r}").is_empty());
}
