//! Typed cloud.conf (`[Global]`, `[Networking]`, `[LoadBalancer]`, `[Metadata]`, `[Route]`) with strict checks.
//!
//! The gcfg dialect itself is `ccm_formats::gcfg`; this module maps its document onto
//! the upstream OCCM keys and defaults ([`keys`]), collects every warning and error at once
//! (`Diagnostic`), merges credentials from clouds.yaml ([`clouds`]) and prints the effective
//! configuration with secrets redacted (`render.rs`).

pub mod clouds;
pub mod keys;
pub mod live;
pub(crate) mod render;
pub(crate) mod secret;
mod typed;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use ccm_formats::gcfg::{self, Document};

pub(crate) use typed::{Config, FloatingSubnet, LbClass, LoadBalancer};
pub use typed::{Credentials, EndpointInterface, Networking, credentials};

use keys::Kind;

/// An error loading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid gcfg.
    #[error("{origin}: invalid cloud.conf syntax")]
    Syntax {
        /// Where the text came from (a path, or `secret ns/name key clouds.conf`).
        origin: String,
        /// The parse error.
        #[source]
        source: gcfg::ParseError,
    },
    /// Checks found errors (each is in `diagnostics`).
    #[error("{origin}: {} error(s): {}", errors.len(), errors.join("; "))]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// The error messages.
        errors: Vec<String>,
    },
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    /// Accepted, but probably not what was meant.
    Warning,
    /// The configuration cannot be used.
    Error,
}

/// One finding of the checks, already phrased for an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnostic {
    /// Warning or error.
    pub(crate) severity: Severity,
    /// `[Section] key: what is wrong`.
    pub(crate) message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{level}: {}", self.message)
    }
}

/// The validated raw values of known keys, keyed by (section, subsection, key).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Values {
    map: BTreeMap<(String, String, &'static str), Vec<String>>,
}

/// Lists keys, never values: a `?values` in a log line must not print a password.
impl fmt::Debug for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self.map.keys().map(|(section, sub, key)| match sub.as_str() {
            "" => format!("[{section}] {key}"),
            sub => format!("[{section} {sub:?}] {key}"),
        });
        f.debug_set().entries(keys).finish()
    }
}

impl Values {
    fn slot(section: &str, sub: Option<&str>, key: &'static str) -> (String, String, &'static str) {
        (section.to_owned(), sub.unwrap_or_default().to_owned(), key)
    }

    /// The last value of a key, if set.
    pub fn get(&self, section: &str, key: &'static str) -> Option<&str> {
        self.map.get(&Self::slot(section, None, key)).and_then(|v| v.last()).map(String::as_str)
    }

    /// Every value of a repeatable key.
    pub fn all(&self, section: &str, key: &'static str) -> &[String] {
        self.map.get(&Self::slot(section, None, key)).map(Vec::as_slice).unwrap_or_default()
    }

    /// The value of a `[LoadBalancerClass "name"]` key.
    pub fn class_get(&self, class: &str, key: &'static str) -> Option<&str> {
        let slot = Self::slot("LoadBalancerClass", Some(class), key);
        self.map.get(&slot).and_then(|v| v.last()).map(String::as_str)
    }

    /// The values of `section` alone (`[Global]`: everything the credentials are made of, once
    /// clouds.yaml and a Secret are merged in): a change elsewhere is no new login.
    pub(crate) fn section(&self, section: &str) -> Values {
        let map = self.map.iter().filter(|((s, _, _), _)| s == section);
        Values { map: map.map(|(k, v)| (k.clone(), v.clone())).collect() }
    }

    /// The `[LoadBalancerClass]` names.
    pub(crate) fn classes(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .map
            .keys()
            .filter(|(section, _, _)| section == "LoadBalancerClass")
            .map(|(_, sub, _)| sub.clone())
            .collect();
        names.dedup();
        names
    }

    /// True when the key has a value (a bare key counts).
    pub(crate) fn is_set(&self, section: &str, key: &'static str) -> bool {
        self.get(section, key).is_some_and(|v| !v.is_empty())
    }

    /// Sets a key (replacing earlier values).
    pub(crate) fn set(&mut self, section: &str, key: &'static str, value: impl Into<String>) {
        self.map.insert(Self::slot(section, None, key), vec![value.into()]);
    }

    /// Sets a key only when it is empty: cloud.conf values win over clouds.yaml and Secrets.
    pub(crate) fn set_if_empty(&mut self, section: &str, key: &'static str, value: Option<&str>) {
        if let Some(value) = value.filter(|v| !v.is_empty())
            && !self.is_set(section, key)
        {
            self.set(section, key, value);
        }
    }
}

/// A checked cloud.conf: the values, the typed view and every finding.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The raw values of known keys, after merges.
    pub values: Values,
    /// Warnings and errors, in file order.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// The error messages only.
    pub fn errors(&self) -> Vec<String> {
        let errors = self.diagnostics.iter().filter(|d| d.severity == Severity::Error);
        errors.map(|d| d.message.clone()).collect()
    }

    /// The typed configuration, or every error at once.
    pub(crate) fn config(&self, origin: &str) -> Result<Config> {
        let errors = self.errors();
        if !errors.is_empty() {
            return Err(Error::Invalid { origin: origin.to_owned(), errors });
        }
        Ok(Config::from_values(&self.values))
    }
}

/// Parses and checks cloud.conf text. Syntax errors fail; everything else is a diagnostic.
pub fn check_text(text: &str, origin: &str) -> Result<Checked> {
    let document =
        gcfg::parse(text).map_err(|source| Error::Syntax { origin: origin.to_owned(), source })?;
    Ok(check(&document))
}

/// Checks a parsed document against the key table.
pub(crate) fn check(document: &Document) -> Checked {
    let mut values = Values::default();
    let mut diagnostics = Vec::new();
    for section in &document.sections {
        let canonical = if section.subsection.is_some() {
            (section.name.eq_ignore_ascii_case("LoadBalancerClass")).then_some("LoadBalancerClass")
        } else {
            keys::SECTIONS.iter().copied().find(|name| section.name.eq_ignore_ascii_case(name))
        };
        let Some(canonical) = canonical else {
            let name = match &section.subsection {
                Some(sub) => format!("{} {:?}", section.name, sub),
                None => section.name.clone(),
            };
            diagnostics.push(warning(format!(
                "line {}: unknown section [{name}] is ignored",
                section.line
            )));
            continue;
        };
        for entry in &section.entries {
            let Some(key) = keys::find(canonical, &entry.key) else {
                let hint = keys::closest(canonical, &entry.key)
                    .map(|near| format!(" (did you mean {near:?}?)"))
                    .unwrap_or_default();
                diagnostics.push(warning(format!(
                    "line {}: [{canonical}] {}: unknown key is ignored{hint}",
                    entry.line, entry.key
                )));
                continue;
            };
            let slot = Values::slot(canonical, section.subsection.as_deref(), key.name);
            let raw = entry.value.as_deref();
            if raw.is_none() && key.kind == Kind::List {
                // gcfg 1.2.3 (`set`): a blank value resets a multi-valued variable to empty.
                values.map.remove(&slot);
                continue;
            }
            let value = match normalize(key.kind, raw) {
                Ok(value) => value,
                Err(problem) => {
                    let shown = match raw {
                        None => "blank value (no \"=\")".to_owned(),
                        Some(_) if key.secret => "<redacted>".to_owned(),
                        Some(text) => format!("{text:?}"),
                    };
                    diagnostics.push(Diagnostic {
                        severity: Severity::Error,
                        message: format!(
                            "line {}: [{canonical}] {}: {shown} {problem}",
                            entry.line, key.name
                        ),
                    });
                    continue;
                }
            };
            let list = values.map.entry(slot).or_default();
            if key.kind == Kind::List {
                list.push(value);
            } else {
                *list = vec![value];
            }
        }
    }
    let mut checked = Checked { values, diagnostics };
    semantic_checks(&mut checked);
    checked
}

/// Checks that look at a key's meaning, not only its type.
pub(crate) fn semantic_checks(checked: &mut Checked) {
    let values = &checked.values;
    let mut found = Vec::new();
    if let Some(kind) = values.get("Global", "os-endpoint-type")
        && !kind.is_empty()
        && EndpointInterface::parse(kind).is_none()
    {
        found.push(error(format!(
            "[Global] os-endpoint-type: {kind:?} is not one of public, internal, admin"
        )));
    }
    if let Some(version) = values.get("LoadBalancer", "lb-version")
        && !version.is_empty()
        && version != "v2"
    {
        found.push(error(format!(
            "[LoadBalancer] lb-version: {version:?} is not supported (only v2)"
        )));
    }
    if let Some(order) = values.get("Metadata", "search-order")
        && let Err(problem) = typed::search_order(order)
    {
        found.push(error(format!("[Metadata] search-order: {order:?} {problem}")));
    }
    if let Some(order) = values.get("Networking", "address-sort-order") {
        for item in order.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if item.parse::<ipnet::IpNet>().is_err() {
                found.push(warning(format!(
                    "[Networking] address-sort-order: {item:?} is not a CIDR and is ignored"
                )));
            }
        }
    }
    // The service controller's rule for it (annotations.rs `selector_of`), checked here so that
    // a running CCM never takes a config it would refuse at start.
    if let Some(selector) = values.get("LoadBalancer", "node-selector") {
        for pair in selector.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if pair.split_once('=').is_none_or(|(key, _)| key.trim().is_empty()) {
                found.push(error(format!(
                    "[LoadBalancer] node-selector: {pair:?} is not key=value"
                )));
            }
        }
    }
    let name = values.is_set("Global", "secret-name");
    let namespace = values.is_set("Global", "secret-namespace");
    if name != namespace {
        found.push(error(
            "[Global] secret-name and secret-namespace must be set together".to_owned(),
        ));
    }
    if values.is_set("Global", "kubeconfig-path") {
        found.push(warning(
            "[Global] kubeconfig-path: ignored; the Secret is read with --kubeconfig or the in-cluster config"
                .to_owned(),
        ));
    }
    checked.diagnostics.extend(found);
}

/// Validates one value and returns its canonical text. A blank value (a bare `key`, no `=`)
/// follows gcfg 1.2.3: `true` for a bool, "blank value not supported for type" (fatal) for
/// every other scalar; the caller resets a list.
fn normalize(kind: Kind, raw: Option<&str>) -> std::result::Result<String, String> {
    let Some(text) = raw else {
        return match kind {
            Kind::Bool => Ok("true".to_owned()),
            Kind::Text | Kind::List => Err("is not supported for a text key".to_owned()),
            Kind::TextBool => Err("is not supported: upstream reads this key as text".to_owned()),
            Kind::Duration => Err("is not supported for a duration key".to_owned()),
            Kind::Uint | Kind::Int => Err("is not supported for an integer key".to_owned()),
        };
    };
    match kind {
        Kind::Text | Kind::List => Ok(text.to_owned()),
        Kind::Bool => parse_bool(text)
            .map(|b| b.to_string())
            .ok_or_else(|| "is not a boolean (true or false)".to_owned()),
        // Upstream compares the text with "true": anything else silently verifies. Only the
        // two words are accepted, so that `yes` or `1` cannot look like it turned TLS off.
        Kind::TextBool => match text {
            "true" | "false" => Ok(text.to_owned()),
            _ => Err("is neither true nor false (upstream reads this key as text and turns \
                      verification off only for \"true\")"
                .to_owned()),
        },
        Kind::Duration => crate::duration::parse(text)
            .map(|_| text.to_owned())
            .map_err(|e| format!("is not a duration: {e}")),
        Kind::Uint => text
            .parse::<u32>()
            .map(|n| n.to_string())
            .map_err(|_| "is not a non-negative integer".to_owned()),
        Kind::Int => {
            text.parse::<i64>().map(|n| n.to_string()).map_err(|_| "is not an integer".to_owned())
        }
    }
}

/// gcfg's boolean words, case-insensitive; an empty value (`key =`) is none of them, as in gcfg.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn warning(message: String) -> Diagnostic {
    Diagnostic { severity: Severity::Warning, message }
}

fn error(message: String) -> Diagnostic {
    Diagnostic { severity: Severity::Error, message }
}

/// Reads, checks and merges a cloud.conf file: gcfg syntax, key table, `use-clouds`
/// (with `search` as the clouds.yaml search path), and credential completeness.
pub(crate) fn load(path: &std::path::Path, search: &[std::path::PathBuf]) -> Result<Checked> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Read { path: origin.clone(), source })?;
    let mut checked = check_text(&text, &origin)?;
    clouds::apply_use_clouds(&mut checked, search);
    check_credentials(&mut checked);
    Ok(checked)
}

/// Without a Secret, cloud.conf (plus clouds.yaml) must say where and how to authenticate.
pub(crate) fn check_credentials(checked: &mut Checked) {
    let v = &checked.values;
    if v.is_set("Global", "secret-name") {
        return;
    }
    let mut found = Vec::new();
    if !v.is_set("Global", "auth-url") {
        found.push(error(
            "[Global] auth-url: not set (and no secret-name to read credentials from)".to_owned(),
        ));
    }
    let any = ["password", "token", "application-credential-secret"]
        .iter()
        .any(|k| v.is_set("Global", k));
    if !any {
        found.push(error(
            "[Global]: no password, token or application-credential-secret (and no secret-name)"
                .to_owned(),
        ));
    }
    checked.diagnostics.extend(found);
}
