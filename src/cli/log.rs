//! Log lines in the installer's style on stderr: `INFO Wrote manifests/...`, `WARNING ...`.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::LogLevel;

/// Installs the stderr logger at `level`. Safe to call once per process.
pub(super) fn init(level: LogLevel) {
    let max = match level {
        LogLevel::Debug => Level::DEBUG,
        LogLevel::Info => Level::INFO,
        LogLevel::Warn => Level::WARN,
        LogLevel::Error => Level::ERROR,
    };
    tracing_subscriber::fmt()
        .with_max_level(max)
        .with_writer(std::io::stderr)
        .event_format(InstallerStyle)
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
