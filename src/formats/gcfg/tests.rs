//! gcfg parsing and quoting: the cases that decide whether the CCM reads what we wrote.

use proptest::prelude::*;

use super::*;

fn value_of(text: &str) -> Option<String> {
    parse(&format!("[Global]\nkey = {text}\n")).unwrap().get("global", "key").map(str::to_owned)
}

#[test]
fn comments_cut_unquoted_values_only() {
    assert_eq!(value_of("Region#1").as_deref(), Some("Region"));
    assert_eq!(value_of("Region;1").as_deref(), Some("Region"));
    assert_eq!(value_of("\"Region#1\"").as_deref(), Some("Region#1"));
    assert_eq!(value_of("a ; comment").as_deref(), Some("a"));
}

#[test]
fn quotes_escapes_and_blanks_follow_gcfg() {
    for (raw, want) in [
        ("  padded  ", "padded"),
        ("\"  padded  \"", "  padded  "),
        ("a\"b c\"d", "ab cd"),
        ("in  ternal   space", "in  ternal   space"),
        (r#""with \"quote\" and \\ and \n""#, "with \"quote\" and \\ and \n"),
        (r"tab\there", "tab\there"),
        ("", ""),
        ("\"\"", ""),
    ] {
        assert_eq!(value_of(raw).as_deref(), Some(want), "{raw:?}");
    }
}

#[test]
fn names_are_case_insensitive_and_later_lines_win() {
    let doc = parse("[global]\nRegion = a\n[GLOBAL]\nregion = b\n").unwrap();
    assert_eq!(doc.get("Global", "REGION"), Some("b"));
    assert_eq!(doc.get_all("Global", "region").count(), 2);
}

#[test]
fn bare_keys_subsections_and_continuations_parse() {
    let text = "; header comment\n[LoadBalancer]\ncreate-monitor\n\
                [LoadBalancerClass \"a \\\"b\\\"\"]\nsubnet-id = s1 \\\n  s2\n";
    let doc = parse(text).unwrap();
    assert_eq!(doc.sections.len(), 2);
    assert_eq!(doc.sections[0].entries[0].value, None);
    assert_eq!(doc.get("LoadBalancer", "create-monitor"), Some(""));
    assert_eq!(doc.sections[1].subsection.as_deref(), Some("a \"b\""));
    assert_eq!(doc.sections[1].entries[0].value.as_deref(), Some("s1   s2"));
    assert_eq!(doc.sections[1].line, 4);
}

#[test]
fn errors_name_the_line() {
    for (text, message) in [
        ("key = v\n", "line 1: \"key = v\" is outside any [section]"),
        ("[Global]\nkey = \"open\n", "line 2: key: unterminated quoted value"),
        ("[Global]\nkey = bad\\q\n", "line 2: key: unknown escape sequence `\\q`"),
        ("[Global\n", "line 1: section header is missing its closing `]`"),
        ("[Glo bal]\n", "line 1: subsection \"bal\" must be double-quoted"),
        ("[Global]\n1key = x\n", "line 2: invalid key \"1key = x\": a key starts with a letter"),
        ("[Global]\nkey value\n", "line 2: expected `=` after key \"key\""),
    ] {
        assert_eq!(parse(text).unwrap_err().to_string(), message, "{text:?}");
    }
}

#[test]
fn values_are_quoted_only_when_gcfg_would_misread_them() {
    for (value, written) in [
        ("RegionOne", "RegionOne"),
        ("/etc/ca bundle.pem", "/etc/ca bundle.pem"),
        ("$dollar!bang?q`tick", "$dollar!bang?q`tick"),
        ("Region#1", "\"Region#1\""),
        ("a;b", "\"a;b\""),
        ("say \"hi\"", r#""say \"hi\"""#),
        (r"back\slash", r#""back\\slash""#),
        ("with\\n", r#""with\\n""#),
        ("real\nnewline", r#""real\nnewline""#),
        (" lead", "\" lead\""),
        ("trail ", "\"trail \""),
        ("", "\"\""),
    ] {
        assert_eq!(quote(value), written, "{value:?}");
        assert_eq!(value_of(written).as_deref(), Some(value), "{written:?} reads back");
    }
}

#[test]
fn writer_separates_sections_with_one_blank_line() {
    let doc = Document {
        sections: vec![
            Section::new("Global")
                .with("secret-name", "openstack-credentials")
                .with("region", "R#1"),
            Section::new("LoadBalancer").with("floating-network-id", "abc"),
        ],
    };
    assert_eq!(
        doc.to_string(),
        "[Global]\nsecret-name = openstack-credentials\nregion = \"R#1\"\n\n\
         [LoadBalancer]\nfloating-network-id = abc\n"
    );
    assert_eq!(Document::default().to_string(), "");
}

#[test]
fn set_replaces_in_place_and_appends_otherwise() {
    let mut doc = parse("[Global]\na = 1\nb = 2\na = 3\n").unwrap();
    doc.set("global", "A", "9");
    doc.set("Global", "c", "4");
    doc.set("LoadBalancer", "max-shared-lb", "1");
    assert_eq!(
        doc.to_string(),
        "[Global]\nb = 2\na = 9\nc = 4\n\n[LoadBalancer]\nmax-shared-lb = 1\n"
    );
    assert_eq!(doc.remove("global", "b").len(), 1);
    doc.remove_section("loadbalancer");
    assert_eq!(doc.to_string(), "[Global]\na = 9\nc = 4\n");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_written_value_reads_back_identically(value in "[ -~\t\n\u{e9}\u{2603}]{0,40}") {
        let doc = Document { sections: vec![Section::new("Global").with("key", value.clone())] };
        let back = parse(&doc.to_string()).unwrap();
        prop_assert_eq!(back.get("Global", "key"), Some(value.as_str()));
    }

    #[test]
    fn parse_never_panics(text in "[\\[\\]\"\\\\;#= a-zA-Z0-9\n\t-]{0,80}") {
        let _ = parse(&text);
    }
}
