//! The command line's view of the environment: the one place process environment variables are
//! read, and the checks of flag values.
//!
//! Precedence, highest first: command-line flags, environment (`OS_CLOUD`,
//! `OS_CLIENT_CONFIG_FILE`, `HOME`, and each cloud's credential variables), install-config.yaml,
//! built-in defaults. Assets never read the environment or flags themselves (STYLE.md d5).

use crate::assets::env::Env;

/// Reads the process environment. An empty variable counts as unset, as in openstacksdk.
pub(crate) fn env_from_process() -> std::io::Result<Env> {
    Ok(Env::from_vars(|name| std::env::var_os(name), std::env::current_dir()?))
}

/// Validates `--infra-id`: what the installer would generate, so resources get valid names.
pub(crate) fn parse_infra_id(value: &str) -> Result<String, String> {
    let ok_chars = value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let ok_ends = !value.starts_with('-') && !value.ends_with('-');
    if value.is_empty() || value.len() > 27 || !ok_chars || !ok_ends {
        return Err(format!(
            "{value:?} is not a valid infrastructure ID: use 1 to 27 lowercase letters, digits \
             and '-', starting and ending with a letter or digit"
        ));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infra_id_must_look_like_a_generated_one() {
        assert_eq!(parse_infra_id("demo-x7k2p"), Ok("demo-x7k2p".to_owned()));
        for bad in ["", "Demo-x", "-a", "a-", "a_b", &"a".repeat(28)] {
            assert!(parse_infra_id(bad).is_err(), "{bad:?} accepted");
        }
    }
}
