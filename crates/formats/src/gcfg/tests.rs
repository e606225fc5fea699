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
        (r#""tab\there""#, "tab\there"),
        (r#"unquoted \"quote"#, "unquoted \"quote"),
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
        ("key = v\n", "line 1: key \"key\" is outside any [section]"),
        (
            "[Global]\nkey = \"open\n",
            "line 2: key: unterminated quoted value (write a line break as \\n)",
        ),
        ("[Global]\nkey = \"bad\\q\"\n", "line 2: key: unknown escape sequence `\\q`"),
        ("[Global\n", "line 1: section header [Global is missing its closing `]`"),
        ("[Glo bal]\n", "line 1: section header [Glo is missing its closing `]`"),
        ("[Global] x = 1\n", "line 1: unexpected 'x' after the section header"),
        ("[Global]\n1key = x\n", "line 2: unexpected '1': expected a [section] or a key"),
        ("[Global]\nkey value\n", "line 2: key: expected `=` after the key"),
        ("[Global]\n\nk = a\0b\n", "line 3: illegal character NUL"),
    ] {
        assert_eq!(parse(text).unwrap_err().to_string(), message, "{text:?}");
    }
}

/// gcfg 1.2.3 (what the upstream CCM vendors) knows `\\`, `\"`, `\n` and `\t`, and only inside
/// quotes; outside them a backslash must precede `"` or a line break. We used to accept
/// `tab\there` unquoted and write a backspace as `\b`, which the CCM rejects.
#[test]
fn escapes_are_gcfg_1_2_3_s_four_and_only_inside_quotes() {
    for text in [r"tab\there", r"with\n", r"back\\slash", r#""\b""#, r#""\r""#] {
        let doc = format!("[Global]\nkey = {text}\n");
        assert!(parse(&doc).is_err(), "gcfg rejects {text:?}");
    }
    assert!(parse("[Global]\nkey = end\\").is_err(), "nothing follows the backslash");
    assert_eq!(value_of("end\\\n").as_deref(), Some("end"), "an empty continuation line");
    assert_eq!(quote("back\u{8}space"), "back\u{8}space");
    assert_eq!(value_of("\"\\t\\n\\\\\\\"\"").as_deref(), Some("\t\n\\\""));
}

#[test]
fn a_continued_value_keeps_the_blanks_around_the_line_break() {
    assert_eq!(value_of("\\\n  c").as_deref(), Some("  c"));
    assert_eq!(value_of("a \\\r\n b  ").as_deref(), Some("a  b"));
    // Only a value continues: not a key, not a header.
    assert!(parse("[Global]\nkey \\\n= 1\n").is_err());
    assert!(parse("[Global \\\n]\n").is_err());
}

#[test]
fn every_cr_in_a_value_is_dropped_as_gcfg_does() {
    assert_eq!(value_of("\"a\rb\"").as_deref(), Some("ab"));
    assert_eq!(value_of("a\rb \r").as_deref(), Some("ab"));
    let doc = parse("[Global]\r\nregion = r\r\n").unwrap();
    assert_eq!(doc.get("Global", "region"), Some("r"));
}

#[test]
fn headers_and_names_follow_gcfg_s_scanner() {
    let doc = parse("[ Global ]\n[s\"sub\"]\n[Global]\nrégion = é\nx-1- = 2\n").unwrap();
    assert_eq!(doc.sections[0].name, "Global");
    assert_eq!(doc.sections[1].subsection.as_deref(), Some("sub"));
    assert_eq!(doc.get("Global", "région"), Some("é"));
    assert_eq!(doc.get("Global", "x-1-"), Some("2"));
    for text in
        ["[a.b]\n", "[s \"\"]\n", "[s \"a\\qb\"]\n", "[Global]\n_x = 1\n", "[Global]\n\u{1}x = 1\n"]
    {
        assert!(parse(text).is_err(), "gcfg rejects {text:?}");
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
    fn every_written_value_reads_back_identically(
        value in "[ -~\t\n\u{8}\u{a0}\u{e9}\u{2603}]{0,40}",
    ) {
        let doc = Document { sections: vec![Section::new("Global").with("key", value.clone())] };
        let back = parse(&doc.to_string()).unwrap();
        prop_assert_eq!(back.get("Global", "key"), Some(value.as_str()));
    }

    #[test]
    fn parse_never_panics(text in "[\\[\\]\"\\\\;#= a-zA-Z0-9\n\t-]{0,80}") {
        let _ = parse(&text);
    }
}
