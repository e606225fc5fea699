//! Reading YAML into the model: syntax errors with line and column, unknown fields collected.

use serde::de::DeserializeOwned;

use super::schema::{self, Schema};
use super::suggest;

/// A YAML syntax or type error, located when the parser knows where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// 1-based line, 0 when unknown.
    pub(crate) line: u64,
    /// 1-based column, 0 when unknown.
    pub(crate) column: u64,
    /// The parser's message, without its own location suffix.
    pub(crate) message: String,
}

/// A key the model does not know, with its full path (`platform.openstack.apiVIP`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownField {
    /// Where the key sits: `platform.openstack`, `compute[0]`, or `""` at the top.
    pub(crate) parent: String,
    /// The key itself.
    pub(crate) key: String,
}

impl UnknownField {
    /// `parent.key`.
    pub(crate) fn path(&self) -> String {
        if self.parent.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.parent, self.key)
        }
    }

    /// `<file>: unknown field "<path>" (did you mean "<known>"?)`, the suggestion taken from the
    /// fields known at the same level.
    pub(crate) fn warning(&self, file: &str, schema: &Schema) -> String {
        let known = schema.get(&schema::normalize(&self.parent)).copied().unwrap_or_default();
        match suggest::closest(&self.key, known) {
            Some(name) => {
                format!("{file}: unknown field \"{}\" (did you mean \"{name}\"?)", self.path())
            }
            None => format!("{file}: unknown field \"{}\"", self.path()),
        }
    }
}

/// Parses one YAML document into `T`, collecting every key `T` does not know.
pub(crate) fn from_yaml<T: DeserializeOwned>(
    text: &str,
) -> Result<(T, Vec<UnknownField>), SyntaxError> {
    let mut options = serde_saphyr::Options::default();
    // Snippets make multi-line messages; ours are one grep-able `file:line:column: message`.
    options.with_snippet = false;
    let mut unknown = Vec::new();
    let value = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_ignored::deserialize(de, |path| unknown.push(unknown_field(&path)))
    })
    .map_err(|err| syntax_error(&err, text))?;
    Ok((value, unknown))
}

fn unknown_field(path: &serde_ignored::Path<'_>) -> UnknownField {
    match path {
        serde_ignored::Path::Map { parent, key } => {
            UnknownField { parent: render(parent), key: key.clone() }
        }
        other => UnknownField { parent: String::new(), key: render(other) },
    }
}

/// `a.b[0].c`, skipping the `Option`/newtype layers serde_ignored records as `?`.
fn render(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", render(parent)),
        Path::Map { parent, key } => {
            let parent = render(parent);
            if parent.is_empty() { key.clone() } else { format!("{parent}.{key}") }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => render(parent),
    }
}

fn syntax_error(err: &serde_saphyr::Error, text: &str) -> SyntaxError {
    let (line, column) =
        err.location().map_or((0, 0), |location| (location.line(), location.column()));
    let mut message = err.without_snippet().to_string();
    // saphyr appends the location; we print it first, compiler-style.
    let suffix = format!(" at line {line}, column {column}");
    if let Some(stripped) = message.strip_suffix(&suffix) {
        message = stripped.to_owned();
    }
    // This hint names a Rust API; a user of the file cannot act on it.
    message = message.replace(", set DuplicateKeyPolicy in Options if acceptable", "");
    if let Some(expected) = type_hint(&message) {
        message = match key_at(text, line, column) {
            Some(key) => format!("{key}: {expected} ({message})"),
            None => format!("{expected} ({message})"),
        };
    }
    SyntaxError { line, column, message }
}

/// What a value of the wrong type should have been, in the words of the YAML file rather than
/// Rust's type names.
fn type_hint(message: &str) -> Option<&'static str> {
    Some(match message {
        "invalid u8" | "invalid u16" | "invalid u32" | "invalid u64" => {
            "expected a non-negative integer"
        }
        "invalid i8" | "invalid i16" | "invalid i32" | "invalid i64" => "expected an integer",
        "invalid boolean" => "expected true or false",
        "expected sequence start" => "expected a list",
        "expected mapping start" => "expected a mapping",
        "expected string scalar" => "expected a string",
        _ => return None,
    })
}

/// The key of a `key: value` line when `column` points into the value, so a type error can
/// name the field it is about (`replicas`).
fn key_at(text: &str, line: u64, column: u64) -> Option<String> {
    let row = text.lines().nth(usize::try_from(line.checked_sub(1)?).ok()?)?;
    let indent = row.len() - row.trim_start_matches([' ', '-']).len();
    let (key, _) = row[indent..].split_once(':')?;
    let key_end = indent + key.chars().count();
    let column = usize::try_from(column).ok()?;
    let key = key.trim().trim_matches(['"', '\'']);
    (column > key_end + 1 && !key.is_empty() && !key.contains(' ')).then(|| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::installconfig::InstallConfig;

    #[test]
    fn unknown_fields_carry_their_full_path() {
        let text = "apiVersion: v1\nfoo: 1\ncompute:\n- name: worker\n  replica: 2\nplatform:\n  openstack:\n    apiVIP: 10.0.0.5\n";
        let (_, unknown) = from_yaml::<Option<InstallConfig>>(text).unwrap();
        let paths: Vec<String> = unknown.iter().map(UnknownField::path).collect();
        assert_eq!(paths, ["foo", "compute[0].replica", "platform.openstack.apiVIP"]);
    }

    #[test]
    fn errors_are_located_without_a_suffix() {
        let err = from_yaml::<Option<InstallConfig>>("apiVersion: v1\n  bad: [\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 6));
        assert!(!err.message.contains("at line"), "{}", err.message);
        let err = from_yaml::<Option<InstallConfig>>("kind: a\nkind: b\n").unwrap_err();
        assert!(!err.message.contains("DuplicateKeyPolicy"), "{}", err.message);
    }

    #[test]
    fn type_errors_name_the_key_and_the_expected_kind() {
        let cases = [
            (
                "controlPlane:\n  replicas: three\n",
                "replicas: expected a non-negative integer (invalid u32)",
            ),
            ("fips: maybe\n", "fips: expected true or false (invalid boolean)"),
            (
                "compute:\n- name: worker\n  replicas: -1\n",
                "replicas: expected a non-negative integer (invalid u32)",
            ),
            ("metadata: [a]\n", "metadata: expected a mapping (expected mapping start)"),
            (
                "platform:\n  openstack:\n    apiVIPs:\n      foo\n",
                "expected a list (expected sequence start)",
            ),
        ];
        for (text, expected) in cases {
            let err = from_yaml::<Option<InstallConfig>>(text).unwrap_err();
            assert_eq!(err.message, expected, "{text}");
        }
    }
}
