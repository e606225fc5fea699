//! cloud.conf in the gcfg (git-config) dialect the OpenStack CCM reads: parse and write.
//!
//! One model for the generator (which writes cloud.conf) and the controller (which reads it),
//! std only. The rules are gcfg 1.2.3's (gopkg.in/gcfg.v1, what the upstream CCM parses with;
//! tests/it/gcfg_oracle.rs checks them against it): section and key names are
//! case-insensitive, `;` and `#` start a comment outside quotes, values may be double-quoted
//! (even in part: `a"b c"d` is `ab cd`), `\"`, `\\`, `\n` and `\t` are the only escapes and
//! only inside quotes (no `\b`); outside quotes a backslash may only precede `"` or a line
//! break, which continues the value on the next line. Blanks before a value and unquoted
//! blanks after it are dropped, and so is every CR in it. A key without `=` is a "blank" value
//! (true for a boolean, a reset for a list) and a repeated key is a list. The writer quotes
//! exactly the values that would otherwise read back differently, so everything written parses
//! back to the same values: `region = Region#1` unquoted would be read as `Region`.

use std::borrow::Cow;
use std::fmt;

mod scanner;

pub use scanner::parse;

/// A parse error, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A whole cloud.conf: sections in file order (a repeated header is a separate entry, as in
/// the file; lookups see them as one section, as gcfg does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// The sections, in order.
    pub sections: Vec<Section>,
}

/// `[name]` or `[name "subsection"]` and its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The name as written (`Global`); compared case-insensitively.
    pub name: String,
    /// The quoted subsection (`LoadBalancerClass "foo"` → `foo`); case-sensitive.
    pub subsection: Option<String>,
    /// The entries, in order.
    pub entries: Vec<Entry>,
    /// 1-based line of the header (0 for sections built in code).
    pub line: usize,
}

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key as written; compared case-insensitively.
    pub key: String,
    /// The value with quotes and escapes resolved; `None` for a bare `key` with no `=`.
    pub value: Option<String>,
    /// 1-based line (0 for entries built in code).
    pub line: usize,
}

impl Section {
    /// An empty section built in code.
    pub fn new(name: impl Into<String>) -> Section {
        Section { name: name.into(), subsection: None, entries: Vec::new(), line: 0 }
    }

    /// True when this is `[name]` (no subsection), compared as gcfg does.
    pub fn is(&self, name: &str) -> bool {
        self.subsection.is_none() && self.name.eq_ignore_ascii_case(name)
    }

    /// Appends `key = value`.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<String>) -> Section {
        self.entries.push(Entry { key: key.to_owned(), value: Some(value.into()), line: 0 });
        self
    }
}

impl Entry {
    /// The value as text; a bare key reads as the empty string.
    pub fn text(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}

impl Document {
    /// Every section `[name]`, in order.
    pub fn sections_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Section> {
        self.sections.iter().filter(move |s| s.is(name))
    }

    /// True when at least one `[name]` header exists.
    pub fn has_section(&self, name: &str) -> bool {
        self.sections_named(name).next().is_some()
    }

    /// Every value of `key` in `[name]`, in order (a repeated key is a list).
    pub fn get_all<'a>(
        &'a self,
        section: &'a str,
        key: &'a str,
    ) -> impl Iterator<Item = &'a Entry> {
        self.sections_named(section)
            .flat_map(|s| s.entries.iter())
            .filter(move |e| e.key.eq_ignore_ascii_case(key))
    }

    /// The last value of `key` in `[section]` (a later line overrides an earlier one).
    pub fn get<'a>(&'a self, section: &str, key: &str) -> Option<&'a str> {
        let mut entries = self.sections.iter().filter(|s| s.is(section)).flat_map(|s| &s.entries);
        entries.rfind(|e| e.key.eq_ignore_ascii_case(key)).map(Entry::text)
    }

    /// Removes every `key` from `[section]`; returns the removed entries.
    pub fn remove(&mut self, section: &str, key: &str) -> Vec<Entry> {
        let mut removed = Vec::new();
        for s in self.sections.iter_mut().filter(|s| s.is(section)) {
            let (gone, kept) = std::mem::take(&mut s.entries)
                .into_iter()
                .partition(|e: &Entry| e.key.eq_ignore_ascii_case(key));
            s.entries = kept;
            removed.extend(gone);
        }
        removed
    }

    /// Removes every `[name]` section.
    pub fn remove_section(&mut self, name: &str) {
        self.sections.retain(|s| !s.is(name));
    }

    /// Sets `key` in `[section]`: replaces the last existing value in place (dropping earlier
    /// duplicates), else appends to the last `[section]`, creating it at the end if needed.
    pub fn set(&mut self, section: &str, key: &str, value: impl Into<String>) {
        let value = Some(value.into());
        if self.get_all(section, key).next().is_some() {
            let count = self.get_all(section, key).count();
            let mut seen = 0;
            for s in self.sections.iter_mut().filter(|s| s.is(section)) {
                s.entries.retain_mut(|e| {
                    if !e.key.eq_ignore_ascii_case(key) {
                        return true;
                    }
                    seen += 1;
                    if seen == count {
                        e.value = value.clone();
                    }
                    seen == count
                });
            }
            return;
        }
        let index = match self.sections.iter().rposition(|s| s.is(section)) {
            Some(i) => i,
            None => {
                self.sections.push(Section::new(section));
                self.sections.len() - 1
            }
        };
        self.sections[index].entries.push(Entry { key: key.to_owned(), value, line: 0 });
    }
}

/// Writes sections separated by one blank line, `key = value` with gcfg quoting where needed.
impl fmt::Display for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, section) in self.sections.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            match &section.subsection {
                None => writeln!(f, "[{}]", section.name)?,
                Some(sub) => {
                    let sub = sub.replace('\\', "\\\\").replace('"', "\\\"");
                    writeln!(f, "[{} \"{sub}\"]", section.name)?;
                }
            }
            for entry in &section.entries {
                match &entry.value {
                    None => writeln!(f, "{}", entry.key)?,
                    Some(value) => writeln!(f, "{} = {}", entry.key, quote(value))?,
                }
            }
        }
        Ok(())
    }
}

/// `value` as gcfg must see it: unchanged when it reads back as itself, else double-quoted with
/// `\\`, `\"`, `\n` and `\t` escapes. gcfg has no spelling for a CR (it drops every CR in a
/// value) or a NUL (it rejects the file), so a value holding one cannot be written exactly.
pub fn quote(value: &str) -> Cow<'_, str> {
    let plain = !value.is_empty()
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !value.contains(['#', ';', '"', '\\', '\n', '\r', '\t']);
    if plain { Cow::Borrowed(value) } else { Cow::Owned(quoted(value)) }
}

/// `value` double-quoted with gcfg's escapes, needed or not (the legacy clouds.conf quotes
/// every value).
pub fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
