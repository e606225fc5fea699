//! The static-IP host rules as a table, after the installer's `validateHosts`: each case
//! edits a valid set of hosts (one bootstrap, three control-plane, three compute) and lists
//! the exact errors.

use crate::installconfig::validate::tests::errors;
use crate::installconfig::validate::vsphere::tests::platform;

const DEVICE: &str = "networkDevice: {ipAddrs: [192.168.10.10/24], gateway: 192.168.10.1, nameservers: [192.168.10.1]}";

/// The install-config with `hosts`: the valid set, with `(index, replacement)` edits.
fn with_hosts(edits: &[(usize, &str)]) -> String {
    let roles = ["bootstrap", "control-plane", "control-plane", "control-plane"];
    let mut hosts: Vec<String> = roles
        .iter()
        .chain(&["compute"; 3])
        .map(|role| format!("{{role: {role}, {DEVICE}}}"))
        .collect();
    for (index, host) in edits {
        hosts[*index] = (*host).to_owned();
    }
    platform("", "", "", &format!(", hosts: [{}]", hosts.join(", ")))
}

/// (what the case shows, edits of the valid hosts, expected errors)
type Case = (&'static str, &'static [(usize, &'static str)], &'static [&'static str]);

const CASES: &[Case] = &[
    ("valid", &[], &[]),
    (
        "a failure domain that is listed",
        &[(
            1,
            "{role: control-plane, failureDomain: fd-a, networkDevice: {ipAddrs: ['fd00::10/64']}}",
        )],
        &[],
    ),
    (
        "an unknown role, which counts for no pool",
        &[(6, "{role: worker, networkDevice: {ipAddrs: [192.168.10.16/24]}}")],
        &[
            r#"platform.vsphere.hosts: Invalid value: "compute": not enough hosts found (2) to support all the configured compute replicas (3)"#,
            r#"platform.vsphere.hosts.role: Unsupported value: "worker": supported values: "bootstrap", "compute", "control-plane""#,
        ],
    ),
    (
        "no bootstrap host and one control-plane host too many",
        &[(0, "{role: control-plane, networkDevice: {ipAddrs: [192.168.10.9/24]}}")],
        &[
            r#"platform.vsphere.hosts: Invalid value: "bootstrap": a single host with the bootstrap role must be defined"#,
            r#"platform.vsphere.hosts: Invalid value: "control-plane": too many hosts found (4) for the configured control plane replicas (3)"#,
        ],
    ),
    (
        "a missing role is unsupported too",
        &[(6, "{networkDevice: {ipAddrs: [192.168.10.16/24]}}")],
        &[
            r#"platform.vsphere.hosts: Invalid value: "compute": not enough hosts found (2) to support all the configured compute replicas (3)"#,
            r#"platform.vsphere.hosts.role: Unsupported value: "": supported values: "bootstrap", "compute", "control-plane""#,
        ],
    ),
    (
        "a failure domain that is not listed",
        &[(
            4,
            "{role: compute, failureDomain: nowhere, networkDevice: {ipAddrs: [192.168.10.14/24]}}",
        )],
        &[
            r#"platform.vsphere.hosts.failureDomain: Invalid value: "nowhere": failure domain not found"#,
        ],
    ),
    (
        "a host without a network device",
        &[(4, "{role: compute}"), (5, "{role: compute, networkDevice: null}")],
        &[
            "platform.vsphere.hosts.networkDevice: Required value: must specify networkDevice configuration",
        ],
    ),
    (
        "addresses: none, an empty one, and one without a prefix",
        &[
            (4, "{role: compute, networkDevice: {ipAddrs: []}}"),
            (5, "{role: compute, networkDevice: {ipAddrs: ['', 192.168.10.15]}}"),
        ],
        &[
            "platform.vsphere.hosts.ipAddrs: Required value: must specify a IP",
            "platform.vsphere.hosts.ipAddrs: Required value: must specify a IP address with CIDR",
            r#"platform.vsphere.hosts.ipAddrs: Invalid value: "192.168.10.15": invalid CIDR address: 192.168.10.15"#,
        ],
    ),
    (
        "four name servers, one of them bad, and a bad gateway",
        &[(
            4,
            "{role: compute, networkDevice: {ipAddrs: [192.168.10.14/24], gateway: 192.168.10.1/24, \
             nameservers: [1.1.1.1, 8.8.8.8, dns, '']}}",
        )],
        &[
            r#"platform.vsphere.hosts.gateway: Invalid value: "192.168.10.1/24": "192.168.10.1/24" is not a valid IP"#,
            "platform.vsphere.hosts.nameservers: Too many: 4: must have at most 3 items",
            r#"platform.vsphere.hosts.nameservers: Invalid value: "dns": "dns" is not a valid IP"#,
        ],
    ),
];

#[test]
fn static_ip_host_rules_match_the_installer_messages() {
    for (what, edits, expected) in CASES {
        assert_eq!(errors(&with_hosts(edits)), *expected, "{what}");
    }
}

#[test]
fn host_counts_follow_the_machine_pools_and_an_empty_list_is_checked() {
    let empty = platform("", "", "", ", hosts: []");
    assert_eq!(
        errors(&empty),
        [
            r#"platform.vsphere.hosts: Invalid value: "bootstrap": a single host with the bootstrap role must be defined"#,
            r#"platform.vsphere.hosts: Invalid value: "control-plane": not enough hosts found (0) to support all the configured control plane replicas (3)"#,
            r#"platform.vsphere.hosts: Invalid value: "compute": not enough hosts found (0) to support all the configured compute replicas (3)"#,
        ]
    );
    let pools =
        "controlPlane: {name: master, replicas: 1}\ncompute: [{name: worker, replicas: 0}]\n";
    let one = format!("{pools}{}", with_hosts(&[]));
    assert_eq!(
        errors(&one),
        [
            r#"platform.vsphere.hosts: Invalid value: "control-plane": too many hosts found (3) for the configured control plane replicas (1)"#,
            r#"platform.vsphere.hosts: Invalid value: "compute": too many hosts found (3) for the configured compute replicas (0)"#,
        ]
    );
    // No hosts key, or null: nothing to check.
    assert_eq!(errors(&platform("", "", "", ", hosts: null")), Vec::<String>::new());
}
