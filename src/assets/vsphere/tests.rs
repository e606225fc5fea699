//! vSphere's cloud configs (YAML and INI), Secret and Infrastructure, on exact text.

use serde_json::json;

use super::*;
use crate::installconfig::{Defaults, parse};
use ccm_formats::gcfg;

const INFRA_ID: &str = "ocp-x7k2p";

fn config(rest: &str) -> InstallConfig {
    let text = format!("apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\n{rest}");
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

/// One vCenter, one failure domain, no folder (so the default one), VIPs.
fn one_domain() -> InstallConfig {
    config(
        "networking:\n  machineNetwork: [{cidr: 192.168.10.0/24}]\nplatform:\n  vsphere:\n\
         \x20   apiVIPs: [192.168.10.5]\n    ingressVIPs: [192.168.10.7]\n    vcenters:\n\
         \x20   - {server: vcenter.example.com, user: administrator@vsphere.local, password: s3cret, datacenters: [dc1]}\n\
         \x20   failureDomains:\n    - name: fd-1\n      region: region-a\n      zone: zone-a\n\
         \x20     server: vcenter.example.com\n      topology:\n        datacenter: dc1\n\
         \x20       computeCluster: /dc1/host/cluster1\n        networks: [vm-network]\n\
         \x20       datastore: /dc1/datastore/ds1\n        resourcePool: /dc1/host/cluster1/Resources\n",
    )
}

/// Two vCenters (one on another port), three failure domains, one of them in a datacenter
/// its vCenter does not list, explicit node networking on the domains' network, no VIPs.
fn three_domains() -> InstallConfig {
    let domain = |name: &str, server: &str, dc: &str, extra: &str| {
        format!(
            "    - name: {name}\n      region: {dc}\n      zone: {name}\n      server: {server}\n\
             \x20     topology: {{datacenter: {dc}, computeCluster: /{dc}/host/c1, networks: [vm-internal], \
             datastore: /{dc}/datastore/ds{extra}}}\n"
        )
    };
    config(&format!(
        "platform:\n  vsphere:\n    vcenters:\n\
         \x20   - {{server: vc1.example.com, user: u1, password: p1, datacenters: [dc1]}}\n\
         \x20   - {{server: vc2.example.com, port: 8443, user: u2, password: p2, datacenters: [dc3]}}\n\
         \x20   nodeNetworking:\n      external: {{networkSubnetCidr: [10.1.0.0/16]}}\n\
         \x20     internal: {{network: vm-internal, networkSubnetCidr: [10.0.0.0/16, 'fd00::/64'], \
         excludeNetworkSubnetCidr: [10.0.0.5/32]}}\n    failureDomains:\n{}{}{}",
        domain("fd-a", "vc1.example.com", "dc1", ", folder: /dc1/vm/custom"),
        domain("fd-b", "vc1.example.com", "dc2", ""),
        domain("fd-c", "vc2.example.com", "dc3", ""),
    ))
}

/// The one failure domain the installer requires, on vCenter `vc`.
const DOMAIN_ON_VC: &str = "    failureDomains: [{name: fd, region: r, zone: z, server: vc, topology: \
    {datacenter: dc, computeCluster: /dc/host/c, networks: [n], datastore: /dc/datastore/ds}}]\n";

const ONE_DOMAIN_YAML: &str = "global:
  insecureFlag: true
  secretName: vsphere-creds
  secretNamespace: kube-system
nodes:
  externalNetworkSubnetCidr: 192.168.10.0/24
  internalNetworkSubnetCidr: 192.168.10.0/24
vcenter:
  vcenter.example.com:
    datacenters:
    - dc1
    server: vcenter.example.com
";

const THREE_DOMAINS_YAML: &str = "global:
  insecureFlag: true
  secretName: vsphere-creds
  secretNamespace: kube-system
labels:
  region: openshift-region
  zone: openshift-zone
nodes:
  excludeInternalNetworkSubnetCidr: 10.0.0.5/32
  externalNetworkSubnetCidr: 10.1.0.0/16
  internalNetworkSubnetCidr: 10.0.0.0/16,fd00::/64
  internalVmNetworkName: vm-internal
vcenter:
  vc1.example.com:
    datacenters:
    - dc1
    - dc2
    server: vc1.example.com
  vc2.example.com:
    datacenters:
    - dc3
    port: 8443
    server: vc2.example.com
";

const ONE_DOMAIN_INI: &str = r#"[Global]
secret-name = "vsphere-creds"
secret-namespace = "kube-system"
insecure-flag = "1"

[VirtualCenter "vcenter.example.com"]
datacenters = "dc1"

[Workspace]
server = "vcenter.example.com"
datacenter = "dc1"
default-datastore = "/dc1/datastore/ds1"
folder = "/dc1/vm/ocp-x7k2p"
resourcepool-path = "/dc1/host/cluster1/Resources"

"#;

const THREE_DOMAINS_INI: &str = r#"[Global]
secret-name = "vsphere-creds"
secret-namespace = "kube-system"
insecure-flag = "1"

[VirtualCenter "vc1.example.com"]
datacenters = "dc1,dc2"
[VirtualCenter "vc2.example.com"]
port = "8443"

datacenters = "dc3"

[Workspace]
server = "vc1.example.com"
datacenter = "dc1"
default-datastore = "/dc1/datastore/ds"
folder = "/dc1/vm/custom"
resourcepool-path = "/dc1/host/c1/Resources"

[Labels]
region = "openshift-region"
zone = "openshift-zone"
"#;

#[test]
fn yaml_with_one_failure_domain_has_no_labels_and_limits_nodes_to_the_machine_network() {
    assert_eq!(cloud_config(&one_domain(), INFRA_ID, ConfigFormat::Yaml), ONE_DOMAIN_YAML);
}

#[test]
fn yaml_with_three_failure_domains_has_labels_every_datacenter_and_the_given_node_networking() {
    assert_eq!(cloud_config(&three_domains(), INFRA_ID, ConfigFormat::Yaml), THREE_DOMAINS_YAML);
}

#[test]
fn ini_with_one_failure_domain_matches_the_installer_layout() {
    assert_eq!(cloud_config(&one_domain(), INFRA_ID, ConfigFormat::Ini), ONE_DOMAIN_INI);
}

#[test]
fn ini_with_three_failure_domains_matches_the_installer_layout() {
    assert_eq!(cloud_config(&three_domains(), INFRA_ID, ConfigFormat::Ini), THREE_DOMAINS_INI);
}

#[test]
fn ini_reads_back_through_gcfg_with_virtual_center_subsections() {
    let doc = gcfg::parse(THREE_DOMAINS_INI).unwrap();
    assert_eq!(doc.get("Global", "secret-name"), Some("vsphere-creds"));
    assert_eq!(doc.get("Global", "insecure-flag"), Some("1"));
    let vcenters: Vec<String> = doc
        .sections
        .iter()
        .filter(|s| s.name == "VirtualCenter")
        .map(|s| {
            let entries: Vec<String> =
                s.entries.iter().map(|e| format!("{}={}", e.key, e.text())).collect();
            format!("{}: {}", s.subsection.as_deref().unwrap_or("-"), entries.join(" "))
        })
        .collect();
    assert_eq!(
        vcenters,
        ["vc1.example.com: datacenters=dc1,dc2", "vc2.example.com: port=8443 datacenters=dc3"]
    );
    assert_eq!(doc.get("Workspace", "folder"), Some("/dc1/vm/custom"));
    // No resource pool given: the installer's default, the cluster's root pool.
    assert_eq!(doc.get("Workspace", "resourcepool-path"), Some("/dc1/host/c1/Resources"));
    assert_eq!(doc.get("Labels", "zone"), Some("openshift-zone"));
    assert_eq!(doc.get("Labels", "region"), Some("openshift-region"));
    let one = gcfg::parse(ONE_DOMAIN_INI).unwrap();
    assert_eq!(one.get("Workspace", "folder"), Some("/dc1/vm/ocp-x7k2p"));
    assert!(!one.has_section("Labels"));
}

#[test]
fn yaml_parses_back_to_the_intended_tree() {
    let back: serde_json::Value = serde_saphyr::from_str(THREE_DOMAINS_YAML).unwrap();
    assert_eq!(
        back["global"],
        json!({"insecureFlag": true, "secretName": "vsphere-creds", "secretNamespace": "kube-system"})
    );
    assert_eq!(
        back["vcenter"]["vc2.example.com"],
        json!({"datacenters": ["dc3"], "port": 8443, "server": "vc2.example.com"})
    );
    assert_eq!(back["labels"], json!({"region": "openshift-region", "zone": "openshift-zone"}));
    let one: serde_json::Value = serde_saphyr::from_str(ONE_DOMAIN_YAML).unwrap();
    assert!(one["vcenter"]["vcenter.example.com"].get("port").is_none(), "no port unless set");
    assert!(one["vcenter"]["vcenter.example.com"].get("insecureFlag").is_none());
    assert!(one.get("labels").is_none());
}

#[test]
fn ini_values_gcfg_would_misread_are_escaped_inside_the_quotes() {
    let odd = config(
        "platform:\n  vsphere:\n    vcenters:\n\
         \x20   - {server: vc1, user: u, password: p, datacenters: ['dc#1']}\n\
         \x20   failureDomains: [{name: fd, region: r, zone: z, server: vc1, topology: {datacenter: 'dc#1', \
         computeCluster: '/dc#1/host/c;1', networks: [n], datastore: '/dc#1/datastore/ds \"a\"'}}]\n",
    );
    let text = cloud_config(&odd, INFRA_ID, ConfigFormat::Ini);
    assert!(text.contains("[VirtualCenter \"vc1\"]\ndatacenters = \"dc#1\"\n"), "{text}");
    let doc = gcfg::parse(&text).unwrap();
    assert_eq!(doc.get("Workspace", "datacenter"), Some("dc#1"));
    assert_eq!(doc.get("Workspace", "default-datastore"), Some("/dc#1/datastore/ds \"a\""));
    assert_eq!(doc.get("Workspace", "folder"), Some("/dc#1/vm/ocp-x7k2p"));
    assert_eq!(doc.get("Workspace", "resourcepool-path"), Some("/dc#1/host/c;1/Resources"));
}

#[test]
fn the_ini_writer_quotes_a_vcenter_subsection_and_falls_back_without_failure_domains() {
    // Validation refuses such a server and requires a failure domain; the writer is safe anyway.
    let p: VspherePlatform = serde_json::from_value(json!({
        "vcenters": [{"server": "vc\"1", "user": "u", "password": "p", "datacenters": ["dc#1"]}],
    }))
    .unwrap();
    let text = ini::render(&p, INFRA_ID);
    assert!(text.contains("[VirtualCenter \"vc\\\"1\"]\ndatacenters = \"dc#1\"\n"), "{text}");
    let doc = gcfg::parse(&text).unwrap();
    assert_eq!(doc.sections[1].subsection.as_deref(), Some("vc\"1"));
    assert_eq!(doc.get("Workspace", "server"), Some("vc\"1"));
    assert_eq!(doc.get("Workspace", "folder"), Some("/dc#1/vm/ocp-x7k2p"));
}

#[test]
fn the_secret_has_a_username_and_password_per_vcenter() {
    let p = three_domains().platform.vsphere.unwrap();
    let expected: BTreeMap<String, String> = [
        ("vc1.example.com.password", "p1"),
        ("vc1.example.com.username", "u1"),
        ("vc2.example.com.password", "p2"),
        ("vc2.example.com.username", "u2"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(secret_data(&p), expected);
}

#[test]
fn infrastructure_spec_and_status_follow_the_installer() {
    let (spec, status) = infrastructure(&one_domain(), INFRA_ID);
    let cidrs = json!(["192.168.10.0/24"]);
    assert_eq!(
        spec,
        json!({
            "vcenters": [{"server": "vcenter.example.com", "datacenters": ["dc1"]}],
            "failureDomains": [{
                "name": "fd-1", "region": "region-a", "zone": "zone-a",
                "server": "vcenter.example.com",
                "topology": {
                    "datacenter": "dc1", "computeCluster": "/dc1/host/cluster1",
                    "networks": ["vm-network"], "datastore": "/dc1/datastore/ds1",
                    "resourcePool": "/dc1/host/cluster1/Resources",
                    "template": "/dc1/vm/ocp-x7k2p-rhcos-region-a-zone-a",
                },
            }],
            "nodeNetworking": {
                "external": {"networkSubnetCidr": cidrs},
                "internal": {"networkSubnetCidr": cidrs},
            },
            "apiServerInternalIPs": ["192.168.10.5"],
            "ingressIPs": ["192.168.10.7"],
            "machineNetworks": ["192.168.10.0/24", "192.168.10.5/32", "192.168.10.7/32"],
        })
    );
    assert_eq!(
        status,
        json!({
            "apiServerInternalIPs": ["192.168.10.5"],
            "ingressIPs": ["192.168.10.7"],
            "machineNetworks": spec["machineNetworks"],
        })
    );
}

#[test]
fn infrastructure_without_vips_keeps_user_node_networking_and_templates() {
    let (spec, status) = infrastructure(&three_domains(), INFRA_ID);
    assert_eq!(
        spec["nodeNetworking"],
        json!({
            "external": {"networkSubnetCidr": ["10.1.0.0/16"]},
            "internal": {"network": "vm-internal", "networkSubnetCidr": ["10.0.0.0/16", "fd00::/64"],
                         "excludeNetworkSubnetCidr": ["10.0.0.5/32"]},
        })
    );
    assert_eq!(
        spec["vcenters"][1],
        json!({"server": "vc2.example.com", "port": 8443, "datacenters": ["dc3"]})
    );
    assert_eq!(spec["failureDomains"][0]["topology"]["folder"], json!("/dc1/vm/custom"));
    assert_eq!(
        spec["failureDomains"][2]["topology"]["template"],
        json!("/dc3/vm/ocp-x7k2p-rhcos-dc3-fd-c")
    );
    assert_eq!(
        spec["failureDomains"][1]["topology"]["resourcePool"],
        json!("/dc2/host/c1/Resources")
    );
    assert_eq!(spec["machineNetworks"], json!(["10.0.0.0/16"]));
    assert_eq!(
        status,
        json!({"apiServerInternalIPs": [], "ingressIPs": [], "machineNetworks": ["10.0.0.0/16"]})
    );
}

#[test]
fn a_user_managed_load_balancer_and_ipv6_vips_are_reported() {
    let c = config(&format!(
        "networking:\n  machineNetwork: [{{cidr: 'fd00::/64'}}]\nplatform:\n  vsphere:\n\
         \x20   apiVIPs: ['fd00::5']\n    ingressVIPs: ['fd00::7']\n    loadBalancer: {{type: UserManaged}}\n\
         \x20   vcenters: [{{server: vc, user: u, password: p, datacenters: [dc]}}]\n{DOMAIN_ON_VC}",
    ));
    let (spec, status) = infrastructure(&c, INFRA_ID);
    assert_eq!(spec["machineNetworks"], json!(["fd00::/64", "fd00::5/128", "fd00::7/128"]));
    assert_eq!(status["loadBalancer"], json!({"type": "UserManaged"}));
}

/// One vSphere case of the installer's `TestGenerateInfrastructure`
/// (`pkg/asset/manifests/infrastructure_test.go`). Node networking is always the machine
/// networks; spec and status have the same machine networks.
struct VipCase {
    name: &'static str,
    machine: &'static [&'static str],
    api: &'static [&'static str],
    ingress: &'static [&'static str],
    machine_networks: &'static [&'static str],
}

const VIP_NETWORK_CASES: &[VipCase] = &[
    VipCase {
        name: "VIPs appended to machine networks",
        machine: &["10.0.0.0/16"],
        api: &["192.168.1.0"],
        ingress: &["192.168.222.4"],
        machine_networks: &["10.0.0.0/16", "192.168.1.0/32", "192.168.222.4/32"],
    },
    VipCase {
        name: "dual stack: every API VIP, then every Ingress VIP",
        machine: &["10.0.0.0/16", "2001:db8::/32"],
        api: &["192.168.1.0", "fe80::1"],
        ingress: &["192.168.222.4", "fe80::2"],
        machine_networks: &[
            "10.0.0.0/16",
            "2001:db8::/32",
            "192.168.1.0/32",
            "fe80::1/128",
            "192.168.222.4/32",
            "fe80::2/128",
        ],
    },
    VipCase {
        name: "a VIP already listed as a machine network is not repeated",
        machine: &["10.0.0.0/16", "192.168.1.0/32"],
        api: &["192.168.1.0"],
        ingress: &["192.168.222.4"],
        machine_networks: &["10.0.0.0/16", "192.168.1.0/32", "192.168.222.4/32"],
    },
    VipCase {
        name: "the same API and Ingress VIP is listed once",
        machine: &["10.0.0.0/16"],
        api: &["192.168.1.0"],
        ingress: &["192.168.1.0"],
        machine_networks: &["10.0.0.0/16", "192.168.1.0/32"],
    },
];

fn flow_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("'{item}'")).collect();
    format!("[{}]", quoted.join(", "))
}

#[test]
fn infrastructure_machine_networks_match_the_installer_table() {
    for case in VIP_NETWORK_CASES {
        let VipCase { name, machine, api, ingress, machine_networks } = case;
        let cidrs: Vec<String> = machine.iter().map(|c| format!("{{cidr: '{c}'}}")).collect();
        let c = config(&format!(
            "networking:\n  machineNetwork: [{}]\nplatform:\n  vsphere:\n\
             \x20   apiVIPs: {}\n    ingressVIPs: {}\n    loadBalancer: {{type: UserManaged}}\n\
             \x20   vcenters: [{{server: vc, user: u, password: p, datacenters: [dc]}}]\n{DOMAIN_ON_VC}",
            cidrs.join(", "),
            flow_list(api),
            flow_list(ingress),
        ));
        let (spec, status) = infrastructure(&c, INFRA_ID);
        assert_eq!(spec["machineNetworks"], json!(machine_networks), "{name}: spec");
        assert_eq!(status["machineNetworks"], json!(machine_networks), "{name}: status");
        assert_eq!(status["apiServerInternalIPs"], json!(api), "{name}");
        assert_eq!(status["ingressIPs"], json!(ingress), "{name}");
        assert!(status.get("apiServerInternalIP").is_none(), "{name}: no singular field");
        assert!(status.get("ingressIP").is_none(), "{name}: no singular field");
        let side = json!({"networkSubnetCidr": machine});
        assert_eq!(spec["nodeNetworking"], json!({"external": side, "internal": side}), "{name}");
    }
}
