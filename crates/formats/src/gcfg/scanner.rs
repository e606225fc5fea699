//! The gcfg 1.2.3 scanner, ported: text to a [`Document`], accepting and rejecting what
//! gcfg does (tests/it/gcfg_oracle.rs compares the two on random documents).

use super::{Document, Entry, ParseError, Section};

/// Parses a cloud.conf exactly as gcfg 1.2.3 scans it (its `scanner/scanner.go` and
/// `read.go`): tests/it/gcfg_oracle.rs compares the two on random documents.
pub fn parse(text: &str) -> Result<Document, ParseError> {
    let mut s = Scanner { text, pos: 0, line: 1 };
    let mut doc = Document::default();
    if let Some(nul) = text.find('\0') {
        let line = text[..nul].matches('\n').count() + 1;
        return Err(ParseError { line, message: "illegal character NUL".into() });
    }
    loop {
        s.skip_blanks();
        let line = s.line;
        let err = |message: String| ParseError { line, message };
        match s.peek() {
            None => return Ok(doc),
            Some('\n') => s.bump(),
            Some(';' | '#') => s.skip_comment(),
            Some('[') => {
                s.bump();
                let section = s.header().map_err(err)?;
                doc.sections.push(Section { line, ..section });
            }
            Some(c) if is_letter(c) => {
                let key = s.ident().to_owned();
                let Some(section) = doc.sections.last_mut() else {
                    return Err(err(format!("key {key:?} is outside any [section]")));
                };
                let value = s.entry_value().map_err(|e| err(format!("{key}: {e}")))?;
                section.entries.push(Entry { key, value, line });
            }
            Some(c) => return Err(err(format!("unexpected {c:?}: expected a [section] or a key"))),
        }
    }
}

/// gcfg's identifier letters and digits (Go's `unicode.IsLetter`/`IsDigit` beyond ASCII,
/// approximated by Rust's `is_alphabetic`/`is_numeric`).
fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || (!c.is_ascii() && c.is_alphabetic())
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// A cursor over the text; `line` is the 1-based line of `pos`.
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
            self.line += usize::from(c == '\n');
        }
    }

    /// Skips gcfg's blanks: space, tab and CR.
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\r')) {
            self.bump();
        }
    }

    /// Skips to the end of the line (not past it).
    fn skip_comment(&mut self) {
        while !matches!(self.peek(), None | Some('\n')) {
            self.bump();
        }
    }

    fn ident(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(|c| is_letter(c) || is_digit(c) || c == '-') {
            self.bump();
        }
        &self.text[start..self.pos]
    }

    /// Blanks and a comment may end a line; anything else is an error.
    fn end_of_line(&mut self) -> Result<(), String> {
        self.skip_blanks();
        match self.peek() {
            None | Some('\n' | ';' | '#') => {
                self.skip_comment();
                Ok(())
            }
            Some(c) => Err(format!("unexpected {c:?} after the section header")),
        }
    }

    /// After `[`: `name]` or `name "subsection"]`, blanks allowed between the parts.
    fn header(&mut self) -> Result<Section, String> {
        self.skip_blanks();
        if !self.peek().is_some_and(is_letter) {
            return Err("expected a section name after `[`".into());
        }
        let name = self.ident().to_owned();
        self.skip_blanks();
        let mut subsection = None;
        if self.peek() == Some('"') {
            self.bump();
            let sub = self.subsection()?;
            if sub.is_empty() {
                return Err(format!("empty subsection name in [{name} \"\"]"));
            }
            subsection = Some(sub);
            self.skip_blanks();
        }
        if self.peek() != Some(']') {
            return Err(format!("section header [{name} is missing its closing `]`"));
        }
        self.bump();
        self.end_of_line()?;
        Ok(Section { name, subsection, entries: Vec::new(), line: 0 })
    }

    /// After the opening quote: the subsection name, with `\\` and `\"` escapes only.
    fn subsection(&mut self) -> Result<String, String> {
        let mut out = String::new();
        loop {
            let c = self.peek().filter(|&c| c != '\n').ok_or("unterminated subsection name")?;
            self.bump();
            match c {
                '"' => return Ok(out),
                '\\' => match self.peek() {
                    Some(e @ ('\\' | '"')) => {
                        self.bump();
                        out.push(e);
                    }
                    _ => return Err("invalid escape in subsection name".into()),
                },
                c => out.push(c),
            }
        }
    }

    /// After a key: `None` when the line ends there (a blank value), else the value after `=`.
    fn entry_value(&mut self) -> Result<Option<String>, String> {
        self.skip_blanks();
        match self.peek() {
            None | Some('\n' | ';' | '#') => {
                self.skip_comment();
                return Ok(None);
            }
            Some('=') => self.bump(),
            Some(_) => return Err("expected `=` after the key".into()),
        }
        self.skip_blanks();
        self.value().map(Some)
    }

    /// gcfg's `scanValString` then `unquote`: the value runs to a line break, `;` or `#`
    /// outside quotes; trailing blanks outside quotes are cut; every CR is dropped.
    fn value(&mut self) -> Result<String, String> {
        let start = self.pos;
        let mut end = start;
        let mut quoted = false;
        loop {
            let Some(c) = self.peek() else {
                if quoted {
                    return Err("unterminated quoted value".into());
                }
                break;
            };
            if !quoted && matches!(c, '\n' | ';' | '#') {
                break;
            }
            self.bump();
            match c {
                '\\' if quoted => match self.peek() {
                    Some('\\' | '"' | 'n' | 't') => self.bump(),
                    Some(e) => {
                        return Err(format!("unknown escape sequence `\\{}`", e.escape_debug()));
                    }
                    None => return Err("unterminated quoted value".into()),
                },
                '\\' => {
                    if self.peek() == Some('\r') {
                        self.bump();
                    }
                    if !matches!(self.peek(), Some('\n' | '"')) {
                        return Err("outside quotes a backslash must be followed by a line \
                                    break or `\"`"
                            .into());
                    }
                    self.bump();
                }
                '"' => quoted = !quoted,
                '\n' => return Err("unterminated quoted value (write a line break as \\n)".into()),
                _ => {}
            }
            if quoted || !matches!(c, ' ' | '\t' | '\r') {
                end = self.pos;
            }
        }
        Ok(unquote(&self.text[start..end]))
    }
}

/// Resolves the quotes and escapes of a value the scanner has checked; a backslash before a
/// line break (outside quotes) continues the value on the next line.
fn unquote(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars().filter(|&c| c != '\r') {
        match (escaped, c) {
            (true, 'n') => out.push('\n'),
            (true, 't') => out.push('\t'),
            (true, '\n') => {}
            (true, c) => out.push(c),
            (false, '"') => {}
            (false, '\\') => {
                escaped = true;
                continue;
            }
            (false, c) => out.push(c),
        }
        escaped = false;
    }
    out
}
