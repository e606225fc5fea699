//! The PowerVS rules as a table: each case the keys of `platform.powervs` (a YAML flow
//! mapping) and the exact errors, after a valid SSH key.

use crate::installconfig::validate::tests::{Cases, check_cases};

/// (what the case shows, keys of `platform.powervs`, errors)
const CASES: &Cases = &[
    ("a zone alone: the region follows from it", "zone: dal10", &[]),
    ("a zone and its region", "zone: wdc07, region: wdc", &[]),
    (
        "without a zone nothing else is checked",
        "region: nowhere, serviceInstanceGUID: x",
        &["platform.powervs.zone: Required value: zone must be specified"],
    ),
    (
        "an unknown zone stops the checks too",
        "zone: dal99, region: nowhere",
        &[
            r#"platform.powervs.zone: Unsupported value: "dal99": supported values: "dal10", "dal12", "eu-de-1", "eu-de-2", "lon04", "lon06", "mad02", "mad04", "osa21", "sao01", "sao04", "syd04", "syd05", "tok04", "tor01", "us-east", "us-south", "wdc06", "wdc07""#,
        ],
    ),
    (
        "an unknown region",
        "zone: dal10, region: dallas",
        &[
            r#"platform.powervs.region: Unsupported value: "dallas": supported values: "dal", "eu-de", "lon", "mad", "osa", "sao", "syd", "tok", "tor", "us-east", "us-south", "wdc""#,
        ],
    ),
    (
        "a region need not be the zone's (the installer does not compare them)",
        "zone: dal10, region: lon",
        &[],
    ),
    ("userID is not required", "zone: dal10, userID: ''", &[]),
    (
        "serviceInstanceGUID must be a UUID, at the installer's capitalised path",
        "zone: dal10, serviceInstanceGUID: abc123",
        &[
            r#"platform.powervs.ServiceInstanceGUID: Invalid value: "abc123": ServiceInstanceGUID must be a valid UUID"#,
        ],
    ),
    (
        "a UUID workspace",
        "zone: dal10, serviceInstanceGUID: 05d5dbfd-2a62-4d01-b37b-71211be442f6",
        &[],
    ),
    (
        "an endpoint needs a host",
        "zone: dal10, serviceEndpoints: [{name: COS, url: /some/path}]",
        &[
            r#"platform.powervs.serviceEndpoints[0].url: Invalid value: "/some/path": empty hostname provided, it cannot be empty"#,
        ],
    ),
    (
        "an endpoint may not have a path",
        "zone: dal10, serviceEndpoints: [{name: COS, url: 'https://cos.example.com/some/path'}]",
        &[
            r#"platform.powervs.serviceEndpoints[0].url: Invalid value: "https://cos.example.com/some/path": no path or request parameters can be provided, "/some/path" was provided"#,
        ],
    ),
    (
        "nor a query",
        "zone: dal10, serviceEndpoints: [{name: IAM, url: 'https://iam.example.com?foo=some'}]",
        &[
            r#"platform.powervs.serviceEndpoints[0].url: Invalid value: "https://iam.example.com?foo=some": no path or request parameters can be provided, "/?foo=some" was provided"#,
        ],
    ),
    (
        "an API version path, a missing scheme and plain names are fine",
        "zone: dal10, serviceEndpoints: [{name: COS, url: 'https://cos.example.com/v2'}, {name: DNSServices, url: 'dns.example.com/v35/'}, {name: Power, url: power.example.com}]",
        &[],
    ),
    (
        "a scheme other than https",
        "zone: dal10, serviceEndpoints: [{name: COS, url: 'ftp://cos.example.com'}, {name: IAM, url: 'http://iam.example.com'}]",
        &[
            r#"platform.powervs.serviceEndpoints[0].url: Invalid value: "ftp://cos.example.com": invalid scheme ftp, only https is allowed"#,
            r#"platform.powervs.serviceEndpoints[1].url: Invalid value: "http://iam.example.com": invalid scheme http, only https is allowed"#,
        ],
    ),
    (
        "one endpoint a service",
        "zone: dal10, serviceEndpoints: [{name: COS, url: 'https://a.example.com'}, {name: COS, url: b.example.com}]",
        &[r#"platform.powervs.serviceEndpoints[1].name: Duplicate value: "COS""#],
    ),
];

#[test]
fn powervs_platform_rules_match_the_installer_messages() {
    check_cases(CASES, |extra| {
        format!("sshKey: ssh-ed25519 AAAA\nplatform:\n  powervs: {{{extra}}}\n")
    });
}

#[test]
fn powervs_needs_an_ssh_key_and_a_zone() {
    check_cases(
        &[(
            "the installer's sshKey rule for PowerVS",
            "",
            &[
                "platform.powervs.zone: Required value: zone must be specified",
                "sshKey: Required value: sshKey is required",
            ],
        )],
        |_| "platform:\n  powervs: {}\n".to_owned(),
    );
}
