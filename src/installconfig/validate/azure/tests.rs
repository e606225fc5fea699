//! The Azure rules as a table: each case extra keys of `platform.azure` (after a region) and
//! the exact errors.

use crate::installconfig::validate::tests::{Cases, check_cases};

/// (what the case shows, extra keys of `platform.azure` as a YAML flow mapping, errors)
const CASES: &Cases = &[
    ("minimal", "", &[]),
    (
        "an existing virtual network needs both subnets and its resource group",
        "virtualNetwork: vnet",
        &[
            "platform.azure.computeSubnet: Required value: must provide a compute subnet when a virtual network is specified",
            "platform.azure.controlPlaneSubnet: Required value: must provide a control plane subnet when a virtual network is specified",
            "platform.azure.networkResourceGroupName: Required value: must provide a network resource group when a virtual network is specified",
        ],
    ),
    (
        "subnets need the network and its resource group",
        "controlPlaneSubnet: m",
        &[
            "platform.azure.networkResourceGroupName: Required value: must provide a network resource group when supplying subnets",
            "platform.azure.virtualNetwork: Required value: must provide a virtual network when supplying subnets",
        ],
    ),
    (
        "a complete existing network",
        "virtualNetwork: vnet, networkResourceGroupName: rg, computeSubnet: w, controlPlaneSubnet: m",
        &[],
    ),
    (
        "an unknown cloud",
        "cloudName: AzureMoonCloud",
        &[
            r#"platform.azure.cloudName: Unsupported value: "AzureMoonCloud": supported values: "AzureChinaCloud", "AzureGermanCloud", "AzurePublicCloud", "AzureStackCloud", "AzureUSGovernmentCloud""#,
        ],
    ),
    (
        "an ARM endpoint off Azure Stack, reported as the installer does",
        "armEndpoint: 'https://management.local'",
        &[
            "platform.azure.armEndpoint: Required value: ARM endpoint must not be set when the cloud name is AzurePublicCloud",
        ],
    ),
    (
        "Azure Stack needs its ARM endpoint",
        "cloudName: AzureStackCloud",
        &[
            "platform.azure.armEndpoint: Required value: ARM endpoint must be set when installing on Azure Stack",
        ],
    ),
    (
        "user tags only on the public cloud",
        "cloudName: AzureUSGovernmentCloud, userTags: {team: a}",
        &["platform.azure.userTags: Forbidden: userTags support is for AzurePublicCloud only"],
    ),
    (
        "at most ten user tags",
        "userTags: {a0: v, a1: v, a2: v, a3: v, a4: v, a5: v, a6: v, a7: v, a8: v, a9: v, b0: v}",
        &["platform.azure.userTags: Too many: 11: must have at most 10 items"],
    ),
    (
        "tag keys equal but for case",
        "userTags: {Team: a, team: b, TEAM: c}",
        &[r#"platform.azure.userTags: Forbidden: found duplicate tag keys: "TEAM" matches 3 keys"#],
    ),
    (
        "a tag key must start with a letter",
        "userTags: {1team: a}",
        &[
            r#"platform.azure.userTags[1team]: Invalid value: "a": key is invalid or contains invalid characters: key can have a maximum of 128 characters, cannot be empty and must begin with a letter, end with a letter, number or underscore, and must contain only alphanumeric characters and the following special characters `_ . -`"#,
        ],
    ),
    (
        "a tag value may not hold a space",
        "userTags: {team: 'a b'}",
        &[
            r#"platform.azure.userTags[team]: Invalid value: "a b": value is invalid or contains invalid characters: value can have a maximum of 256 characters, cannot be empty and must contain only alphanumeric characters and the following special characters `_ + , - . / : ; < = > ? @`"#,
        ],
    ),
    (
        "reserved tag keys",
        "userTags: {Name: a, azure.x: b}",
        &[
            r#"platform.azure.userTags[Name]: Invalid value: "a": key contains restricted prefix"#,
            r#"platform.azure.userTags[azure.x]: Invalid value: "b": key contains restricted prefix"#,
        ],
    ),
    ("tags the installer accepts", "userTags: {team_1: 'a+b,c/d:e;f<g>h?i@j', names: x}", &[]),
];

#[test]
fn azure_platform_rules_match_the_installer_messages() {
    check_cases(CASES, |extra| format!("platform:\n  azure: {{region: eastus, {extra}}}\n"));
}
