//! The upstream CCM's own parser as an oracle: Debian's gcfg 1.2.3 decoding into a mirror of the
//! OCCM Config (the workspace's one oracle, tests/oracle/gcfg/main.go) checks every key of our
//! table, its type and the fatal / non-fatal split (DESIGN §8). scripts/test-tools.sh builds it
//! into `$CCM_TEST_TOOLS/gcfg-oracle`; a missing oracle fails these tests, never skips them.

use std::io::Write as _;
use std::process::{Command, Stdio};

use occm::config::keys::{self, Kind};
use occm::config::{Checked, check_text};
use serde_json::Value;

/// Upstream's decode: Ok(JSON) or Err(fatal message).
fn upstream(text: &str) -> Result<Value, String> {
    let mut child = Command::new(testkit::tools::path("gcfg-oracle"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn ours(text: &str) -> Checked {
    check_text(text, "cloud.conf").unwrap()
}

fn sample(key: &keys::Key) -> &'static str {
    match (key.name, key.kind) {
        ("os-endpoint-type", _) => "internal",
        ("lb-version", _) => "v2",
        ("search-order", _) => "configDrive",
        ("address-sort-order", _) => "10.0.0.0/8",
        ("node-selector", _) => "pool=a;with \"quotes\"",
        (_, Kind::Bool | Kind::TextBool) => "true",
        (_, Kind::Duration) => "7s",
        (_, Kind::Uint | Kind::Int) => "4",
        _ => "a value;with \"quotes\"",
    }
}

#[test]
fn every_key_of_our_table_is_an_upstream_key_and_reads_the_same() {
    let mut text = String::new();
    for section in keys::SECTIONS {
        text.push_str(&format!("[{section}]\n"));
        for key in keys::KEYS.iter().filter(|k| k.section == *section) {
            let value = ccm_quote(sample(key));
            text.push_str(&format!("{} = {value}\n", key.name));
            if key.kind == Kind::List {
                text.push_str(&format!("{} = second\n", key.name));
            }
        }
    }
    text.push_str("[LoadBalancerClass \"gold\"]\n");
    for key in keys::LB_CLASS {
        text.push_str(&format!("{} = {}\n", key.name, ccm_quote(sample(key))));
    }
    let go =
        upstream(&text).unwrap_or_else(|e| panic!("upstream gcfg refused our keys: {e}\n{text}"));
    let rust = ours(&text);
    assert_eq!(rust.errors(), Vec::<String>::new());
    for key in keys::KEYS {
        let theirs = &go[key.section][key.name];
        let mine = rust.values.all(key.section, key.name);
        let expected = match theirs {
            Value::String(s) => vec![s.clone()],
            Value::Bool(b) => vec![b.to_string()],
            Value::Number(n) => vec![n.to_string()],
            Value::Array(items) => items.iter().map(|i| i.as_str().unwrap().to_owned()).collect(),
            other => panic!("{}.{}: unexpected {other}", key.section, key.name),
        };
        assert_eq!(mine, expected.as_slice(), "[{}] {}", key.section, key.name);
    }
    for key in keys::LB_CLASS {
        let theirs = go["LoadBalancerClass"]["gold"][key.name].as_str().unwrap();
        assert_eq!(
            rust.values.class_get("gold", key.name),
            Some(theirs),
            "[LoadBalancerClass] {}",
            key.name
        );
    }
}

fn ccm_quote(value: &str) -> String {
    ccm_formats::gcfg::quote(value).into_owned()
}

#[test]
fn fatal_errors_are_our_errors_and_unknown_names_are_our_warnings() {
    let fatal = [
        "[LoadBalancer]\nmonitor-delay = 5\n",
        "[Metadata]\nrequest-timeout = 1x\n",
        "[LoadBalancer]\nenabled = maybe\n",
        "[LoadBalancer]\nmax-shared-lb = many\n",
        "[LoadBalancer]\nmonitor-max-retries = -1\n",
        "[Networking]\nipv6-support-disabled = 2\n",
    ];
    for text in fatal {
        assert!(upstream(text).is_err(), "upstream accepted {text:?}");
        assert!(!ours(text).errors().is_empty(), "we accepted {text:?}");
    }
    let warnings = [
        "[Global]\nauth-ulr = http://k/v3\n",
        "[LoadBalancer]\nuse-octavia = true\n",
        "[BlockStorage]\nbs-version = v3\n",
        "[global]\nREGION = r\n",
    ];
    for text in warnings {
        assert!(upstream(text).is_ok(), "upstream refused {text:?}");
        assert!(ours(text).errors().is_empty(), "we refused {text:?}");
    }
    let comment = "[Global]\nregion = Region#1\n";
    assert_eq!(upstream(comment).unwrap()["Global"]["region"], "Region");
    assert_eq!(ours(comment).values.get("Global", "region"), Some("Region"));
}

/// gcfg's value as our list of raw values (a Go nil slice, as after a reset, is `null`).
fn as_values(value: &Value) -> Vec<String> {
    match value {
        Value::Null => Vec::new(),
        Value::String(s) => vec![s.clone()],
        Value::Bool(b) => vec![b.to_string()],
        Value::Number(n) => vec![n.to_string()],
        Value::Array(items) => items.iter().map(|i| i.as_str().unwrap().to_owned()).collect(),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn a_blank_value_of_every_key_is_fatal_or_read_exactly_as_upstream_reads_it() {
    for key in keys::KEYS {
        let text = format!("[{}]\n{}\n", key.section, key.name);
        let rust = ours(&text);
        match upstream(&text) {
            Err(fatal) => {
                assert!(fatal.contains("blank value not supported"), "{text:?}: {fatal}");
                let errors = rust.errors();
                let want = format!("line 2: [{}] {}: blank value", key.section, key.name);
                assert!(errors.len() == 1 && errors[0].starts_with(&want), "{text:?}: {errors:?}");
            }
            Ok(go) => {
                assert_eq!(rust.errors(), Vec::<String>::new(), "{text:?}");
                let theirs = as_values(&go[key.section][key.name]);
                assert_eq!(rust.values.all(key.section, key.name), theirs, "{text:?}");
            }
        }
    }
    for key in keys::LB_CLASS {
        let text = format!("[LoadBalancerClass \"gold\"]\n{}\n", key.name);
        assert!(upstream(&text).is_err_and(|e| e.contains("blank value not supported")));
        assert!(ours(&text).errors()[0].contains("blank value"), "{text:?}");
    }
}

#[test]
fn a_blank_list_value_resets_the_list_as_upstream_does() {
    let text = "[Networking]\npublic-network-name = a\npublic-network-name = b\n\
                PUBLIC-NETWORK-NAME\npublic-network-name = c\n\
                internal-network-name = i\ninternal-network-name\n\
                [networking]\npublic-network-name = d\n";
    let go = upstream(text).unwrap();
    let rust = ours(text);
    assert_eq!(rust.errors(), Vec::<String>::new());
    for key in ["public-network-name", "internal-network-name"] {
        let theirs = as_values(&go["Networking"][key]);
        assert_eq!(rust.values.all("Networking", key), theirs, "{key}");
    }
    assert_eq!(rust.values.all("Networking", "public-network-name"), ["c", "d"]);
}
