//! Real gcfg as the oracle for cloud.conf (DESIGN §5, §8): what we write decodes under
//! gopkg.in/gcfg.v1 1.2.3 (the upstream CCM's parser) to exactly the values we meant, and our
//! parser reads every document the way gcfg does.
//!
//! scripts/test-tools.sh builds tests/oracle/gcfg/main.go into `$CCM_TEST_TOOLS/gcfg-oracle`
//! (default `target/test-tools`). A missing oracle fails the test; it is never skipped.

use std::io::Write as _;
use std::process::{Command, Stdio};

use ccm_assets::assets::cloud_provider_config;
use ccm_assets::assets::openstack::lookup::CloudFacts;
use ccm_assets::assets::openstack::{Cloud, cloud_conf, credentials};
use ccm_formats::clouds_yaml::CloudEntry;
use ccm_formats::gcfg::{self, Document, Section};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use testkit::create::CreateManifests;

use crate::support::Test;

/// The example's external network (assets/examples/openstack/install-config.yaml).
const EXAMPLE_NETWORK: &str = "6d8a7b3c-5f1e-4a2b-9c0d-1e2f3a4b5c6d";

/// Values that decide quoting: comment characters, quotes, backslashes, blanks at the ends,
/// a literal `\n`, a real newline, a tab, unicode.
const TRICKY: [&str; 14] = [
    "Region#1",
    "a;b",
    "say \"hi\"",
    "\"",
    r"back\slash",
    r"C:\new\table",
    " lead",
    "trail ",
    "  both  ",
    r"with\n",
    "real\nnewline",
    "tab\there",
    "Région-東京 ☃",
    "",
];

/// Runs the oracle on `input`: its stdout, or its stderr when gcfg rejected the input.
fn run_oracle(args: &[&str], input: &[u8]) -> Result<String, String> {
    let mut child = Command::new(testkit::tools::path("gcfg-oracle"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gcfg-oracle");
    child.stdin.take().expect("stdin").write_all(input).expect("write to gcfg-oracle");
    let out = child.wait_with_output().expect("gcfg-oracle runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let stderr = String::from_utf8(out.stderr).expect("utf-8 stderr");
    match out.status.code() {
        Some(0) => Ok(stdout),
        Some(1) => Err(stderr),
        other => panic!("gcfg-oracle exited with {other:?}: {stderr}"),
    }
}

/// `conf` decoded by real gcfg into the CCM's config struct, as JSON keyed like cloud.conf.
fn decode(conf: &str) -> Value {
    match run_oracle(&[], conf.as_bytes()) {
        Ok(json) => serde_json::from_str(&json).expect("oracle prints JSON"),
        Err(err) => panic!("real gcfg rejects what we wrote: {err}\n--- cloud.conf ---\n{conf}"),
    }
}

/// Each document decoded on its own into the oracle's probe struct: `Ok(values)` or
/// `Err(gcfg's message)`. One process for the whole batch.
fn probe(docs: &[String]) -> Vec<Result<Value, String>> {
    assert!(docs.iter().all(|d| !d.contains('\0')), "NUL separates the documents");
    let stdout = run_oracle(&["probe"], docs.join("\0").as_bytes()).expect("probe mode runs");
    let results: Vec<Value> = serde_json::from_str(&stdout).expect("oracle prints JSON");
    assert_eq!(results.len(), docs.len());
    results
        .into_iter()
        .map(|mut r| match r.get_mut("ok") {
            Some(ok) => Ok(ok.take()),
            None => Err(r["error"].as_str().expect("ok or error").to_owned()),
        })
        .collect()
}

fn cloud(region: Option<&str>, password: Option<&str>) -> Cloud {
    let mut entry = CloudEntry::default();
    entry.auth.auth_url = Some("https://keystone.example.com:5000/v3".into());
    entry.auth.username = Some("my_user".into());
    entry.auth.password = password.map(str::to_owned);
    entry.auth.project_id = Some("f12f928576ae4d21bdb984da5dd1d3bf".into());
    entry.auth.project_name = Some("my project".into());
    entry.auth.user_domain_id = Some("default".into());
    entry.auth.domain_name = Some("Default".into());
    entry.region_name = region.map(str::to_owned);
    Cloud { name: "c".into(), entry, ca_bundle: None, trust_bundle: None }
}

fn facts() -> CloudFacts {
    CloudFacts { floating_network_id: Some(EXAMPLE_NETWORK.into()), load_balancer: true }
}

/// The example's cloud.conf, as `create manifests --offline` writes it.
fn example_cloud_conf() -> String {
    let t = Test::new().example("openstack").create(&CreateManifests::offline());
    t.expect(0);
    let map = t.read(cloud_provider_config::PATH);
    cloud_provider_config::read_config_map(&map).expect("the ConfigMap reads back").config
}

#[test]
fn example_cloud_conf_decodes_under_real_gcfg_to_what_we_meant() {
    let conf = example_cloud_conf();
    let got = decode(&conf);
    assert_eq!(got["Global"]["secret-name"], "openstack-credentials", "{conf}");
    assert_eq!(got["Global"]["secret-namespace"], "kube-system", "{conf}");
    assert_eq!(got["Global"]["region"], "RegionOne", "{conf}");
    assert_eq!(got["Global"]["use-clouds"], false, "{conf}");
    assert_eq!(got["LoadBalancer"]["floating-network-id"], EXAMPLE_NETWORK, "{conf}");

    // The bootstrap CCM reads the same file with the CA path swapped; nothing else moves.
    let boot = decode(&cloud_conf::bootstrap(&conf).expect("bootstrap transform"));
    assert_eq!(boot, got);
}

#[test]
fn example_in_cluster_cloud_conf_decodes_with_clouds_yaml_credentials() {
    let conf = cloud_conf::in_cluster(&example_cloud_conf()).expect("in-cluster transform");
    let got = decode(&conf);
    let global = &got["Global"];
    assert_eq!(global["use-clouds"], true, "{conf}");
    assert_eq!(global["clouds-file"], cloud_conf::CLOUDS_FILE, "{conf}");
    assert_eq!(global["cloud"], "openstack", "{conf}");
    assert_eq!(global["region"], "RegionOne", "{conf}");
    for dropped in ["secret-name", "secret-namespace", "kubeconfig-path"] {
        assert_eq!(global[dropped], "", "{dropped} is dropped: {conf}");
    }
    let lb = &got["LoadBalancer"];
    assert_eq!(lb["floating-network-id"], EXAMPLE_NETWORK, "{conf}");
    assert_eq!(lb["max-shared-lb"], 1, "{conf}");
    assert_eq!(lb["manage-security-groups"], true, "{conf}");
}

#[test]
fn tricky_regions_in_the_installer_cloud_conf_decode_exactly() {
    for region in TRICKY.into_iter().filter(|r| !r.is_empty()) {
        let conf = cloud_conf::cloud_conf(&cloud(Some(region), None), &facts());
        assert_eq!(decode(&conf)["Global"]["region"], region, "{conf}");
        let in_cluster = cloud_conf::in_cluster(&conf).expect("in-cluster transform");
        let got = decode(&in_cluster);
        assert_eq!(got["Global"]["region"], region, "{in_cluster}");
        assert_eq!(got["Global"]["use-clouds"], true, "{in_cluster}");
    }
}

#[test]
fn without_octavia_the_load_balancer_is_disabled_under_real_gcfg() {
    let facts = CloudFacts { floating_network_id: None, load_balancer: false };
    let conf = cloud_conf::cloud_conf(&cloud(Some("RegionOne"), None), &facts);
    let got = decode(&conf);
    assert_eq!(got["LoadBalancer"]["enabled"], false, "{conf}");
    // The oracle sets no defaults (the CCM defaults `enabled` to true): prove it reads the key.
    assert_eq!(decode(&conf.replace("false", "true"))["LoadBalancer"]["enabled"], true);
}

#[test]
fn legacy_clouds_conf_passwords_decode_exactly() {
    for password in [
        r"with\n",
        "real\nnewline",
        "q\"uote",
        "\"",
        r"back\slash",
        "\\",
        "hash#",
        "semi;",
        "dollar$",
        "bang!",
        "what?",
        "back`tick",
        " padded ",
        "tab\there",
        r#"all of \n " \ # ; $ ! ? ` at once "#,
        "pässwörd ☃",
    ] {
        let conf = credentials::clouds_conf(&cloud(Some("Region#1"), Some(password)));
        let got = decode(&conf);
        let global = &got["Global"];
        assert_eq!(global["password"], password, "{conf}");
        assert_eq!(global["auth-url"], "https://keystone.example.com:5000/v3", "{conf}");
        assert_eq!(global["username"], "my_user", "{conf}");
        assert_eq!(global["tenant-id"], "f12f928576ae4d21bdb984da5dd1d3bf", "{conf}");
        assert_eq!(global["tenant-name"], "my project", "{conf}");
        assert_eq!(global["domain-id"], "default", "{conf}");
        assert_eq!(global["domain-name"], "Default", "{conf}");
        assert_eq!(global["region"], "Region#1", "{conf}");
    }
}

/// What gcfg decodes from `doc` into the oracle's probe struct, computed from our parse: the
/// same fields, case-insensitive names, `[a "x"]` ignored for the plain sections, `[s]` keyed
/// by its subsection (`""` without one), a key without `=` resetting its list.
fn our_probe(doc: &Document) -> Value {
    fn apply(target: &mut Map<String, Value>, section: &Section, keys: &[&str]) {
        for entry in &section.entries {
            let Some(key) = keys.iter().find(|k| entry.key.eq_ignore_ascii_case(k)) else {
                continue;
            };
            let list = target[*key].as_array_mut().expect("a list");
            match &entry.value {
                Some(v) => list.push(Value::from(v.as_str())),
                None => list.clear(),
            }
        }
    }
    let empty = |keys: &[&str]| -> Map<String, Value> {
        keys.iter().map(|k| ((*k).to_owned(), json!([]))).collect()
    };
    let mut out = Map::new();
    for (name, keys) in
        [("Global", &["password", "region"][..]), ("a", &["x", "y"]), ("b", &["x", "y"])]
    {
        let mut values = empty(keys);
        for section in doc.sections.iter().filter(|s| s.is(name)) {
            apply(&mut values, section, keys);
        }
        out.insert(name.to_owned(), Value::Object(values));
    }
    let mut subsections = Map::new();
    for section in doc.sections.iter().filter(|s| s.name.eq_ignore_ascii_case("s")) {
        let key = section.subsection.clone().unwrap_or_default();
        let values = subsections.entry(key).or_insert_with(|| Value::Object(empty(&["x", "y"])));
        apply(values.as_object_mut().expect("an object"), section, &["x", "y"]);
    }
    out.insert("s".into(), if subsections.is_empty() { Value::Null } else { subsections.into() });
    Value::Object(out)
}

/// A short run of characters that make gcfg lines interesting: quotes, backslashes (escapes
/// when followed by `n`, `t`, `"`), comment starts, `=`, brackets, blanks (CR too), unicode.
fn soup() -> impl Strategy<Value = String> {
    "[ax \"\\\\#;=\\[\\]nt\t\r\u{e9}\u{2603}]{0,8}"
}

fn blanks() -> impl Strategy<Value = String> {
    "[ \t]{0,2}"
}

/// What may follow `=`: pieces that are mostly valid gcfg (plain text, quoted text with
/// escapes, `\"` outside quotes, continuations, comments, CRs), sometimes soup.
fn raw_value() -> impl Strategy<Value = String> {
    let quoted_char = prop_oneof![
        4 => "[ax ;#=\u{e9}\t]",
        1 => Just(r#"\""#.to_owned()),
        1 => Just(r"\\".to_owned()),
        1 => Just(r"\n".to_owned()),
        1 => Just(r"\t".to_owned()),
        1 => Just("\r".to_owned()),
    ];
    let piece = prop_oneof![
        4 => "[ax \u{e9}\u{2603}\t]{1,4}",
        3 => prop::collection::vec(quoted_char, 0..4).prop_map(|c| format!("\"{}\"", c.concat())),
        1 => Just(r#"\""#.to_owned()),
        1 => prop_oneof![Just("\\\n"), Just("\\\r\n")]
            .prop_flat_map(|nl| blanks().prop_map(move |b| format!("{nl}{b}"))),
        1 => "[;#][ax\"\\\\]{0,3}",
        1 => Just("\r".to_owned()),
        1 => soup(),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|p| p.concat())
}

/// One line of a random document: mostly well-formed headers and entries, sometimes soup.
fn line() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        4 => Just("a"),
        1 => Just("A"),
        2 => Just("b"),
        2 => Just("s"),
        1 => Just("S"),
        1 => Just("Global"),
        1 => Just("zz"),
        1 => Just("a.b"),
        1 => Just("\u{e9}t\u{e9}"),
        1 => Just("1a"),
    ];
    let sub = prop_oneof![
        3 => Just(String::new()),
        1 => "[a \\\\\"\t]{0,4}".prop_map(|s| format!(" \"{s}\"")),
        1 => "[a\\\\\"]{0,3}".prop_map(|s| format!("\"{s}\"")),
    ];
    let tail = prop_oneof![4 => Just(""), 1 => Just(" ; c"), 1 => Just("#c]"), 1 => Just(" x")];
    let header = (blanks(), blanks(), name, sub, blanks(), tail)
        .prop_map(|(b1, b2, name, sub, b3, tail)| format!("{b1}[{b2}{name}{sub}{b3}]{tail}"));
    let key = prop_oneof![
        4 => Just("x"),
        1 => Just("X"),
        2 => Just("y"),
        1 => Just("password"),
        1 => Just("Region"),
        1 => Just("w"),
        1 => Just("x-y"),
        1 => Just("\u{e9}"),
        1 => Just("_x"),
    ];
    let entry = (blanks(), key, blanks(), prop::option::of((blanks(), raw_value()))).prop_map(
        |(b1, key, b2, value)| match value {
            None => format!("{b1}{key}{b2}"),
            Some((b3, value)) => format!("{b1}{key}{b2}={b3}{value}"),
        },
    );
    prop_oneof![3 => header, 8 => entry, 1 => soup()]
}

/// A small random document: a header first most of the time, lines joined by LF or CRLF.
fn document() -> impl Strategy<Value = String> {
    (prop::bool::weighted(0.9), prop::collection::vec(line(), 0..6), prop::bool::weighted(0.2))
        .prop_map(|(header, lines, crlf)| {
            let mut text = if header { "[a]\n".to_owned() } else { String::new() };
            text.push_str(&lines.join(if crlf { "\r\n" } else { "\n" }));
            text
        })
}

/// Values our writers must carry through gcfg: printable ASCII, tab, newline, unicode (a
/// no-break space and a backspace too). Not CR or NUL: gcfg has no spelling for them.
fn value() -> impl Strategy<Value = String> {
    "[ -~\t\n\u{a0}\u{8}\u{e9}\u{2603}]{0,24}"
}

proptest! {
    // No regression file in the tree: a failure prints its minimal case; add it to a unit test.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn written_values_decode_identically_under_real_gcfg(
        values in prop::collection::vec(value(), 1..12),
    ) {
        // One document: every value through the generic writer as a repeated key, then a
        // legacy clouds.conf and an installer cloud.conf per value (the probe reads every
        // [Global] password and region as a list).
        let section = values.iter().fold(Section::new("a"), |s, v| s.with("x", v.as_str()));
        let mut text = Document { sections: vec![section] }.to_string();
        for v in &values {
            text.push_str(&credentials::clouds_conf(&cloud(None, Some(v))));
            text.push_str(&cloud_conf::cloud_conf(&cloud(Some(v), None), &facts()));
        }
        let got = probe(std::slice::from_ref(&text)).remove(0);
        let got = got.map_err(|e| TestCaseError::fail(format!("gcfg rejects: {e}\n{text}")))?;
        // Both installer writers leave out empty values.
        let non_empty: Vec<&String> = values.iter().filter(|v| !v.is_empty()).collect();
        prop_assert_eq!(&got["a"]["x"], &json!(values), "{}", text);
        prop_assert_eq!(&got["Global"]["password"], &json!(non_empty), "{}", text);
        prop_assert_eq!(&got["Global"]["region"], &json!(non_empty), "{}", text);
        let ours = gcfg::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(our_probe(&ours), got, "our parser reads it as gcfg does: {}", text);
    }

    #[test]
    fn our_parser_agrees_with_real_gcfg_on_random_documents(
        docs in prop::collection::vec(document(), 24),
    ) {
        for (doc, theirs) in docs.iter().zip(probe(&docs)) {
            match (gcfg::parse(doc), theirs) {
                (Ok(ours), Ok(theirs)) => prop_assert_eq!(our_probe(&ours), theirs, "{:?}", doc),
                (Err(_), Err(_)) => {}
                (Ok(ours), Err(theirs)) => prop_assert!(
                    false,
                    "gcfg rejects ({}) but we accept {:?}: {:?}", theirs, doc, ours
                ),
                (Err(ours), Ok(theirs)) => prop_assert!(
                    false,
                    "gcfg accepts ({}) but we reject ({}): {:?}", theirs, ours, doc
                ),
            }
        }
    }
}
