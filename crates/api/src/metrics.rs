//! The api's instruments, with its enums as labels. docs/operations.md lists them as
//! Prometheus sees them.

use std::sync::OnceLock;

use ledgerboard_core::telemetry::metrics::{Label, counter, latency, meter, zero_every};
use opentelemetry::metrics::{Counter, Histogram};

use crate::freshness::Reason;

/// The `reason` label of `ledgerboard_read_fallbacks_total`.
impl Label for Reason {
    const ALL: &'static [Self] = &Reason::ALL;
    const KEY: &'static str = "reason";
    fn as_str(self) -> &'static str {
        self.label()
    }
}

/// What became of a score command: the `outcome` label of `ledgerboard_commands_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandResult {
    Created,
    Duplicate,
    /// Refused with a 4xx.
    Refused,
    /// Failed with a 5xx.
    Failed,
}

impl Label for CommandResult {
    const ALL: &'static [Self] = &[Self::Created, Self::Duplicate, Self::Refused, Self::Failed];
    const KEY: &'static str = "outcome";
    fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Duplicate => "duplicate",
            Self::Refused => "refused",
            Self::Failed => "failed",
        }
    }
}

/// Why the server closed a connection itself: the `reason` label of
/// `ledgerboard_http_connections_closed_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionClosed {
    /// Over `api.max_connections_per_client`: closed as soon as accepted.
    PerClientCap,
    /// The client took no byte of its response for `api.write_timeout_ms`.
    WriteTimeout,
}

impl Label for ConnectionClosed {
    const ALL: &'static [Self] = &[Self::PerClientCap, Self::WriteTimeout];
    const KEY: &'static str = "reason";
    fn as_str(self) -> &'static str {
        match self {
            Self::PerClientCap => "per_client_cap",
            Self::WriteTimeout => "write_timeout",
        }
    }
}

pub struct Metrics {
    /// Requests by `route`, `method` and `status`.
    pub http_request_duration: Histogram<f64>,
    /// Score commands by [`CommandResult`].
    pub commands: Counter<u64>,
    /// Reads answered from PostgreSQL, by [`Reason`].
    pub read_fallbacks: Counter<u64>,
    /// Connections the server closed itself, by [`ConnectionClosed`].
    pub connections_closed: Counter<u64>,
}

/// The instruments, created from the global meter provider on first use (after
/// `telemetry::init` in the daemon; no-ops in a test that never called it).
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let m = meter();
        Metrics {
            http_request_duration: latency(
                &m,
                "ledgerboard.http.request.duration",
                "HTTP requests by route, method and status",
            ),
            commands: counter(&m, "ledgerboard.commands", "Score commands by outcome"),
            read_fallbacks: counter(
                &m,
                "ledgerboard.read.fallbacks",
                "Reads answered from PostgreSQL instead of the projection, by reason",
            ),
            connections_closed: counter(
                &m,
                "ledgerboard.http.connections.closed",
                "Connections the api closed itself: over the per-client cap, or a client that did not read its response",
            ),
        }
    })
}

/// Puts every labelled series of the api at 0, so that rates and alerts see a series from the
/// start rather than from the first event.
pub fn init_series() {
    let m = metrics();
    zero_every::<CommandResult>(&m.commands);
    zero_every::<Reason>(&m.read_fallbacks);
    zero_every::<ConnectionClosed>(&m.connections_closed);
}
