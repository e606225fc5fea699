//! The Nutanix rules as a table: each case the keys that follow a valid Prism Central in
//! `platform.nutanix` (a YAML flow mapping), and the exact errors.

use crate::installconfig::validate::tests::{Cases, check_cases};

const PE: &str = "prismElements: [{endpoint: {address: pe.example.com, port: 9440}, uuid: e1}]";

/// (what the case shows, keys after `prismCentral`, errors)
const CASES: &Cases = &[
    (
        "minimal",
        "prismElements: [{endpoint: {address: 10.0.0.2, port: 9440}, uuid: e1}], subnetUUIDs: [s1]",
        &[],
    ),
    (
        "exactly one Prism Element; their errors carry no index",
        "prismElements: [{endpoint: {address: 'pe 1'}}, {endpoint: {address: ''}, uuid: e2}], subnetUUIDs: [s1]",
        &[
            "platform.nutanix.prismElements: Required value: must specify one Prism Element",
            "platform.nutanix.prismElements.endpoint.address: Invalid value: \"pe 1\": must be the domain name or IP address of the Prism Element (cluster)",
            "platform.nutanix.prismElements.endpoint.address: Required value: must specify the Prism Element endpoint address",
            // Once: identical lines are reported once (the installer prints it per element).
            "platform.nutanix.prismElements.endpoint.port: Invalid value: 0: The Prism Element endpoint port is invalid, must be in the range of 1 to 65535",
            "platform.nutanix.prismElements.uuid: Required value: must specify the Prism Element UUID",
        ],
    ),
    (
        "at least one subnet, the first not empty",
        "prismElements: [{endpoint: {address: pe, port: 9440}, uuid: e1}], subnetUUIDs: ['', s2]",
        &["platform.nutanix.subnetUUIDs: Required value: must specify at least one subnet"],
    ),
    (
        "no subnet twice",
        "prismElements: [{endpoint: {address: pe, port: 9440}, uuid: e1}], subnetUUIDs: [s1, s2, s1]",
        &[
            "platform.nutanix.subnetUUIDs: Invalid value: \"s1\": should not configure duplicate value",
        ],
    ),
    (
        "a known load balancer type",
        "prismElements: [{endpoint: {address: pe, port: 9440}, uuid: e1}], subnetUUIDs: [s1], loadBalancer: {type: External}",
        &[
            "platform.nutanix.loadBalancer.type: Invalid value: \"External\": invalid load balancer type",
        ],
    ),
    (
        "failure domains: a name with a DNS-label run, each name and topology once, a Prism Element",
        "prismElements: [{endpoint: {address: pe, port: 9440}, uuid: e1}], subnetUUIDs: [s1], failureDomains: [{name: fd-1, prismElement: {uuid: e1}, subnetUUIDs: [s1]}, {name: fd-1, prismElement: {uuid: e1}, subnetUUIDs: [s1]}, {name: '--', subnetUUIDs: []}]",
        &[
            "platform.nutanix.failureDomain.name: Duplicate value: \"fd-1\"",
            "platform.nutanix.failureDomain.name: Invalid value: \"fd-1\": failureDomain has the same topology (prismElement \"e1\" and subnetUUIDs) as failureDomain \"fd-1\", each failureDomain must reference distinct infrastructure",
            "platform.nutanix.failureDomain.name: Invalid value: \"--\": failureDomain name should match the pattern \"[a-z0-9]([-a-z0-9]*[a-z0-9])?\".",
            "platform.nutanix.failureDomain.prismElement.uuid: Required value: failureDomain prismElement uuid cannot be empty",
            "platform.nutanix.failureDomain.subnetUUIDs: Required value: must specify at least one subnet",
        ],
    ),
];

#[test]
fn nutanix_platform_rules_match_the_installer_messages() {
    check_cases(CASES, |extra| {
        format!(
            "platform:\n  nutanix: {{prismCentral: {{endpoint: {{address: pc.example.com, port: 9440}}, username: u, password: p}}, {extra}}}\n"
        )
    });
}

#[test]
fn prism_central_needs_an_address_a_port_and_credentials() {
    let cases: &Cases = &[
        (
            "nothing given",
            "{}",
            &[
                "platform.nutanix.prismCentral.endpoint.address: Required value: must specify the Prism Central endpoint address",
                "platform.nutanix.prismCentral.endpoint.port: Invalid value: 0: The Prism Central endpoint port is invalid, must be in the range of 1 to 65535",
                "platform.nutanix.prismCentral.password: Required value: must specify the Prism Central password",
                "platform.nutanix.prismCentral.username: Required value: must specify the Prism Central username",
            ],
        ),
        (
            "a host that is neither a name nor an IP, and a port out of range",
            "{endpoint: {address: 'pc_1', port: 70000}, username: u, password: p}",
            &[
                "platform.nutanix.prismCentral.endpoint.address: Invalid value: \"pc_1\": must be the domain name or IP address of the Prism Central",
                "platform.nutanix.prismCentral.endpoint.port: Invalid value: 70000: The Prism Central endpoint port is invalid, must be in the range of 1 to 65535",
            ],
        ),
        (
            "an IPv6 address",
            "{endpoint: {address: 'fd00::1', port: 9440}, username: u, password: p}",
            &[],
        ),
    ];
    check_cases(cases, |pc| {
        format!("platform:\n  nutanix: {{prismCentral: {pc}, {PE}, subnetUUIDs: [s1]}}\n")
    });
}
