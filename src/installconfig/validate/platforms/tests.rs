//! The IBM Cloud rules as a table: each case extra keys of `platform.ibmcloud` (after a
//! region) and the exact errors.

use crate::installconfig::validate::tests::{Cases, check_cases};

/// (what the case shows, extra keys of `platform.ibmcloud` as a YAML flow mapping, errors)
const IBMCLOUD_CASES: &Cases = &[
    ("minimal", "", &[]),
    (
        "an existing VPC needs subnets of both kinds, with the installer's typo",
        "vpcName: vpc",
        &[
            "platform.ibmcloud.computeSubnets: Required value: must provide at least one compute subnet when a VPC is specified",
            "platform.ibmcloud.controlPlaneSubnets: Required value: must provided at least one control plane subnet when a VPC is specified",
        ],
    ),
    (
        "subnets need their VPC",
        "computeSubnets: [w]",
        &[
            "platform.ibmcloud.vpcName: Required value: must provide a VPC name when supplying subnets",
        ],
    ),
    ("a complete existing VPC", "vpcName: vpc, computeSubnets: [w], controlPlaneSubnets: [m]", &[]),
    (
        "a duplicate endpoint names the first",
        "serviceEndpoints: [{name: IAM, url: 'https://a.example.com'}, {name: IAM, url: 'https://b.example.com'}]",
        &[
            r#"platform.ibmcloud.serviceEndpoints[1].name: Invalid value: "IAM": duplicate service endpoint not allowed for IAM, service endpoint already defined at platform.ibmcloud.serviceEndpoints[0]"#,
        ],
    ),
];

#[test]
fn ibmcloud_platform_rules_match_the_installer_messages() {
    check_cases(IBMCLOUD_CASES, |extra| {
        format!("platform:\n  ibmcloud: {{region: us-south, {extra}}}\n")
    });
}
