//! The installer's platform-independent rules (`pkg/types/validation/installconfig.go`) on
//! the fields the generator reads, as tables: exact paths and messages.

use super::{Cases, check_cases};
use crate::installconfig::{Defaults, Error, parse};

const RFC1123: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// The errors of a whole file (no shared header).
fn file_errors(text: &str) -> Vec<String> {
    match parse(text, "install-config.yaml", &Defaults::default()) {
        Ok(_) => Vec::new(),
        Err(Error::Invalid { errors, .. }) => errors.iter().map(ToString::to_string).collect(),
        Err(other) => panic!("not a validation error: {other}"),
    }
}

/// (what, apiVersion, metadata.name, baseDomain, platform, errors)
type HeaderCase<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, Vec<String>);

#[test]
fn version_name_and_domain() {
    let long = "a".repeat(55);
    let cases: &[HeaderCase] = &[
        ("valid", "v1", "ocp", "example.com", "none: {}", vec![]),
        (
            "no version",
            "''",
            "ocp",
            "example.com",
            "none: {}",
            vec!["apiVersion: Required value: install-config version required".into()],
        ),
        (
            "another version",
            "v1beta4",
            "ocp",
            "example.com",
            "none: {}",
            vec![
                r#"apiVersion: Invalid value: "v1beta4": install-config version must be "v1""#
                    .into(),
            ],
        ),
        (
            "an empty name and domain fail the RFC 1123 rule",
            "v1",
            "''",
            "''",
            "none: {}",
            vec![
                format!(r#"baseDomain: Invalid value: "": {RFC1123}"#),
                format!(r#"metadata.name: Invalid value: "": {RFC1123}"#),
            ],
        ),
        (
            "at most 54 characters (63 less \\052.apps)",
            "v1",
            &long,
            "example.com",
            "none: {}",
            vec![format!(
                r#"metadata.name: Invalid value: "{long}": must be no more than 54 characters"#
            )],
        ),
        (
            "on GCP and Azure a name starts with a letter",
            "v1",
            "'9ocp'",
            "example.com",
            "azure: {region: eastus}",
            vec![
                r#"metadata.name: Invalid value: "9ocp": cluster name must begin with a lower-case letter"#
                    .into(),
            ],
        ),
        (
            "on premises no dot",
            "v1",
            "a.b",
            "example.com",
            "baremetal: {apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.7]}",
            vec![r#"metadata.name: Invalid value: "a.b": cluster name must not contain '.'"#.into()],
        ),
        (
            "a trailing dot on the domain is fine, an underscore is not",
            "v1",
            "ocp",
            "Bad_Domain.",
            "none: {}",
            vec![format!(r#"baseDomain: Invalid value: "Bad_Domain.": {RFC1123}"#)],
        ),
    ];
    for (what, version, name, domain, platform, expected) in cases {
        let text = format!(
            "apiVersion: {version}\nmetadata:\n  name: {name}\nbaseDomain: {domain}\nplatform:\n  {platform}\n"
        );
        assert_eq!(file_errors(&text), *expected, "{what}");
    }
}

/// (what, `networking` as a flow mapping, errors), on platform `none`.
const NETWORKING: &Cases = &[
    ("the defaults", "{}", &[]),
    (
        "retired plugins",
        "{networkType: Kuryr}",
        &[
            r#"networking.networkType: Invalid value: "Kuryr": networkType Kuryr is not supported on OpenShift later than 4.14"#,
        ],
    ),
    (
        "a machine network with host bits, and overlapping another",
        "{machineNetwork: [{cidr: 10.0.0.0/16}, {cidr: 10.0.1.0/24}, {cidr: 192.168.0.1/24}]}",
        &[
            r#"networking.machineNetwork[1]: Invalid value: "10.0.1.0/24": machine network must not overlap with machine network 0"#,
            r#"networking.machineNetwork[2]: Invalid value: "192.168.0.1/24": invalid network address. got 192.168.0.1/24, expecting 192.168.0.0/24"#,
        ],
    ),
    (
        "a service network too large still counts for the overlaps",
        "{serviceNetwork: [172.0.0.0/8], clusterNetwork: [{cidr: 172.30.0.0/16, hostPrefix: 23}]}",
        &[
            r#"networking.clusterNetwork[0].cidr: Invalid value: "172.30.0.0/16": cluster network must not overlap with service network 0"#,
            r#"networking.serviceNetwork[0]: Invalid value: "172.0.0.0/8": subnet size for IPv4 service network must be /12 or greater (/16 is recommended)"#,
        ],
    ),
    (
        "a cluster network over the service network",
        "{clusterNetwork: [{cidr: 172.30.0.0/16, hostPrefix: 23}]}",
        &[
            r#"networking.clusterNetwork[0].cidr: Invalid value: "172.30.0.0/16": cluster network must not overlap with service network 0"#,
        ],
    ),
    (
        "IPv4 cluster networks share one hostPrefix",
        "{clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}, {cidr: 10.136.0.0/14, hostPrefix: 24}]}",
        &[
            "networking.clusterNetwork[1].hostPrefix: Invalid value: 24: cluster network host subnetwork prefix must be the same value for IPv4 networks",
        ],
    ),
    (
        "two IPv4 service networks",
        "{serviceNetwork: [172.30.0.0/16, 172.31.0.0/16]}",
        &[
            r#"networking.serviceNetwork: Invalid value: "172.30.0.0/16, 172.31.0.0/16": only one service network can be specified"#,
        ],
    ),
];

#[test]
fn networking_rules_match_the_installer_messages() {
    check_cases(NETWORKING, |n| format!("platform:\n  none: {{}}\nnetworking: {n}\n"));
}

/// (what, the rest of the file after the header, errors)
const TOP_LEVEL: &Cases = &[
    (
        "no platform",
        "platform: {}\n",
        &[
            r#"platform: Invalid value: "": must specify one of the platforms (aws, azure, baremetal, external, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere)"#,
        ],
    ),
    (
        "two platforms",
        "platform:\n  aws: {region: r}\n  none: {}\n",
        &[
            r#"platform: Invalid value: "aws": must only specify a single type of platform; cannot use both "aws" and "none""#,
        ],
    ),
    (
        "credentials mode on a platform without any",
        "credentialsMode: Mint\nplatform:\n  baremetal: {apiVIPs: [10.0.0.5], ingressVIPs: [10.0.0.7]}\n",
        &[
            r#"credentialsMode: Invalid value: "Mint": cannot be set when using the "baremetal" platform"#,
        ],
    ),
    (
        "PowerVS takes only Manual",
        "credentialsMode: Passthrough\nsshKey: ssh-ed25519 AAAA\nplatform:\n  powervs: {zone: dal10}\n",
        &[r#"credentialsMode: Unsupported value: "Passthrough": supported values: "Manual""#],
    ),
    (
        "GCP takes all three",
        "credentialsMode: Passthrough\nplatform:\n  gcp: {projectID: p, region: r}\n",
        &[],
    ),
    (
        "Mixed publishing only on Azure, and only with an operator strategy",
        "publish: Mixed\nplatform:\n  aws: {region: r}\n",
        &[
            r#"publish: Invalid value: "Mixed": mixed publish strategy is not supported on "aws" platform"#,
            r#"publish: Invalid value: "Mixed": please specify the operator publishing strategy for mixed publish strategy"#,
        ],
    ),
    (
        "an operator strategy only with Mixed",
        "publish: External\noperatorPublishingStrategy: {ingress: Internal}\nplatform:\n  azure: {region: eastus}\n",
        &[
            r#"operatorPublishingStrategy: Invalid value: "External": operator publishing strategy is only allowed with mixed publishing strategy installs"#,
        ],
    ),
    (
        "Internal on a public cloud",
        "publish: Internal\nplatform:\n  ibmcloud: {region: us-south}\n",
        &[],
    ),
    (
        "a trust bundle policy",
        "additionalTrustBundlePolicy: Never\nplatform:\n  none: {}\n",
        &[
            r#"additionalTrustBundlePolicy: Invalid value: "Never": supported values "Proxyonly", "Always""#,
        ],
    ),
    (
        "the policy's spelling",
        "additionalTrustBundlePolicy: Proxyonly\nplatform:\n  none: {}\n",
        &[],
    ),
];

#[test]
fn top_level_rules_match_the_installer_messages() {
    check_cases(TOP_LEVEL, str::to_owned);
}
