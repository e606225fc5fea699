//! How a failed command is reported: one `ERROR` line per line of the error and of each of its
//! causes, each said once, and the exit code.

use std::process::ExitCode;

use super::{EXIT_INVALID_INPUT, commands};

/// Prints `err` on stderr and returns the exit code; a closed stdout (`ccm-assets graph | head`)
/// is not a failure, as in ripgrep.
pub(super) fn report(err: &anyhow::Error) -> ExitCode {
    if err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    // One `ERROR` line per line of each cause: multi-error messages stay one error per line.
    for line in lines(err) {
        eprintln!("ERROR {line}");
    }
    if commands::is_invalid_input(err) {
        ExitCode::from(EXIT_INVALID_INPUT)
    } else {
        ExitCode::FAILURE
    }
}

/// The lines of `err` and of its causes, each cause said once: one that the cause before it
/// already ends with is left out (kube-rs#515's pattern; `ccm_tls_explain::chain`'s rule), and
/// so are the causes of a serde-saphyr error, whose snippet shows them. See: issue 36.
fn lines(err: &anyhow::Error) -> Vec<String> {
    let mut lines = Vec::new();
    let mut last = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text != last && !last.ends_with(&format!(": {text}")) {
            lines.extend(text.lines().map(str::to_owned));
            last = text;
        }
        if cause.is::<serde_saphyr::Error>() {
            break;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use anyhow::Context as _;

    use super::*;

    /// See: issue 36. A user's edit of cloud-provider-config.yaml that is not YAML: serde-saphyr's
    /// error shows its cause in its snippet *and* returns it as `source()`, so the cause was
    /// said again after the snippet.
    #[test]
    fn a_yaml_error_is_said_once_with_its_snippet() {
        let text = "kind: ConfigMap\ndata: [1\n";
        let shape = crate::assets::cloud_provider_config::read_config_map(text).unwrap_err();
        let err = Err::<(), _>(shape).context("failed to load the edited files").unwrap_err();
        assert_eq!(
            lines(&err),
            [
                "failed to load the edited files",
                "manifests/cloud-provider-config.yaml: expected a ConfigMap with a `data.config` key",
                "error: line 2 column 7: expected mapping start",
                " --> <input>:2:7",
                "  |",
                "1 | kind: ConfigMap",
                "2 | data: [1",
                "  |       ^ expected mapping start",
            ]
        );
    }

    /// kube-rs's pattern (kube-rs#515): a message that ends with its cause's.
    #[test]
    fn a_cause_its_error_already_ends_with_is_not_said_again() {
        #[derive(Debug, thiserror::Error)]
        #[error("could not reach IAM: {0}")]
        struct Says(#[source] std::io::Error);
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let err = Err::<(), _>(Says(io)).context("no account").unwrap_err();
        assert_eq!(lines(&err), ["no account", "could not reach IAM: refused"]);
        let plain = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let err = Err::<(), _>(plain).context("could not read x").unwrap_err();
        assert_eq!(lines(&err), ["could not read x", "gone"], "a cause said elsewhere stays");
    }
}
