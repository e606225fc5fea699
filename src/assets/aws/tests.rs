use serde_json::json;

use super::*;
use crate::installconfig::{Defaults, parse};

const DUAL: &str = "networking:\n  machineNetwork: [{cidr: 10.0.0.0/16}, {cidr: 'fd00::/48'}]\n  clusterNetwork: [{cidr: 10.128.0.0/14, hostPrefix: 23}, {cidr: 'fd01::/48', hostPrefix: 64}]\n  serviceNetwork: [172.30.0.0/16, 'fd02::/112']\n";

fn config(extra: &str, aws: &str) -> InstallConfig {
    let text = format!(
        "apiVersion: v1\nmetadata: {{name: ocp}}\nbaseDomain: example.com\n{extra}platform:\n  aws: {aws}\n"
    );
    parse(&text, "install-config.yaml", &Defaults::default())
        .unwrap_or_else(|err| panic!("{err}"))
        .config
}

#[test]
fn cloud_config_is_an_empty_global_section_by_default() {
    assert_eq!(cloud_config(&config("", "{region: us-east-1}"), "demo-x7k2p"), "[Global]\n");
    let ipv4 = config("", "{region: us-east-1, ipFamily: IPv4}");
    assert_eq!(cloud_config(&ipv4, "demo-x7k2p"), "[Global]\n");
}

#[test]
fn dual_stack_lists_node_ip_families_primary_first() {
    let v4 = config(DUAL, "{region: us-east-1, ipFamily: DualStackIPv4Primary}");
    assert_eq!(
        cloud_config(&v4, "demo-x7k2p"),
        "[Global]\nNodeIPFamilies=ipv4\nNodeIPFamilies=ipv6\n"
    );
    let dual_v6_first = DUAL.replace(
        "[{cidr: 10.0.0.0/16}, {cidr: 'fd00::/48'}]",
        "[{cidr: 'fd00::/48'}, {cidr: 10.0.0.0/16}]",
    );
    let v6 = config(&dual_v6_first, "{region: us-east-1, ipFamily: DualStackIPv6Primary}");
    assert_eq!(
        cloud_config(&v6, "demo-x7k2p"),
        "[Global]\nNodeIPFamilies=ipv6\nNodeIPFamilies=ipv4\n"
    );
}

#[test]
fn the_trust_bundle_is_the_ca_bundle_only_in_iso_regions() {
    let bundle = "additionalTrustBundle: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\n";
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    for region in ["us-iso-east-1", "us-isob-east-1", "us-iso-west-12"] {
        let iso = config(bundle, &format!("{{region: {region}}}"));
        assert_eq!(ca_bundle(&iso).as_deref(), Some(pem), "{region}");
        assert_eq!(cloud_config(&iso, "x"), "[Global]\n");
    }
    for region in ["us-east-1", "us-gov-west-1", "us-isof-south-1", "us-iso-east", "us-iso-1"] {
        assert_eq!(ca_bundle(&config(bundle, &format!("{{region: {region}}}"))), None, "{region}");
    }
    assert_eq!(ca_bundle(&config("", "{region: us-iso-east-1}")), None);
}

#[test]
fn env_keys_are_static_keys_or_nothing() {
    assert_eq!(keys_from_env(None, None, None), Ok(None));
    assert_eq!(keys_from_env(Some(""), Some(""), Some("")), Ok(None));
    let keys = keys_from_env(Some("AKIAEXAMPLE"), Some("s3cr3t-value"), None).unwrap().unwrap();
    assert_eq!(keys.access_key_id, "AKIAEXAMPLE");
    assert_eq!(keys.secret_access_key.expose(), "s3cr3t-value");
    assert_eq!(
        keys_from_env(Some("AKIAEXAMPLE"), None, None).unwrap_err().to_string(),
        "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: set both, or neither to use \
         the credentials file"
    );
    assert_eq!(
        keys_from_env(None, Some("s3cr3t-value"), None).unwrap_err().to_string(),
        "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not: set both, or neither to use \
         the credentials file"
    );
    let err = keys_from_env(Some("ASIAEXAMPLE"), Some("s3cr3t-value"), Some("t0ken")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "AWS_SESSION_TOKEN is set: the cluster needs long-lived keys, because the in-cluster \
         operators keep using them after a session token expires; unset AWS_SESSION_TOKEN and \
         set an IAM user's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    );
}

const SHARED: &str = "\
# written by aws configure
[default]
aws_access_key_id = AKIADEFAULT
aws_secret_access_key = default/s3cr3t+value=

[dev]
; a comment
AWS_Access_Key_Id=AKIADEV
aws_secret_access_key: dev-s3cr3t
s3 =
    max_concurrent_requests = 20

[temporary]
aws_access_key_id = ASIATEMP
aws_secret_access_key = temp-s3cr3t
aws_session_token = t0ken

[sso]
sso_session = corp
";

#[test]
fn shared_file_profiles_are_read_like_the_aws_cli() {
    let keys = keys_from_shared_file(SHARED, "default").unwrap();
    assert_eq!(keys.access_key_id, "AKIADEFAULT");
    assert_eq!(keys.secret_access_key.expose(), "default/s3cr3t+value=");
    let dev = keys_from_shared_file(SHARED, "dev").unwrap();
    assert_eq!(
        (dev.access_key_id.as_str(), dev.secret_access_key.expose()),
        ("AKIADEV", "dev-s3cr3t")
    );
}

#[test]
fn shared_file_errors_name_the_profile_and_key_never_the_value() {
    let cases = [
        ("prod", SHARED, "profile \"prod\" not found"),
        (
            "temporary",
            SHARED,
            "profile \"temporary\": aws_session_token is set: the cluster needs long-lived keys, \
             because the in-cluster operators keep using them after a session token expires; use \
             an IAM user's aws_access_key_id and aws_secret_access_key without a session token",
        ),
        (
            "sso",
            SHARED,
            "profile \"sso\": aws_access_key_id is missing or empty: only static access keys \
             (aws_access_key_id and aws_secret_access_key) are supported",
        ),
        (
            "default",
            "[default]\naws_access_key_id = AKIA\naws_secret_access_key =\n",
            "profile \"default\": aws_secret_access_key is missing or empty: only static access \
             keys (aws_access_key_id and aws_secret_access_key) are supported",
        ),
        (
            "default",
            "[default]\naws_access_key_id = AKIA\nleaked-s3cr3t\n",
            "line 3: expected a [profile] header, a key = value line or a comment",
        ),
        (
            "default",
            "aws_access_key_id = AKIA\n",
            "line 1: expected a [profile] header, a key = value line or a comment",
        ),
    ];
    for (profile, text, message) in cases {
        let err = keys_from_shared_file(text, profile).unwrap_err().to_string();
        assert_eq!(err, message);
        assert!(!err.contains("s3cr3t"), "{err}");
    }
}

#[test]
fn keys_never_show_the_secret_in_debug_but_reach_the_secret_data() {
    let keys = keys_from_shared_file(SHARED, "dev").unwrap();
    let debug = format!("{keys:?} {keys:#?}");
    assert!(!debug.contains("dev-s3cr3t") && debug.contains("AKIADEV"), "{debug}");
    let data = secret_data(&keys);
    assert_eq!(
        data.into_iter().collect::<Vec<_>>(),
        [
            ("aws_access_key_id".to_owned(), "AKIADEV".to_owned()),
            ("aws_secret_access_key".to_owned(), "dev-s3cr3t".to_owned()),
        ]
    );
    let state = serde_json::to_string(&keys).unwrap();
    assert_eq!(state, r#"{"accessKeyId":"AKIADEV","secretAccessKey":"dev-s3cr3t"}"#);
    assert_eq!(serde_json::from_str::<AwsKeys>(&state).unwrap(), keys);
}

#[test]
fn infrastructure_matches_the_installer() {
    let (spec, status) = infrastructure(&config("", "{region: us-east-1}"));
    assert_eq!(spec, json!({}));
    assert_eq!(
        status,
        json!({
            "region": "us-east-1",
            "cloudLoadBalancerConfig": {"dnsType": "PlatformDefault"},
            "ipFamily": "IPv4",
        })
    );
    let full = config(
        DUAL,
        "\n    region: us-east-1\n    ipFamily: DualStackIPv4Primary\n    userProvisionedDNS: Enabled\n    propagateUserTags: true\n    userTags: {team: a, cost: b}\n    serviceEndpoints:\n    - {name: sts, url: 'https://sts.example.com'}\n    - {name: ec2, url: 'https://ec2.example.com'}",
    );
    let (spec, status) = infrastructure(&full);
    let sts = json!({"name": "sts", "url": "https://sts.example.com"});
    let ec2 = json!({"name": "ec2", "url": "https://ec2.example.com"});
    assert_eq!(spec, json!({"serviceEndpoints": [sts, ec2]}));
    assert_eq!(
        status,
        json!({
            "region": "us-east-1",
            "serviceEndpoints": [ec2, sts],
            "resourceTags": [{"key": "cost", "value": "b"}, {"key": "team", "value": "a"}],
            "cloudLoadBalancerConfig": {"dnsType": "ClusterHosted"},
            "ipFamily": "DualStackIPv4Primary",
        })
    );
    let unpropagated = config("", "{region: r, userTags: {team: a}}");
    assert!(infrastructure(&unpropagated).1.get("resourceTags").is_none());
}
