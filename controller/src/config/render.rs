//! The effective configuration as cloud.conf text, every secret replaced by `<redacted>`.

use std::fmt::Write as _;

use ccm_formats::gcfg::quote;

use super::Values;
use super::keys::{self, Kind};

/// Text shown instead of a secret value.
pub(crate) const REDACTED: &str = "<redacted>";

/// Every set key and every key with a default, section by section, in table order.
pub(crate) fn effective(values: &Values) -> String {
    let mut out = String::new();
    for section in keys::SECTIONS {
        let mut body = String::new();
        for key in keys::KEYS.iter().filter(|k| k.section == *section) {
            let set: Vec<String> = match key.kind {
                Kind::List => values.all(section, key.name).to_vec(),
                _ => values
                    .get(section, key.name)
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
                    .into_iter()
                    .collect(),
            };
            let shown: Vec<String> = if set.is_empty() {
                key.default.map(str::to_owned).into_iter().collect()
            } else {
                set
            };
            for value in shown {
                let value =
                    if key.secret { REDACTED.to_owned() } else { quote(&value).into_owned() };
                let _ = writeln!(body, "{} = {value}", key.name);
            }
        }
        if !body.is_empty() {
            let _ = writeln!(out, "[{section}]\n{body}");
        }
    }
    for class in values.classes() {
        let _ = writeln!(out, "[LoadBalancerClass {}]", quote_subsection(&class));
        for key in keys::LB_CLASS {
            if let Some(value) = values.class_get(&class, key.name).filter(|v| !v.is_empty()) {
                let _ = writeln!(out, "{} = {}", key.name, quote(value));
            }
        }
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn quote_subsection(name: &str) -> String {
    format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
}
