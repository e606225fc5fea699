//! Field errors shaped like Kubernetes' `field.Error`: `<field.path>: <Type>: <detail>`.

use std::fmt;

/// The offending value of a field error, printed the way Go's `field.Error` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// A string, printed double-quoted with Go escaping (`"foobar"`).
    Str(String),
    /// A number, printed bare (`0`).
    Int(i64),
    /// A list of strings, printed as Go's `%#v` does (`[]string{"a", "b"}`).
    List(Vec<String>),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Str(text) => f.write_str(&go_quote(text)),
            Self::Int(number) => write!(f, "{number}"),
            Self::List(items) => {
                let quoted: Vec<String> = items.iter().map(|item| go_quote(item)).collect();
                write!(f, "[]string{{{}}}", quoted.join(", "))
            }
        }
    }
}

impl From<&str> for BadValue {
    fn from(text: &str) -> Self {
        Self::Str(text.to_owned())
    }
}

impl From<&String> for BadValue {
    fn from(text: &String) -> Self {
        Self::Str(text.clone())
    }
}

impl From<i64> for BadValue {
    fn from(number: i64) -> Self {
        Self::Int(number)
    }
}

impl From<&[String]> for BadValue {
    fn from(items: &[String]) -> Self {
        Self::List(items.to_vec())
    }
}

/// What is wrong with a field, with the bad value where the type carries one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// `Required value`.
    Required,
    /// `Forbidden`.
    Forbidden,
    /// `Invalid value: <v>`.
    Invalid(BadValue),
    /// `Unsupported value: <v>`; the detail lists the supported values.
    NotSupported(BadValue),
    /// `Duplicate value: <v>`.
    Duplicate(BadValue),
    /// `Too many: <n>`.
    TooMany(i64),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Required => f.write_str("Required value"),
            Self::Forbidden => f.write_str("Forbidden"),
            Self::Invalid(value) => write!(f, "Invalid value: {value}"),
            Self::NotSupported(value) => write!(f, "Unsupported value: {value}"),
            Self::Duplicate(value) => write!(f, "Duplicate value: {value}"),
            Self::TooMany(count) => write!(f, "Too many: {count}"),
        }
    }
}

/// One validation failure: `<field>: <kind>: <detail>`, exactly like k8s `field.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field path (`platform.openstack.apiVIPs`, `compute[0].name`).
    pub field: String,
    /// The error type and bad value.
    pub kind: ErrorKind,
    /// Why; may be empty.
    pub detail: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

impl FieldError {
    /// `Required value: <detail>`.
    pub(crate) fn required(field: &Path, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorKind::Required, detail)
    }

    /// `Forbidden: <detail>`.
    pub(crate) fn forbidden(field: &Path, detail: impl Into<String>) -> Self {
        Self::new(field, ErrorKind::Forbidden, detail)
    }

    /// `Invalid value: <value>: <detail>`.
    pub(crate) fn invalid(
        field: &Path,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(field, ErrorKind::Invalid(value.into()), detail)
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub(crate) fn not_supported(
        field: &Path,
        value: impl Into<BadValue>,
        supported: &[&str],
    ) -> Self {
        let quoted: Vec<String> = supported.iter().map(|value| go_quote(value)).collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(field, ErrorKind::NotSupported(value.into()), detail)
    }

    /// `Duplicate value: <value>`.
    pub(crate) fn duplicate(field: &Path, value: impl Into<BadValue>) -> Self {
        Self::new(field, ErrorKind::Duplicate(value.into()), "")
    }

    /// `Too many: <count>: must have at most <max> items`.
    pub(crate) fn too_many(field: &Path, count: usize, max: usize) -> Self {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        Self::new(field, ErrorKind::TooMany(count), format!("must have at most {max} items"))
    }

    fn new(field: &Path, kind: ErrorKind, detail: impl Into<String>) -> Self {
        Self { field: field.to_string(), kind, detail: detail.into() }
    }
}

/// A field path under construction: `Path::new("platform").child("openstack").index(0)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A top-level field.
    pub(crate) fn new(name: &str) -> Self {
        Self(name.to_owned())
    }

    /// A field of this one.
    #[must_use]
    pub(crate) fn child(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    /// An element of this list.
    #[must_use]
    pub(crate) fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    /// An entry of this map, printed `[key]` without quotes, as Go's `Path.Key` does.
    #[must_use]
    pub(crate) fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Quotes like Go's `strconv.Quote`, which is what `%q` and k8s field errors use.
pub(crate) fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_control() && u32::from(c) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_like_kubernetes_field_errors() {
        let path = Path::new("platform").child("openstack").child("apiVIPs");
        let err = FieldError::invalid(&path, "foobar", "\"foobar\" is not a valid IP");
        assert_eq!(
            err.to_string(),
            r#"platform.openstack.apiVIPs: Invalid value: "foobar": "foobar" is not a valid IP"#
        );
        let err = FieldError::not_supported(&Path::new("credentialsMode"), "Mint", &["Manual"]);
        assert_eq!(
            err.to_string(),
            r#"credentialsMode: Unsupported value: "Mint": supported values: "Manual""#
        );
        let err = FieldError::duplicate(&Path::new("compute").index(1).child("name"), "worker");
        assert_eq!(err.to_string(), r#"compute[1].name: Duplicate value: "worker""#);
        let err = FieldError::too_many(&path, 3, 2);
        assert_eq!(
            err.to_string(),
            "platform.openstack.apiVIPs: Too many: 3: must have at most 2 items"
        );
        let err = FieldError::required(&Path::new("apiVersion"), "install-config version required");
        assert_eq!(err.to_string(), "apiVersion: Required value: install-config version required");
        let list = BadValue::List(vec!["a".into(), "b".into()]);
        assert_eq!(list.to_string(), r#"[]string{"a", "b"}"#);
    }

    #[test]
    fn quoting_matches_go() {
        assert_eq!(go_quote("a\"b\\c\nd\te"), r#""a\"b\\c\nd\te""#);
        assert_eq!(go_quote("\u{1}é"), "\"\\x01é\"");
    }
}
