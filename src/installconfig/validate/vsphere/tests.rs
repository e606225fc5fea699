//! The vSphere rules as a table, after the installer's `platform_test.go`: each case edits a
//! valid platform and lists the exact errors.

use serde_json::{Value, json};

use crate::installconfig::validate::tests::errors;

/// A valid vSphere platform: one vCenter and one failure domain.
fn valid() -> Value {
    json!({
        "vcenters": [{"server": "vc.example.com", "user": "u", "password": "p", "datacenters": ["dc1"]}],
        "failureDomains": [{
            "name": "fd-a", "region": "r", "zone": "z", "server": "vc.example.com",
            "topology": {
                "datacenter": "dc1", "computeCluster": "/dc1/host/c1", "networks": ["vm-net"],
                "datastore": "/dc1/datastore/ds1",
            },
        }],
    })
}

/// Sets the keys of `fragment` (flow-mapping entries such as `, a: 1, b: [x]`) on `target`,
/// replacing what was there.
fn set(target: &mut Value, fragment: &str) {
    if fragment.is_empty() {
        return;
    }
    let text = format!("{{{}}}", fragment.trim_start_matches(", "));
    let keys: serde_json::Map<String, Value> =
        serde_saphyr::from_str(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
    for (key, value) in keys {
        target[key] = value;
    }
}

/// The valid platform with keys set on its vCenter, failure domain, topology and itself,
/// as an install-config `platform` section (JSON is YAML).
pub(super) fn platform(vcenter: &str, fd: &str, topology: &str, extra: &str) -> String {
    let mut p = valid();
    set(&mut p["vcenters"][0], vcenter);
    set(&mut p["failureDomains"][0], fd);
    set(&mut p["failureDomains"][0]["topology"], topology);
    set(&mut p, extra);
    format!("platform:\n  vsphere: {p}\n")
}

/// (what the case shows, vCenter keys, failure-domain keys, topology keys, platform keys,
/// expected errors)
type Case =
    (&'static str, &'static str, &'static str, &'static str, &'static str, &'static [&'static str]);

const CASES: &[Case] = &[
    ("valid", "", "", "", "", &[]),
    ("a vCenter port", ", port: 8443", "", "", "", &[]),
    (
        "a server that is neither a host name nor an IP",
        ", server: 'bad host!'",
        "",
        "",
        "",
        &[
            r#"platform.vsphere.failureDomains.server: Invalid value: "vc.example.com": server does not exist in vcenters"#,
            r#"platform.vsphere.vcenters[0].server: Invalid value: "bad host!": must be the domain name or IP address of the vCenter"#,
        ],
    ),
    ("a known disk type", "", "", "", ", diskType: thin", &[]),
    (
        "an unknown disk type",
        "",
        "",
        "",
        ", diskType: fast",
        &[
            r#"platform.vsphere.diskType: Invalid value: "fast": diskType must be one of [eagerZeroedThick thick thin]"#,
        ],
    ),
    (
        "an unknown load balancer type",
        "",
        "",
        "",
        ", loadBalancer: {type: FooBar}",
        &[
            r#"platform.vsphere.loadBalancer.type: Invalid value: "FooBar": invalid load balancer type"#,
        ],
    ),
    (
        "the failure domain's vCenter must be listed",
        "",
        ", server: other.example.com",
        "",
        "",
        &[
            r#"platform.vsphere.failureDomains.server: Invalid value: "other.example.com": server does not exist in vcenters"#,
        ],
    ),
    (
        "a datastore that is not a full path ends the checks",
        "",
        "",
        ", datastore: ds1, folder: bad",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.datastore: Invalid value: "ds1": full path of datastore must be provided in format /<datacenter/datastore/<datastore>"#,
        ],
    ),
    (
        "a datastore in another datacenter",
        "",
        "",
        ", datastore: /dc2/datastore/ds1",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.datastore: Invalid value: "/dc2/datastore/ds1": the datastore defined does not exist in the correct datacenter"#,
        ],
    ),
    (
        "a folder that is not a full path",
        "",
        "",
        ", folder: my-folder",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.folder: Invalid value: "my-folder": full path of folder must be provided in format /<datacenter>/vm/<folder>"#,
        ],
    ),
    (
        "a folder in another datacenter",
        "",
        "",
        ", folder: /dc2/vm/f",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.folder: Invalid value: "/dc2/vm/f": the folder defined does not exist in the correct datacenter"#,
        ],
    ),
    (
        "a compute cluster that is not a full path",
        "",
        "",
        ", computeCluster: c1",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.computeCluster: Invalid value: "c1": full path of compute cluster must be provided in format /<datacenter>/host/<cluster>"#,
        ],
    ),
    (
        "a compute cluster in another datacenter",
        "",
        "",
        ", computeCluster: /dc2/host/c1",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.computeCluster: Invalid value: "/dc2/host/c1": compute cluster must be in datacenter dc1"#,
        ],
    ),
    (
        "a resource pool that is not a full path",
        "",
        "",
        ", resourcePool: /dc1/host/c1",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.resourcePool: Invalid value: "/dc1/host/c1": full path of resource pool must be provided in format /<datacenter>/host/<cluster>/..."#,
        ],
    ),
    (
        "a resource pool in another cluster",
        "",
        "",
        ", resourcePool: /dc1/host/c2/Resources",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.resourcePool: Invalid value: "/dc1/host/c2/Resources": resource pool must be in compute cluster /dc1/host/c1"#,
        ],
    ),
    (
        "a resource pool in another datacenter",
        "",
        "",
        ", resourcePool: /dc2/host/c1/Resources",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.resourcePool: Invalid value: "/dc2/host/c1/Resources": resource pool must be in datacenter dc1"#,
        ],
    ),
    (
        "tag IDs must be vmomi URNs",
        "",
        "",
        ", tagIDs: ['urn:vmomi:InventoryServiceTag:5736bf56-49f5-4667-b38c-b97e09dc9578:GLOBAL', bad]",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.tagIDs: Invalid value: []string{"urn:vmomi:InventoryServiceTag:5736bf56-49f5-4667-b38c-b97e09dc9578:GLOBAL", "bad"}: tag ID must be in the format of urn:vmomi:InventoryServiceTag:<UUID>:GLOBAL"#,
        ],
    ),
    (
        "missing networks",
        "",
        "",
        ", networks: []",
        "",
        &[
            "platform.vsphere.failureDomains.topology.networks: Required value: must specify a network",
        ],
    ),
    (
        "zoneType without regionType",
        "",
        ", zoneType: HostGroup",
        ", hostGroup: hg",
        "",
        &[
            "platform.vsphere.failureDomains.regionType: Required value: must specify regionType if zoneType is defined",
        ],
    ),
    (
        "a host-group zone needs a host group",
        "",
        ", regionType: ComputeCluster, zoneType: HostGroup",
        "",
        "",
        &[
            "platform.vsphere.failureDomains.hostGroup: Required value: must not be empty if zoneType is HostGroup",
        ],
    ),
    (
        "two malformed tag IDs are one error, as the installer's error list folds repeats",
        "",
        "",
        ", tagIDs: [bad, worse]",
        "",
        &[
            r#"platform.vsphere.failureDomains.topology.tagIDs: Invalid value: []string{"bad", "worse"}: tag ID must be in the format of urn:vmomi:InventoryServiceTag:<UUID>:GLOBAL"#,
        ],
    ),
    (
        "regionType without zoneType",
        "",
        ", regionType: Datacenter",
        "",
        "",
        &[
            "platform.vsphere.failureDomains.zoneType: Required value: must specify zoneType if regionType is defined",
        ],
    ),
    (
        "a host-group region ends the checks",
        "",
        ", regionType: HostGroup, zoneType: HostGroup, name: ''",
        ", hostGroup: hg",
        "",
        &[
            "platform.vsphere.failureDomains.regionType: Required value: region type cannot be used for host group failure domains",
        ],
    ),
    (
        "a compute-cluster region needs host-group zones (the installer's wording)",
        "",
        ", regionType: ComputeCluster, zoneType: ComputeCluster",
        "",
        "",
        &[
            "platform.vsphere.failureDomains.regionType: Required value: zoneType must be HostGroup",
            "platform.vsphere.failureDomains.zoneType: Required value: something something...",
        ],
    ),
    (
        "name, server, region and zone are required",
        "",
        ", name: '', server: '', region: '', zone: ''",
        "",
        "",
        &[
            "platform.vsphere.failureDomains.name: Required value: must specify the name",
            "platform.vsphere.failureDomains.region: Required value: must specify region tag value",
            "platform.vsphere.failureDomains.server: Required value: must specify a vCenter server",
            "platform.vsphere.failureDomains.zone: Required value: must specify zone tag value",
        ],
    ),
    (
        "the topology's datacenter, datastore and compute cluster are required",
        "",
        "",
        ", datacenter: '', datastore: '', computeCluster: ''",
        "",
        &[
            "platform.vsphere.failureDomains.topology.computeCluster: Required value: must specify a computeCluster",
            "platform.vsphere.failureDomains.topology.datacenter: Required value: must specify a datacenter",
            "platform.vsphere.failureDomains.topology.datastore: Required value: must specify a datastore",
        ],
    ),
    (
        "a datacenter name inside the cluster's datacenter name passes, as in the installer",
        "",
        "",
        ", datacenter: dc10, datastore: /dc10/datastore/ds1, computeCluster: /dc1/host/c1",
        "",
        &[],
    ),
    ("user-managed load balancer", "", "", "", ", loadBalancer: {type: UserManaged}", &[]),
    (
        "node networking: bad CIDRs and a network no failure domain uses",
        "",
        "",
        "",
        ", nodeNetworking: {internal: {networkSubnetCidr: [10.0.0.0/16, 10.0.0/8], network: other}, external: {excludeNetworkSubnetCidr: ['']}}",
        &[
            "platform.vsphere.nodeNetworking.external.excludeNetworkSubnetCidr: Required value: must specify a IP address with CIDR",
            r#"platform.vsphere.nodeNetworking.internal.network: Invalid value: "other": network must be defined in topology"#,
            r#"platform.vsphere.nodeNetworking.internal.networkSubnetCidr: Invalid value: "10.0.0/8": invalid CIDR address: 10.0.0/8"#,
        ],
    ),
];

#[test]
fn vsphere_platform_rules_match_the_installer_messages() {
    for (what, vcenter, fd, topology, extra, expected) in CASES {
        assert_eq!(errors(&platform(vcenter, fd, topology, extra)), *expected, "{what}");
    }
}

#[test]
fn vcenters_and_failure_domains_are_required_and_name_the_installer_paths() {
    assert_eq!(
        errors("platform:\n  vsphere: {}\n"),
        ["platform.vsphere.vcenters: Required value: must be defined"]
    );
    assert_eq!(
        errors("platform:\n  vsphere: {vcenters: [{server: 'bad host!'}]}\n"),
        [
            "platform.vsphere.failureDomains: Required value: must be defined",
            "platform.vsphere.vcenters[0].datacenters: Required value: must specify at least one datacenter",
            "platform.vsphere.vcenters[0].password: Required value: must specify the password",
            r#"platform.vsphere.vcenters[0].server: Invalid value: "bad host!": must be the domain name or IP address of the vCenter"#,
            "platform.vsphere.vcenters[0].username: Required value: must specify the username",
        ]
    );
    let two = "platform:\n  vsphere:\n    vcenters: [{server: vc, user: u, password: p, datacenters: [dc1]}]\n\
               \x20   failureDomains:\n\
               \x20   - {name: a, region: r, zone: z, server: vc, topology: {datacenter: dc1, computeCluster: /dc1/host/c1, networks: [n], datastore: /dc1/datastore/d}}\n\
               \x20   - {name: a, server: vc, topology: {datacenter: dc1, computeCluster: /dc1/host/c1, networks: [n], datastore: /dc1/datastore/d}}\n";
    assert_eq!(
        errors(two),
        [
            r#"platform.vsphere.failureDomains.name[1]: Duplicate value: "a""#,
            "platform.vsphere.failureDomains.region: Required value: must specify region tag value",
            "platform.vsphere.failureDomains.zone: Required value: must specify zone tag value",
        ]
    );
}

#[test]
fn more_than_ten_tags_are_refused_with_the_whole_list() {
    let tags: Vec<String> = (0..11)
        .map(|i| {
            format!("urn:vmomi:InventoryServiceTag:5736bf56-49f5-4667-b38c-b97e09dc95{i:02}:GLOBAL")
        })
        .collect();
    let quoted: Vec<String> = tags.iter().map(|t| format!("{t:?}")).collect();
    let expected = format!(
        "platform.vsphere.failureDomains.topology.tagIDs: Invalid value: []string{{{}}}: a maximum of 10 tags are allowed",
        quoted.join(", ")
    );
    assert_eq!(
        errors(&platform("", "", &format!(", tagIDs: [{}]", tags.join(", ")), "")),
        [expected]
    );
}
