//! Polling a probe until it answers, for the real clusters' slow steps (pods, nodes, Octavia).

use std::time::{Duration, Instant};

/// Polls `probe` every 250 ms until it gives a value, for at most `limit`; then panics naming
/// `what`, with `context()` (say, the logs of what should have answered).
pub fn until<T>(
    limit: Duration,
    what: &str,
    context: &dyn Fn() -> String,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}\n{}", context());
        std::thread::sleep(Duration::from_millis(250));
    }
}
