//! The GCP rules as a table: each case the body of `platform.gcp` (after a valid project and
//! region) or a whole `rest` after the header, and the exact errors.

use crate::installconfig::validate::tests::{Cases, check_cases, errors};

/// (what the case shows, extra keys of `platform.gcp` as a YAML flow mapping, errors)
const CASES: &Cases = &[
    ("minimal", "", &[]),
    (
        "an existing network needs both subnets",
        "network: vpc",
        &[
            "platform.gcp.computeSubnet: Required value: must provide a compute subnet when a network is specified",
            "platform.gcp.controlPlaneSubnet: Required value: must provide a control plane subnet when a network is specified",
        ],
    ),
    (
        "subnets need their network",
        "computeSubnet: w",
        &[
            "platform.gcp.network: Required value: must provide a VPC network when supplying subnets",
        ],
    ),
    ("a network with both subnets", "network: vpc, computeSubnet: w, controlPlaneSubnet: m", &[]),
    (
        "a shared VPC's project needs a network, and Manual or Passthrough credentials at the installer's path",
        "networkProjectID: host",
        &[
            r#"platform.gcp.credentialsMode: Unsupported value: "": supported values: "Manual", "Passthrough""#,
            "platform.gcp.network: Required value: must provide a network when a networkProjectID is specified",
        ],
    ),
    (
        "at most 32 user labels",
        "userLabels: [{key: a0, value: v}, {key: a1, value: v}, {key: a2, value: v}, {key: a3, value: v}, {key: a4, value: v}, {key: a5, value: v}, {key: a6, value: v}, {key: a7, value: v}, {key: a8, value: v}, {key: a9, value: v}, {key: b0, value: v}, {key: b1, value: v}, {key: b2, value: v}, {key: b3, value: v}, {key: b4, value: v}, {key: b5, value: v}, {key: b6, value: v}, {key: b7, value: v}, {key: b8, value: v}, {key: b9, value: v}, {key: c0, value: v}, {key: c1, value: v}, {key: c2, value: v}, {key: c3, value: v}, {key: c4, value: v}, {key: c5, value: v}, {key: c6, value: v}, {key: c7, value: v}, {key: c8, value: v}, {key: c9, value: v}, {key: d0, value: v}, {key: d1, value: v}, {key: d2, value: v}]",
        &["platform.gcp.userLabels: Too many: 33: must have at most 32 items"],
    ),
    (
        "a label key must start with a lowercase letter",
        "userLabels: [{key: Env, value: prod}]",
        &[
            r#"platform.gcp.userLabels[Env]: Invalid value: "prod": label key is invalid or contains invalid characters. Label key can have a maximum of 63 characters and cannot be empty. Label key must begin with a lowercase letter, and must contain only lowercase letters, numeric characters, and the following special characters `_-`"#,
        ],
    ),
    (
        "a label value may not be empty",
        "userLabels: [{key: env, value: ''}]",
        &[
            r#"platform.gcp.userLabels[env]: Invalid value: "": label value is invalid or contains invalid characters. Label value can have a maximum of 63 characters and cannot be empty. Value must contain only lowercase letters, numeric characters, and the following special characters `_-`"#,
        ],
    ),
    (
        "a label key may not take a reserved prefix",
        "userLabels: [{key: openshift-io_x, value: v}]",
        &[
            r#"platform.gcp.userLabels[openshift-io_x]: Invalid value: "v": label key contains restricted prefix. Label key cannot have `kubernetes-io`, `openshift-io` prefixes"#,
        ],
    ),
    ("a one-letter label key", "userLabels: [{key: e, value: prod_1-a}]", &[]),
];

#[test]
fn gcp_platform_rules_match_the_installer_messages() {
    check_cases(CASES, |extra| format!("platform:\n  gcp: {{projectID: p, region: r, {extra}}}\n"));
}

#[test]
fn a_shared_vpc_accepts_manual_and_passthrough_credentials() {
    let gcp = "platform:\n  gcp: {projectID: p, region: r, networkProjectID: h, network: n, computeSubnet: w, controlPlaneSubnet: m}\n";
    for mode in ["Manual", "Passthrough"] {
        assert_eq!(errors(&format!("credentialsMode: {mode}\n{gcp}")), Vec::<String>::new());
    }
    assert_eq!(
        errors(&format!("credentialsMode: Mint\n{gcp}")),
        [
            r#"platform.gcp.credentialsMode: Unsupported value: "Mint": supported values: "Manual", "Passthrough""#
        ]
    );
}
