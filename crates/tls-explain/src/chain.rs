//! An error and its causes on one line, each said once.

/// An error and its causes on one line, each said once. A cause that its error's message
/// already ends with is skipped: kube-rs's errors (and rustls's, hyper's) print their cause
/// *and* return it as `source()` (kube-rs#515), which read `a: b: a: b` (see: issue 36).
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if text != said && !text.ends_with(&format!(": {said}")) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}
