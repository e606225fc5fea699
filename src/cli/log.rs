//! Log lines in the installer's style on stderr: `INFO Wrote manifests/...`, `WARNING ...`.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

use super::LogLevel;

/// Installs the stderr logger at `level`. Safe to call once per process.
pub(super) fn init(level: LogLevel) {
    let max = match level {
        LogLevel::Debug => Level::DEBUG,
        LogLevel::Info => Level::INFO,
        LogLevel::Warn => Level::WARN,
        LogLevel::Error => Level::ERROR,
    };
    // Our own lines at `level`; other crates' only when they warn (less when asked), and
    // never the HTTP tracing layer's per-request lines, nor kube-client's note that a watch
    // stream ended (the operator retries both and reports what lasts, in its own words).
    let others = LevelFilter::from_level(max).min(LevelFilter::WARN);
    let targets = Targets::new()
        .with_default(others)
        .with_target("ccm_assets", max)
        .with_target("kube_support", max)
        .with_target("tower_http", LevelFilter::OFF)
        .with_target("kube_client", others.min(LevelFilter::ERROR));
    tracing_subscriber::fmt()
        .with_max_level(max)
        .with_writer(std::io::stderr)
        .event_format(InstallerStyle)
        .finish()
        .with(targets)
        .init();
}

/// `LEVEL message key=value`, no timestamps, no targets.
struct InstallerStyle;

impl<S, N> FormatEvent<S, N> for InstallerStyle
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "ERROR",
            Level::WARN => "WARNING",
            Level::INFO => "INFO",
            Level::DEBUG => "DEBUG",
            Level::TRACE => "TRACE",
        };
        write!(writer, "{level} ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
