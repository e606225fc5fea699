//! JSON as Go's `encoding/json` writes it, for the configs the installer encodes in Go.

use serde::Serialize;

/// `value` as Go's `json.Encoder` writes it with `SetIndent("", "\t")`: `"key": value`, one
/// tab per level, a trailing newline, and `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub(crate) fn go_json_indented<T: Serialize>(value: &T) -> String {
    let mut bytes = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"\t");
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
    value.serialize(&mut serializer).expect("structs of strings, numbers and bools serialize");
    let mut text = String::from_utf8(bytes).expect("serde_json writes UTF-8");
    text.push('\n');
    go_html_escape(&text)
}

/// Go's `encoding/json` HTML escaping. These characters only occur inside JSON strings, so
/// replacing them in the whole text is exact.
pub(crate) fn go_html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}
