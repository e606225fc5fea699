//! install-config.yaml: load, parse, apply the installer's defaults, validate.
//!
//! ```text
//! text ─ parse ─▶ InstallConfig ─ defaults ─▶ normalized ─ validate ─▶ Loaded { config, warnings }
//!          │                                                  │
//!          ├─ YAML error ─▶ Error::Syntax (file:line:column)   └─ Error::Invalid (every error, sorted)
//!          └─ unknown keys ─▶ warnings ("did you mean …?")
//! ```
//! The only environment-derived input is [`Defaults`]; the CLI resolves it. clouds.yaml lookup
//! (which does I/O) lives in [`clouds`].

pub mod clouds;
mod defaults;
mod on_premises;
mod parse;
mod public_clouds;
mod scalar;
mod schema;
mod suggest;
mod types;
mod validate;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use types::*;
pub use validate::{BadValue, ErrorKind, FieldError};

/// Defaults that come from the environment, resolved by the CLI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Defaults {
    /// `$OS_CLOUD`: the OpenStack cloud when `platform.openstack.cloud` is unset.
    pub os_cloud: Option<String>,
}

/// A parsed, defaulted and valid install-config, with warnings about unknown fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The normalized config: defaults applied, `pullSecret` dropped.
    pub config: InstallConfig,
    /// One line per unknown field: `<file>: unknown field "<path>" (did you mean "<name>"?)`.
    pub warnings: Vec<String>,
}

/// An error loading an install-config.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The YAML is malformed, or a value has the wrong type (`replicas: three`).
    #[error("{}", located(file, *line, *column, message))]
    Syntax {
        /// The file name as given.
        file: String,
        /// 1-based line (0 when unknown).
        line: u64,
        /// 1-based column (0 when unknown).
        column: u64,
        /// The parser's message.
        message: String,
    },
    /// Fields failed validation. Displayed as a count line, then one `<file>: <error>` line per
    /// error, then the unknown-field warnings, which often explain the errors (a typo).
    #[error("{}", invalid(file, errors, warnings))]
    Invalid {
        /// The file name as given.
        file: String,
        /// Every error, sorted by field path.
        errors: Vec<FieldError>,
        /// The unknown-field warnings of the same file.
        warnings: Vec<String>,
    },
}

impl Error {
    /// Whether the input is at fault (missing file, bad YAML, invalid fields) rather than the
    /// machine; the CLI maps it to exit code 3.
    pub fn is_invalid_input(&self) -> bool {
        match self {
            Self::Read { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
            ),
            Self::Syntax { .. } | Self::Invalid { .. } => true,
        }
    }
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn located(file: &str, line: u64, column: u64, message: &str) -> String {
    if line == 0 {
        format!("{file}: {message}")
    } else {
        format!("{file}:{line}:{column}: {message}")
    }
}

fn invalid(file: &str, errors: &[FieldError], warnings: &[String]) -> String {
    let plural = if errors.len() == 1 { "" } else { "s" };
    let mut out = format!("{file}: {} invalid field{plural}", errors.len());
    for error in errors {
        let _ = write!(out, "\n{file}: {error}");
    }
    for warning in warnings {
        let _ = write!(out, "\n{warning}");
    }
    out
}

/// Parses `text` (named `file` in messages), collects unknown-field warnings, applies the
/// installer's defaults and validates. Pure: no I/O, no environment.
pub fn parse(text: &str, file: &str, defaults: &Defaults) -> Result<Loaded> {
    let (config, unknown) =
        parse::from_yaml::<Option<InstallConfig>>(text).map_err(|err| Error::Syntax {
            file: file.to_owned(),
            line: err.line,
            column: err.column,
            message: err.message,
        })?;
    // The schema (a walk of the whole model) only serves suggestions for unknown fields.
    let warnings: Vec<String> = if unknown.is_empty() {
        Vec::new()
    } else {
        let schema = schema::known_fields::<InstallConfig>();
        unknown.iter().map(|field| field.warning(file, &schema)).collect()
    };
    // An empty file is an empty config: validation then names every required field.
    let mut config = config.unwrap_or_default();
    defaults::apply(&mut config, defaults);
    let errors = validate::validate(&config);
    if !errors.is_empty() {
        return Err(Error::Invalid { file: file.to_owned(), errors, warnings });
    }
    Ok(Loaded { config, warnings })
}

/// Reads `path` and [`parse`]s it, naming it in messages as the path was given.
pub fn load(path: &Path, defaults: &Defaults) -> Result<Loaded> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Read { path: path.to_owned(), source })?;
    parse(&text, &path.display().to_string(), defaults)
}
