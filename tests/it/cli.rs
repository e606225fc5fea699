//! The command line: help, usage errors, exit codes, completions, `graph`, `validate`.

use crate::assert_golden;
use crate::support::Test;

#[test]
fn help_teaches_each_command() {
    for (name, args) in [
        ("help", &["--help"][..]),
        ("help-create-manifests", &["create", "manifests", "--help"]),
        ("help-validate", &["validate", "--help"]),
        ("help-graph", &["graph", "--help"]),
        ("help-render", &["render", "--help"]),
        ("help-inject-azure-credentials", &["inject-azure-credentials", "--help"]),
    ] {
        let run = Test::new().args(args).expect(0);
        assert_golden!(name, run.stdout);
    }
}

#[test]
fn short_help_is_one_line_per_flag() {
    let run = Test::new().args(&["create", "manifests", "-h"]).expect(0);
    let line = run.stdout.lines().find(|l| l.contains("--offline")).unwrap_or_default();
    assert!(line.ends_with("Make no call to any cloud API"), "{}", run.stdout);
}

#[test]
fn unknown_flags_and_bad_values_are_usage_errors() {
    let run = Test::new().args(&["create", "manifests", "--bogus"]).expect(2);
    assert!(run.stderr.contains("unexpected argument '--bogus'"), "{}", run.stderr);
    let run = Test::new().args(&["create", "manifests", "--infra-id", "Bad_ID"]).expect(2);
    assert!(run.stderr.contains("\"Bad_ID\" is not a valid infrastructure ID"), "{}", run.stderr);
    let run = Test::new().args(&["graph", "--format", "svg"]).expect(2);
    assert!(run.stderr.contains("invalid value 'svg'"), "{}", run.stderr);
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _ccm__assets"),
        ("zsh", "#compdef ccm-assets"),
        ("fish", "complete -c ccm-assets"),
    ] {
        let run = Test::new().args(&["completion", shell]).expect(0);
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        assert!(run.stdout.contains("manifests"), "{shell} completes subcommands");
    }
}

#[test]
fn graph_prints_every_asset_as_text_and_dot() {
    let text = Test::new().args(&["graph"]).expect(0).stdout;
    assert_golden!("graph-text", text);
    let dot = Test::new().args(&["graph", "--format", "dot"]).expect(0).stdout;
    assert_golden!("graph-dot", dot);
}

#[test]
fn validate_accepts_the_example_and_writes_nothing() {
    let t = Test::new().example("openstack").args(&["validate", "--dir", "{dir}"]);
    let before = crate::support::tree(&t.dir());
    let run = t.expect(0);
    assert_eq!(run.stderr, "INFO Loaded install-config.yaml\nINFO install-config.yaml is valid\n");
    assert_eq!(run.stdout, "");
    assert_eq!(crate::support::tree(&t.dir()), before);
}

#[test]
fn validate_reports_every_error_with_exit_code_3() {
    let run = Test::new()
        .file(
            "install-config.yaml",
            "apiVersion: bad-version\nmetadata:\n  name: bad-name-\nbaseDomain: example.com\n\
             platform:\n  openstack:\n    apiVIPs: [foobar]\n    ingressVIPs: [10.0.0.7]\n",
        )
        .args(&["validate", "--dir", "{dir}"])
        .expect(3);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("ERROR ") && l.contains("install-config.yaml: "))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains(
            "apiVersion: Invalid value: \"bad-version\": install-config version must be \"v1\""
        )),
        "{}",
        run.stderr
    );
    assert!(
        lines.iter().any(|l| l.contains("metadata.name: Invalid value: \"bad-name-\"")),
        "{}",
        run.stderr
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "platform.openstack.apiVIPs: Invalid value: \"foobar\": \"foobar\" is not a valid IP"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_install_config_is_invalid_input() {
    let t = Test::new().args(&["validate", "--dir", "{dir}"]);
    std::fs::create_dir_all(t.dir()).unwrap();
    let run = t.expect(3);
    assert!(run.stderr.starts_with("ERROR "), "{}", run.stderr);
    assert!(run.stderr.contains("install-config.yaml"), "{}", run.stderr);
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ccm-assets"))
        .args(["completion", "zsh"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before the writer writes
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
