//! The env file of scripts/openstack-up.sh, named by `CCM_OPENSTACK_ENV`.
//!
//! `KEY=value` lines with no quoting and `#` comments (scripts/openstack/envfile.py writes it
//! and is its Python reader).

use std::collections::BTreeMap;
use std::ops::Index;

/// The variable naming the env file.
pub const VAR: &str = "CCM_OPENSTACK_ENV";

/// The stack's settings: URLs, cloud names, fixture IDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackEnv {
    values: BTreeMap<String, String>,
}

impl StackEnv {
    /// Reads the file `CCM_OPENSTACK_ENV` names; panics, saying how to start the stack, when
    /// it is unset or unreadable.
    pub fn load() -> StackEnv {
        StackEnv::load_from(VAR, "scripts/openstack-up.sh")
    }

    /// Reads the env file the variable `var` names (written by the script `up`); panics, saying
    /// how to start it, when unset or unreadable.
    pub fn load_from(var: &str, up: &str) -> StackEnv {
        let path = std::env::var(var).unwrap_or_else(|_| {
            panic!(
                "{var} is not set: start it with `export {var}=$({up})` (scripts/test.sh does both)"
            )
        });
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {var}={path}: {e}"));
        StackEnv::parse(&text)
    }

    /// The pairs of an env file's text.
    pub fn parse(text: &str) -> StackEnv {
        let values = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        StackEnv { values }
    }

    /// One value, if the file has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

impl Index<&str> for StackEnv {
    type Output = String;

    /// One value; panics naming the key when the file lacks it.
    fn index(&self, key: &str) -> &String {
        self.values.get(key).unwrap_or_else(|| panic!("{VAR} has no {key}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blank_lines_are_skipped_and_values_keep_their_equals_signs() {
        let env = StackEnv::parse("# header\n\nA=1\nURL=http://x/?a=b\n");
        assert_eq!((env["A"].as_str(), env["URL"].as_str()), ("1", "http://x/?a=b"));
        assert_eq!(env.get("header"), None);
    }
}
