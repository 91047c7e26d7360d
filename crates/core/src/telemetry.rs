//! Logging set-up shared by every binary. Logs go to stderr so that stdout stays free for a
//! command's own output (JSON reports, `lbctl status`). Traces and metrics export comes with
//! the telemetry issue.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{LogFormat, LogSettings};

/// Installs the global subscriber. The filter was validated with the settings; should it
/// still fail (it cannot once validated), logging falls back to `info` rather than to nothing.
pub fn init_logging(settings: &LogSettings) {
    let filter = EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(filter);
    let result = match settings.format {
        LogFormat::Human => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_writer(std::io::stderr),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    // A second call (tests) keeps the first subscriber.
    let _ = result;
}
