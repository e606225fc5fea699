//! The one YAML writer for every manifest: sorted keys, two-space indent, no folding.
//!
//! Values go through `serde_json::Value` first, so map keys come out sorted exactly as the
//! installer's sigs.k8s.io/yaml and `kubectl -o yaml` write them. serde-saphyr quotes YAML 1.1
//! spellings (`yes`, `on`, `1:20`) so Kubernetes' YAML 1.1 reader keeps them strings; multi-line
//! strings become literal blocks; long single lines stay on one line (no `>-` folding).

use serde::Serialize;

/// An error turning a value into YAML.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The value could not be represented as JSON (a map with non-string keys, say).
    #[error("could not convert the value to a JSON tree")]
    ToValue(#[source] serde_json::Error),
    /// The YAML emitter failed.
    #[error("could not write YAML")]
    Emit(#[source] serde_saphyr::ser::Error),
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Serializes `value` as one YAML document with sorted keys and a trailing newline.
pub fn to_yaml<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    let tree = serde_json::to_value(value).map_err(Error::ToValue)?;
    let mut options = serde_saphyr::SerializerOptions::default();
    options.min_fold_chars = usize::MAX;
    options.folded_wrap_chars = usize::MAX;
    let mut text = serde_saphyr::to_string_with_options(&tree, options).map_err(Error::Emit)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(without_blank_indentation(text, &tree))
}

/// serde-saphyr indents the empty lines of a literal block (`config: |` with a blank line
/// between sections), leaving trailing spaces. An empty line means the same there, so they are
/// dropped, unless the value itself holds spaces-only lines, which only a re-read can tell.
fn without_blank_indentation(text: String, tree: &serde_json::Value) -> String {
    if !text.lines().any(|l| !l.is_empty() && l.trim_start_matches(' ').is_empty()) {
        return text;
    }
    let mut stripped = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if body.trim_start_matches(' ').is_empty() {
            stripped.push_str(&line[body.len()..]);
        } else {
            stripped.push_str(line);
        }
    }
    match serde_saphyr::from_str::<serde_json::Value>(&stripped) {
        Ok(back) if back == *tree => stripped,
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::to_yaml;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_indented_by_two() {
        let doc = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"namespace": "a", "name": "b"}});
        assert_eq!(
            to_yaml(&doc).unwrap(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: a\n"
        );
    }

    #[test]
    fn yaml_1_1_booleans_stay_strings() {
        let doc = json!({"data": {"enabled": "yes", "on": "on", "time": "1:20"}});
        let text = to_yaml(&doc).unwrap();
        assert!(text.contains("enabled: \"yes\""), "{text}");
        assert!(text.contains("\"on\": \"on\""), "{text}");
        assert!(text.contains("time: \"1:20\""), "{text}");
    }

    #[test]
    fn blank_lines_in_literal_blocks_carry_no_trailing_spaces() {
        let doc = json!({"data": {"config": "[Global]\na = 1\n\n[LoadBalancer]\nb = 2\n"}});
        let text = to_yaml(&doc).unwrap();
        assert_eq!(
            text,
            "data:\n  config: |\n    [Global]\n    a = 1\n\n    [LoadBalancer]\n    b = 2\n"
        );
        let spaces = json!({"data": {"config": "a\n   \nb\n"}});
        let text = to_yaml(&spaces).unwrap();
        assert_eq!(serde_saphyr::from_str::<serde_json::Value>(&text).unwrap(), spaces, "{text}");
    }

    #[test]
    fn multi_line_values_are_literal_blocks_and_long_lines_are_not_folded() {
        let long = "x".repeat(40) + " " + &"y".repeat(80);
        let doc = json!({"config": "[Global]\nregion = R\n", "long": long});
        let text = to_yaml(&doc).unwrap();
        assert!(text.contains("config: |\n  [Global]\n  region = R\n"), "{text}");
        assert!(text.contains(&format!("long: {long}\n")), "{text}");
    }
}
