use super::*;
use secrecy::ExposeSecret;

fn checked(text: &str) -> Checked {
    check_text(text, "cloud.conf").unwrap()
}

fn messages(c: &Checked) -> Vec<String> {
    c.diagnostics.iter().map(ToString::to_string).collect()
}

#[test]
fn every_known_key_is_read_into_its_typed_field() {
    let c = checked(
        r#"
[Global]
auth-url = https://keystone:5000/v3
user-id = uid
username = user
password = "pa;ss#word"
tenant-id = pid
tenant-name = proj
domain-id = did
domain-name = dname
tenant-domain-id = tdid
tenant-domain-name = tdname
user-domain-id = udid
user-domain-name = udname
region = RegionOne
os-endpoint-type = internal
ca-file = /ca.pem
tls-insecure = true
cert-file = /c.pem
key-file = /k.pem
application-credential-id = acid
application-credential-name = acname
application-credential-secret = acsecret
[Networking]
ipv6-support-disabled
public-network-name = pub1
public-network-name = pub2
internal-network-name = int
address-sort-order = 10.0.0.0/8, 192.168.0.0/16
[LoadBalancer]
enabled = false
floating-network-id = fnet
monitor-delay = 10s
monitor-max-retries = 4
max-shared-lb = 1
manage-security-groups = yes
[LoadBalancerClass "gold"]
floating-network-id = gold-net
[Metadata]
search-order = metadataService
request-timeout = 30s
[Route]
router-id = r1
"#,
    );
    assert_eq!(c.diagnostics, vec![], "{:?}", messages(&c));
    let config = c.config("cloud.conf").unwrap();
    let cred = &config.global.credentials;
    assert_eq!(cred.auth_url.as_deref(), Some("https://keystone:5000/v3"));
    assert_eq!(cred.password.as_ref().unwrap().expose_secret(), "pa;ss#word");
    assert_eq!(cred.project_domain_name.as_deref(), Some("tdname"));
    assert_eq!(cred.interface, EndpointInterface::Internal);
    assert!(cred.tls_insecure);
    assert_eq!(cred.application_credential_secret.as_ref().unwrap().expose_secret(), "acsecret");
    assert!(config.networking.ipv6_support_disabled);
    assert_eq!(config.networking.public_network_names, ["pub1", "pub2"]);
    assert_eq!(config.networking.address_sort_order.len(), 2);
    assert!(!config.load_balancer.enabled);
    assert!(config.load_balancer.manage_security_groups);
    assert_eq!(config.load_balancer.monitor_delay, std::time::Duration::from_secs(10));
    assert_eq!(config.load_balancer.monitor_max_retries, 4);
    assert_eq!(config.lb_classes["gold"].floating_network_id.as_deref(), Some("gold-net"));
    assert_eq!(config.metadata.search_order, ["metadataService"]);
    assert_eq!(config.route.router_id.as_deref(), Some("r1"));
}

#[test]
fn defaults_are_upstream_defaults() {
    let config = checked("[Global]\nauth-url = http://k/v3\n").config("x").unwrap();
    assert!(config.load_balancer.enabled);
    assert_eq!(config.load_balancer.lb_provider, "amphora");
    assert_eq!(config.load_balancer.max_shared_lb, 2);
    assert_eq!(config.metadata.request_timeout, std::time::Duration::from_secs(60));
    assert_eq!(config.metadata.search_order, ["configDrive", "metadataService"]);
    assert_eq!(config.global.credentials.interface, EndpointInterface::Public);
}

#[test]
fn section_and_key_names_are_case_insensitive() {
    let c = checked("[global]\nAUTH-URL = http://k/v3\n[NETWORKING]\nPublic-Network-Name = p\n");
    assert_eq!(c.diagnostics, vec![]);
    let config = c.config("x").unwrap();
    assert_eq!(config.global.credentials.auth_url.as_deref(), Some("http://k/v3"));
    assert_eq!(config.networking.public_network_names, ["p"]);
}

#[test]
fn unquoted_hash_starts_a_comment_as_in_gcfg() {
    let config = checked("[Global]\nregion = Region#1\n").config("x").unwrap();
    assert_eq!(config.global.credentials.region.as_deref(), Some("Region"));
    let config = checked("[Global]\nregion = \"Region#1\"\n").config("x").unwrap();
    assert_eq!(config.global.credentials.region.as_deref(), Some("Region#1"));
}

#[test]
fn unknown_key_warns_naming_section_key_and_closest_key() {
    let c = checked(
        "[Global]\nauth-ulr = x\n[LoadBalancer]\nuse-octavia = true\n[BlockStorage]\nbs-version = v3\n",
    );
    let m = messages(&c);
    assert_eq!(c.errors(), Vec::<String>::new());
    assert!(m[0].contains("warning: line 2: [Global] auth-ulr: unknown key is ignored (did you mean \"auth-url\"?)"), "{m:?}");
    assert!(m[1].contains("[LoadBalancer] use-octavia: unknown key"), "{m:?}");
    assert!(m[2].contains("unknown section [BlockStorage]"), "{m:?}");
}

#[test]
fn duration_without_unit_is_an_error_naming_the_key() {
    let c = checked("[LoadBalancer]\nmonitor-delay = 5\n[Metadata]\nrequest-timeout = 1x\n");
    let errors = c.errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("[LoadBalancer] monitor-delay: \"5\" is not a duration: missing unit"),
        "{errors:?}"
    );
    assert!(errors[1].contains("[Metadata] request-timeout"), "{errors:?}");
    let err = c.config("cloud.conf").unwrap_err().to_string();
    assert!(err.starts_with("cloud.conf: 2 error(s)"), "{err}");
}

#[test]
fn non_boolean_and_non_integer_values_are_errors() {
    let c = checked(
        "[Global]\ntls-insecure = maybe\n[LoadBalancer]\nmax-shared-lb = many\nmonitor-max-retries = -1\n",
    );
    let errors = c.errors();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("[Global] tls-insecure: \"maybe\" is neither true nor false"));
    assert!(errors[0].starts_with("line 2"), "{errors:?}");
    // Words other parsers take for booleans are refused too: upstream would verify with them.
    for word in ["yes", "1", "True", "on"] {
        let c = checked(&format!("[Global]\ntls-insecure = {word}\n"));
        assert_eq!(c.errors().len(), 1, "{word}: {:?}", c.errors());
    }
    assert!(checked("[Global]\ntls-insecure = false\n").errors().is_empty());
}

#[test]
fn a_node_selector_pair_without_a_key_is_an_error_as_the_service_controller_would_refuse_it() {
    let c = checked("[LoadBalancer]\nnode-selector = pool=web, zone\n");
    assert_eq!(c.errors(), ["[LoadBalancer] node-selector: \"zone\" is not key=value"]);
    assert!(checked("[LoadBalancer]\nnode-selector = pool=web, zone=\n").errors().is_empty());
}

/// gcfg 1.2.3 (`set`): a bare `key` (no `=`) is `true` for a bool and resets a list.
#[test]
fn blank_value_is_true_for_a_bool_and_resets_a_list() {
    let c = checked(
        "[Networking]\npublic-network-name = a\npublic-network-name = b\npublic-network-name\n\
         public-network-name = c\ninternal-network-name = i\nInternal-Network-Name\n\
         ipv6-support-disabled\n[LoadBalancer]\ncreate-monitor\n[Networking]\npublic-network-name = d\n",
    );
    assert_eq!(c.diagnostics, vec![], "{:?}", messages(&c));
    let config = c.config("x").unwrap();
    assert_eq!(config.networking.public_network_names, ["c", "d"]);
    assert_eq!(config.networking.internal_network_names, Vec::<String>::new());
    assert!(config.networking.ipv6_support_disabled && config.load_balancer.create_monitor);
    let out = render::effective(&c.values);
    assert!(!out.contains("internal-network-name"), "{out}");
}

/// gcfg 1.2.3 fails the whole read with "blank value not supported for type" for a string,
/// integer or duration (a `TextUnmarshaler`), and for `tls-insecure`, a Go string upstream.
#[test]
fn blank_value_on_a_text_duration_or_integer_key_is_an_error_naming_section_and_key() {
    let c = checked(
        "[Global]\nregion\npassword\ntls-insecure\n[LoadBalancer]\nmonitor-delay\n\
         max-shared-lb\n[LoadBalancerClass \"gold\"]\nnetwork-id\n",
    );
    let blank = "blank value (no \"=\") is not supported";
    assert_eq!(
        c.errors(),
        [
            format!("line 2: [Global] region: {blank} for a text key"),
            format!("line 3: [Global] password: {blank} for a text key"),
            format!("line 4: [Global] tls-insecure: {blank}: upstream reads this key as text"),
            format!("line 6: [LoadBalancer] monitor-delay: {blank} for a duration key"),
            format!("line 7: [LoadBalancer] max-shared-lb: {blank} for an integer key"),
            format!("line 9: [LoadBalancerClass] network-id: {blank} for a text key"),
        ]
    );
    let err = c.config("cloud.conf").unwrap_err().to_string();
    assert!(err.starts_with("cloud.conf: 6 error(s): line 2: [Global] region: blank"), "{err}");
}

#[test]
fn a_bad_secret_value_is_never_echoed() {
    let c = checked("[Global]\nos-endpoint-type = sideways\n");
    assert!(c.errors()[0].contains("os-endpoint-type"));
}

#[test]
fn semantic_checks_report_search_order_lb_version_and_secret_pair() {
    let c = checked(
        "[Global]\nsecret-name = creds\n[LoadBalancer]\nlb-version = v1\n[Metadata]\nsearch-order = disk\n[Networking]\naddress-sort-order = 10.0.0.0/8,nonsense\n",
    );
    let m = messages(&c);
    assert!(m.iter().any(|m| m.contains("lb-version")), "{m:?}");
    assert!(m.iter().any(|m| m.contains("search-order")), "{m:?}");
    assert!(m.iter().any(|m| m.contains("secret-name and secret-namespace")), "{m:?}");
    assert!(
        m.iter().any(|m| m.starts_with("warning") && m.contains("\"nonsense\" is not a CIDR")),
        "{m:?}"
    );
}

#[test]
fn effective_config_redacts_every_secret_and_quotes_values() {
    let c = checked(
        "[Global]\npassword = hunter2\napplication-credential-secret = s3cret\ntoken = tok\nregion = \"Region#1\"\n[Networking]\npublic-network-name = a\npublic-network-name = b\n",
    );
    let text = render::effective(&c.values);
    assert!(
        !text.contains("hunter2") && !text.contains("s3cret") && !text.contains("tok\n"),
        "{text}"
    );
    assert!(text.contains("password = <redacted>"));
    assert!(text.contains("region = \"Region#1\""));
    assert!(text.contains("public-network-name = a\npublic-network-name = b\n"));
    assert!(text.contains("[LoadBalancer]\nenabled = true\n"));
    let reparsed = checked(&text);
    assert_eq!(reparsed.values.get("Global", "region"), Some("Region#1"));
}

#[test]
fn clouds_yaml_fills_only_empty_keys() {
    let mut c = checked("[Global]\nregion = Mine\n");
    let entry = clouds::entry_from_text(
        "clouds:\n  openstack:\n    auth:\n      auth_url: http://k/v3\n      username: u\n      password: p\n      project_name: proj\n      user_domain_name: Default\n    region_name: Theirs\n    verify: false\n",
        "openstack",
        "clouds.yaml",
    )
    .unwrap();
    clouds::merge_entry(&mut c.values, &entry);
    let config = c.config("x").unwrap();
    let cred = config.global.credentials;
    assert_eq!(cred.region.as_deref(), Some("Mine"));
    assert_eq!(cred.auth_url.as_deref(), Some("http://k/v3"));
    assert_eq!(cred.project_name.as_deref(), Some("proj"));
    assert!(cred.tls_insecure);
}

#[test]
fn use_clouds_reads_the_named_file_and_reports_a_missing_cloud() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clouds.yaml");
    std::fs::write(&file, "clouds:\n  other:\n    auth:\n      auth_url: http://k/v3\n").unwrap();
    let text =
        format!("[Global]\nuse-clouds = true\nclouds-file = {}\ncloud = other\n", file.display());
    let mut c = checked(&text);
    clouds::apply_use_clouds(&mut c, &[]);
    assert_eq!(c.values.get("Global", "auth-url"), Some("http://k/v3"));
    let mut c = checked(&text.replace("cloud = other", "cloud = missing"));
    clouds::apply_use_clouds(&mut c, &[]);
    assert!(c.errors()[0].contains("has no cloud \"missing\" (clouds: other)"), "{:?}", c.errors());
}

#[test]
fn secret_clouds_yaml_and_legacy_clouds_conf_are_merged() {
    let base =
        checked("[Global]\nsecret-name = s\nsecret-namespace = kube-system\nregion = R\n").values;
    let mut data = std::collections::BTreeMap::new();
    data.insert(
        "clouds.yaml".to_owned(),
        b"clouds:\n  openstack:\n    auth:\n      auth_url: http://k/v3\n      application_credential_id: id\n      application_credential_secret: sec\n    auth_type: v3applicationcredential\n".to_vec(),
    );
    let merged = secret::merge(&base, &data, "secret kube-system/s").unwrap();
    assert_eq!(merged.get("Global", "application-credential-id"), Some("id"));
    assert_eq!(merged.get("Global", "region"), Some("R"));
    let mut legacy = std::collections::BTreeMap::new();
    legacy.insert(
        "clouds.conf".to_owned(),
        b"[Global]\nauth-url = http://old/v3\nusername = u\npassword = p\n".to_vec(),
    );
    let merged = secret::merge(&base, &legacy, "secret kube-system/s").unwrap();
    assert_eq!(merged.get("Global", "auth-url"), Some("http://old/v3"));
    let err = secret::merge(&base, &Default::default(), "secret kube-system/s").unwrap_err();
    assert!(err.contains("neither a clouds.yaml nor a clouds.conf"), "{err}");
}

#[test]
fn every_key_of_the_table_is_accepted_and_printed() {
    let sample = |key: &keys::Key| match (key.name, key.kind) {
        ("os-endpoint-type", _) => "internal",
        ("lb-version", _) => "v2",
        ("search-order", _) => "configDrive",
        ("address-sort-order", _) => "10.0.0.0/8",
        ("node-selector", _) => "pool=web",
        (_, keys::Kind::Bool | keys::Kind::TextBool) => "true",
        (_, keys::Kind::Duration) => "7s",
        (_, keys::Kind::Uint | keys::Kind::Int) => "4",
        _ => "some-value",
    };
    let mut text = String::new();
    for section in keys::SECTIONS {
        text.push_str(&format!("[{section}]\n"));
        for key in keys::KEYS.iter().filter(|k| k.section == *section) {
            text.push_str(&format!("{} = {}\n", key.name, sample(key)));
        }
    }
    text.push_str("[LoadBalancerClass \"c\"]\n");
    for key in keys::LB_CLASS {
        text.push_str(&format!("{} = {}\n", key.name, sample(key)));
    }
    let c = checked(&text);
    let m = messages(&c);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains("kubeconfig-path"), "{m:?}");
    let out = render::effective(&c.values);
    for key in keys::KEYS.iter().chain(keys::LB_CLASS) {
        let line = if key.secret {
            format!("{} = <redacted>\n", key.name)
        } else {
            format!("{} = {}\n", key.name, sample(key))
        };
        assert!(out.contains(&line), "{line:?} missing from:\n{out}");
    }
    c.config("x").unwrap();
}

proptest::proptest! {
    #[test]
    fn rendered_config_reads_back_to_the_same_values(
        region in "[ -~]{0,20}",
        names in proptest::collection::vec("[ -~]{1,12}", 0..3),
    ) {
        let mut values = Values::default();
        values.set("Global", "region", region.clone());
        for name in &names {
            values.map.entry(Values::slot("Networking", None, "public-network-name")).or_default().push(name.clone());
        }
        let text = render::effective(&values);
        let back = check_text(&text, "rendered").unwrap();
        let want_region = (!region.is_empty()).then_some(region.as_str());
        proptest::prop_assert_eq!(back.values.get("Global", "region").filter(|r| !r.is_empty()), want_region);
        proptest::prop_assert_eq!(back.values.all("Networking", "public-network-name"), names.as_slice());
    }
}

#[test]
fn syntax_errors_print_each_cause_once_and_debug_never_shows_values() {
    let err = check_text("[Global\n", "cloud.conf").unwrap_err();
    let chain = crate::cloud::session::chain(&err);
    assert!(chain.starts_with("cloud.conf: invalid cloud.conf syntax: line 1"), "{chain}");
    assert_eq!(chain.matches("line 1").count(), 1, "{chain}");
    let c = checked("[Global]\npassword = hunter2\n");
    let debug = format!("{:?} {:?}", c.values, c.config("x").unwrap());
    assert!(!debug.contains("hunter2"), "{debug}");
}
