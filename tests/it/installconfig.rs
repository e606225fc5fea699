//! install-config loading from fixture files: exact error messages, defaults, unknown-field
//! warnings, syntax errors, and a no-panic property over arbitrary input.

use std::path::PathBuf;

use ccm_assets::installconfig::{self, Defaults, Error, InstallConfig, LoadBalancerType, Loaded};
use proptest::prelude::*;
use serde_json::json;

fn fixture(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/installconfig")
        .join(case)
        .join("install-config.yaml")
}

fn text(case: &str) -> String {
    std::fs::read_to_string(fixture(case)).expect("fixture")
}

/// Parses a fixture under the name users see, `install-config.yaml`.
fn parse_with(case: &str, defaults: &Defaults) -> installconfig::Result<Loaded> {
    installconfig::parse(&text(case), "install-config.yaml", defaults)
}

fn parse(case: &str) -> installconfig::Result<Loaded> {
    parse_with(case, &Defaults::default())
}

fn loaded(case: &str) -> Loaded {
    parse(case).unwrap_or_else(|err| panic!("{case}: {err}"))
}

/// The full error text of a fixture that must fail.
fn failure(case: &str) -> String {
    let err = parse(case).err().unwrap_or_else(|| panic!("{case} parsed"));
    assert!(err.is_invalid_input(), "{case}: {err}");
    err.to_string()
}

const RFC1123: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

#[test]
fn an_api_vip_that_is_not_an_ip_is_reported() {
    assert_eq!(
        failure("invalid-api-vip"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: platform.openstack.apiVIPs: Invalid value: \"foobar\": \"foobar\" is not a valid IP"
    );
}

#[test]
fn a_cluster_name_must_be_an_rfc_1123_subdomain() {
    assert_eq!(
        failure("bad-name"),
        format!(
            "install-config.yaml: 1 invalid field\n\
             install-config.yaml: metadata.name: Invalid value: \"bad-name-\": {RFC1123}"
        )
    );
}

#[test]
fn a_platform_is_required() {
    assert_eq!(
        failure("no-platform"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: platform: Invalid value: \"\": must specify one of the platforms (aws, azure, baremetal, external, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere)"
    );
}

#[test]
fn only_one_platform_may_be_set() {
    assert_eq!(
        failure("two-platforms"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: platform: Invalid value: \"aws\": must only specify a single type of platform; cannot use both \"aws\" and \"openstack\""
    );
}

#[test]
fn the_api_version_must_be_v1() {
    assert_eq!(
        failure("bad-version"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: apiVersion: Invalid value: \"bad-version\": install-config version must be \"v1\""
    );
    assert_eq!(
        failure("missing-version"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: apiVersion: Required value: install-config version required"
    );
}

#[test]
fn powervs_only_supports_manual_credentials() {
    assert_eq!(
        failure("powervs-mint"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: credentialsMode: Unsupported value: \"Mint\": supported values: \"Manual\""
    );
}

#[test]
fn every_error_of_a_file_is_reported_sorted_by_field() {
    assert_eq!(
        failure("multi-error"),
        format!(
            "install-config.yaml: 5 invalid fields\n\
             install-config.yaml: credentialsMode: Unsupported value: \"Mint\": supported values: \"Manual\"\n\
             install-config.yaml: metadata.name: Invalid value: \"bad-name-\": {RFC1123}\n\
             install-config.yaml: platform.openstack.apiVIPs: Invalid value: \"foobar\": \"foobar\" is not a valid IP\n\
             install-config.yaml: platform.openstack.ingressVIPs: Invalid value: \"10.1.0.7\": IP expected to be in one of the machine networks: 10.0.0.0/16\n\
             install-config.yaml: publish: Unsupported value: \"Sideways\": supported values: \"External\", \"Internal\", \"Mixed\""
        )
    );
}

#[test]
fn an_empty_file_names_every_required_field() {
    assert_eq!(
        failure("empty"),
        // The installer has no "required" rule for the name and domain: empty fails the
        // RFC 1123 rule.
        format!(
            "install-config.yaml: 4 invalid fields\n\
             install-config.yaml: apiVersion: Required value: install-config version required\n\
             install-config.yaml: baseDomain: Invalid value: \"\": {RFC1123}\n\
             install-config.yaml: metadata.name: Invalid value: \"\": {RFC1123}\n\
             install-config.yaml: platform: Invalid value: \"\": must specify one of the platforms (aws, azure, baremetal, external, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere)"
        )
    );
}

#[test]
fn unknown_fields_warn_with_their_path_and_the_closest_known_name() {
    let loaded = loaded("unknown-fields");
    assert_eq!(
        loaded.warnings,
        [
            "install-config.yaml: unknown field \"sshkey\" (did you mean \"sshKey\"?)",
            "install-config.yaml: unknown field \"completelyUnrelated\"",
            "install-config.yaml: unknown field \"controlPlane.replica\" (did you mean \"replicas\"?)",
            "install-config.yaml: unknown field \"networking.machineNetwork[0].cird\" (did you mean \"cidr\"?)",
            "install-config.yaml: unknown field \"platform.openstack.apiVIP\" (did you mean \"apiVIPs\"?)",
        ]
    );
    // The unknown `apiVIP` did not count: the VIP is the default one.
    let openstack = loaded.config.platform.openstack.expect("openstack");
    assert_eq!(openstack.api_vips, ["10.0.0.5"]);
}

#[test]
fn unknown_field_warnings_are_part_of_a_validation_failure() {
    assert_eq!(
        failure("misspelled-platform"),
        "install-config.yaml: 1 invalid field\n\
         install-config.yaml: platform: Invalid value: \"\": must specify one of the platforms (aws, azure, baremetal, external, gcp, ibmcloud, none, nutanix, openstack, powervs, vsphere)\n\
         install-config.yaml: unknown field \"platfrom\" (did you mean \"platform\"?)"
    );
}

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let err = parse("syntax-error").unwrap_err();
    assert!(err.is_invalid_input());
    assert!(matches!(err, Error::Syntax { line: 4, column: 2, .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "install-config.yaml:4:2: while parsing a block mapping, did not find expected key"
    );
}

#[test]
fn a_type_error_names_file_line_and_column() {
    let err = parse("type-error").unwrap_err();
    assert!(err.is_invalid_input());
    assert_eq!(
        err.to_string(),
        "install-config.yaml:6:13: replicas: expected a non-negative integer (invalid u32)"
    );
}

#[test]
fn a_missing_file_is_invalid_input_naming_the_path() {
    let path = fixture("does-not-exist");
    let err = installconfig::load(&path, &Defaults::default()).unwrap_err();
    assert!(err.is_invalid_input());
    assert_eq!(err.to_string(), format!("could not read {}", path.display()));
}

#[test]
fn load_names_the_file_as_given() {
    let path = fixture("invalid-api-vip");
    let err = installconfig::load(&path, &Defaults::default()).unwrap_err();
    let first = err.to_string().lines().next().map(str::to_owned);
    assert_eq!(first, Some(format!("{}: 1 invalid field", path.display())));
}

/// One row of the defaults table.
struct DefaultsCase {
    case: &'static str,
    os_cloud: Option<&'static str>,
    cloud: &'static str,
    lb: LoadBalancerType,
    api: &'static [&'static str],
    ingress: &'static [&'static str],
    control_plane_replicas: u32,
}

#[test]
fn defaults_match_the_installer() {
    use LoadBalancerType::{OpenShiftManagedDefault as Managed, UserManaged};
    let row = |case, os_cloud, cloud, lb, api, ingress, control_plane_replicas| DefaultsCase {
        case,
        os_cloud,
        cloud,
        lb,
        api,
        ingress,
        control_plane_replicas,
    };
    let cases = [
        row("valid-openstack", None, "openstack", Managed, &["10.0.0.5"], &["10.0.0.7"], 3),
        row(
            "valid-openstack",
            Some("from-env"),
            "from-env",
            Managed,
            &["10.0.0.5"],
            &["10.0.0.7"],
            3,
        ),
        row("valid-openstack", Some(""), "openstack", Managed, &["10.0.0.5"], &["10.0.0.7"], 3),
        // A cloud set in the file wins over $OS_CLOUD; IPv6 VIPs are network + 5 / + 7.
        row(
            "ipv6-openstack",
            Some("from-env"),
            "ipv6-cloud",
            Managed,
            &["fd2e:6f44:5dd8:c956::5"],
            &["fd2e:6f44:5dd8:c956::7"],
            3,
        ),
        row(
            "user-managed",
            None,
            "openstack",
            UserManaged,
            &["203.0.113.10"],
            &["203.0.113.11"],
            3,
        ),
        row("custom-networks", None, "mycloud", Managed, &["192.168.10.5"], &["192.168.10.7"], 1),
    ];
    for c in cases {
        let defaults = Defaults { os_cloud: c.os_cloud.map(str::to_owned) };
        let config =
            parse_with(c.case, &defaults).unwrap_or_else(|err| panic!("{}: {err}", c.case)).config;
        let openstack = config.platform.openstack.as_ref().expect("openstack");
        assert_eq!(openstack.cloud, c.cloud, "{}", c.case);
        assert_eq!(openstack.load_balancer_type(), c.lb, "{}", c.case);
        assert_eq!(openstack.api_vips, c.api, "{}", c.case);
        assert_eq!(openstack.ingress_vips, c.ingress, "{}", c.case);
        assert_eq!(config.control_plane_replicas(), c.control_plane_replicas, "{}", c.case);
        assert_eq!(config.platform_name(), "openstack");
        let networking = &config.networking;
        assert_eq!(networking.network_type, "OVNKubernetes");
        assert_eq!(config.compute[0].name, "worker");
    }
}

#[test]
fn a_user_managed_load_balancer_gets_no_default_vips() {
    let text = text("user-managed")
        .replace("    apiVIPs:\n    - 203.0.113.10\n    ingressVIPs:\n    - 203.0.113.11\n", "");
    let err = installconfig::parse(&text, "install-config.yaml", &Defaults::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "install-config.yaml: 2 invalid fields\n\
         install-config.yaml: platform.openstack.apiVIPs: Required value: must specify at least one VIP for the API\n\
         install-config.yaml: platform.openstack.ingressVIPs: Required value: must specify at least one VIP for the Ingress"
    );
}

#[test]
fn the_normalized_config_has_upstream_names_defaults_and_no_pull_secret() {
    let config = loaded("valid-openstack").config;
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({
            "apiVersion": "v1",
            "metadata": {"name": "ocp"},
            "baseDomain": "example.com",
            "networking": {
                "networkType": "OVNKubernetes",
                "machineNetwork": [{"cidr": "10.0.0.0/16"}],
                "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                "serviceNetwork": ["172.30.0.0/16"]
            },
            "controlPlane": {"name": "master", "replicas": 3},
            "compute": [{"name": "worker", "replicas": 3}],
            "platform": {"openstack": {
                "cloud": "openstack",
                "apiVIPs": ["10.0.0.5"],
                "ingressVIPs": ["10.0.0.7"],
                "loadBalancer": {"type": "OpenShiftManagedDefault"}
            }},
            "publish": "External"
        })
    );
}

#[test]
fn the_project_examples_load() {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/examples");
    let Ok(entries) = std::fs::read_dir(&examples) else { return };
    for entry in entries {
        let path = entry.unwrap().path().join("install-config.yaml");
        if path.exists() {
            let loaded = installconfig::load(&path, &Defaults::default())
                .unwrap_or_else(|err| panic!("{err}"));
            assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        }
    }
}

/// A normalized config reads back as itself: writing it out loses nothing.
fn assert_round_trips(config: &InstallConfig) {
    let yaml = ccm_formats::yaml::to_yaml(config).expect("yaml");
    let again = installconfig::parse(&yaml, "normalized.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}\n{yaml}"));
    assert_eq!(&again.config, config, "{yaml}");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

#[test]
fn normalized_configs_read_back_unchanged() {
    for case in
        ["valid-openstack", "ipv6-openstack", "user-managed", "custom-networks", "unknown-fields"]
    {
        assert_round_trips(&loaded(case).config);
    }
}

/// Characters that make YAML interesting: structure, quoting, anchors, tags, comments.
const YAMLISH: &str = " \n\t:-[]{},\"'&*!#|>?%@`0123456789abcxyz~.";

fn mutation() -> impl Strategy<Value = (usize, u8, String)> {
    let piece = proptest::collection::vec(
        proptest::sample::select(YAMLISH.chars().collect::<Vec<_>>()),
        0..6,
    )
    .prop_map(|chars| chars.into_iter().collect::<String>());
    (any::<usize>(), 0u8..4, piece)
}

/// Applies one edit at a char boundary: insert, delete a few chars, duplicate a line, or
/// replace a line.
fn mutate(text: &mut String, (at, op, piece): &(usize, u8, String)) {
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let pos = boundaries[at % boundaries.len()];
    match op {
        0 => text.insert_str(pos, piece),
        1 => {
            let end = boundaries
                .iter()
                .copied()
                .find(|b| *b >= pos + piece.len().max(1))
                .unwrap_or(text.len());
            text.replace_range(pos..end, "");
        }
        2 => {
            let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
            let line = text[start..end].to_owned();
            text.insert_str(start, &line);
        }
        _ => {
            let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
            text.replace_range(start..end, piece);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = installconfig::parse(&text, "install-config.yaml", &Defaults::default());
    }

    #[test]
    fn parse_never_panics_on_mutated_configs(
        case in proptest::sample::select(vec!["valid-openstack", "multi-error", "unknown-fields", "custom-networks", "ipv6-openstack"]),
        edits in proptest::collection::vec(mutation(), 1..8),
    ) {
        let mut text = text(case);
        for edit in &edits {
            mutate(&mut text, edit);
        }
        if let Ok(loaded) = installconfig::parse(&text, "install-config.yaml", &Defaults::default()) {
            assert_round_trips(&loaded.config);
        }
    }
}
