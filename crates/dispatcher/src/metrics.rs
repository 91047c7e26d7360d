//! The dispatcher's instruments. docs/dispatcher.md and docs/operations.md list them as
//! Prometheus sees them:
//!
//! - `ledgerboard_webhook_deliveries_total{outcome}` and
//!   `ledgerboard_webhook_delivery_duration_seconds{outcome}`: every delivery attempt.
//! - `ledgerboard_webhook_lag_seconds`: from an event's `occurred_at` to its delivered answer.
//! - `ledgerboard_webhook_parked_events_total`: events this process parked.
//! - gauges sampled from PostgreSQL (any replica's sample is the truth, take `max()`):
//!   `ledgerboard_webhook_parked`, `ledgerboard_webhook_requeued`,
//!   `ledgerboard_webhook_circuits{state}`, `ledgerboard_webhook_gaps`,
//!   `ledgerboard_webhook_behind` (positions).

use std::sync::OnceLock;
use std::time::Duration;

use ledgerboard_core::db::Database;
use ledgerboard_core::telemetry::metrics::{
    Label, counter, gauge, latency, long, meter, zero_every,
};
use ledgerboard_core::webhook::status;
use opentelemetry::metrics::{Counter, Gauge, Histogram};
use tokio_util::sync::CancellationToken;

/// What became of one delivery attempt: the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver answered 2xx.
    Delivered,
    /// It answered something else (3xx are not followed).
    Rejected,
    /// No whole answer within `dispatcher.request_timeout_ms` (or no connection within
    /// `dispatcher.connect_timeout_ms`).
    Timeout,
    /// No connection: DNS, TCP, TLS, or the connection broke.
    Unreachable,
    /// Not sent: an `http://` URL without `dispatcher.allow_http`, or a URL that does not parse.
    Refused,
}

impl Label for Outcome {
    const ALL: &'static [Self] = &[
        Self::Delivered,
        Self::Rejected,
        Self::Timeout,
        Self::Unreachable,
        Self::Refused,
    ];
    const KEY: &'static str = "outcome";
    fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Rejected => "rejected",
            Self::Timeout => "timeout",
            Self::Unreachable => "unreachable",
            Self::Refused => "refused",
        }
    }
}

/// A subscription's circuit: the `state` label of `ledgerboard_webhook_circuits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    Closed,
    Open,
    HalfOpen,
    /// The subscription is disabled.
    Disabled,
}

impl Label for CircuitState {
    const ALL: &'static [Self] = &[Self::Closed, Self::Open, Self::HalfOpen, Self::Disabled];
    const KEY: &'static str = "state";
    fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
            Self::Disabled => "disabled",
        }
    }
}

struct Instruments {
    deliveries: Counter<u64>,
    duration: Histogram<f64>,
    lag: Histogram<f64>,
    parked_events: Counter<u64>,
    parked: Gauge<i64>,
    requeued: Gauge<i64>,
    circuits: Gauge<i64>,
    gaps: Gauge<i64>,
    behind: Gauge<i64>,
    sample_errors: Counter<u64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let m = meter();
        Instruments {
            deliveries: counter(
                &m,
                "ledgerboard.webhook.deliveries",
                "Webhook delivery attempts by outcome",
            ),
            duration: latency(
                &m,
                "ledgerboard.webhook.delivery.duration",
                "One webhook delivery attempt, connection included, by outcome",
            ),
            lag: long(
                &m,
                "ledgerboard.webhook.lag",
                "From an event's occurred_at to its delivery's 2xx answer",
            ),
            parked_events: counter(
                &m,
                "ledgerboard.webhook.parked_events",
                "Events this dispatcher parked after dispatcher.max_attempts failed attempts",
            ),
            parked: gauge(
                &m,
                "ledgerboard.webhook.parked",
                "Parked webhook deliveries (requeued ones included)",
            ),
            requeued: gauge(
                &m,
                "ledgerboard.webhook.requeued",
                "Parked webhook deliveries requeued and not delivered yet",
            ),
            circuits: gauge(
                &m,
                "ledgerboard.webhook.circuits",
                "Webhook subscriptions by circuit state (disabled ones apart)",
            ),
            gaps: gauge(
                &m,
                "ledgerboard.webhook.gaps",
                "Ranges of events retention deleted before a subscription's lane delivered them",
            ),
            behind: gauge(
                &m,
                "ledgerboard.webhook.behind",
                "Positions between the event log's last and the furthest-behind lane of an enabled subscription",
            ),
            sample_errors: counter(
                &m,
                "ledgerboard.webhook.sample.errors",
                "Samples of the webhook gauges that failed (the gauges keep their last value)",
            ),
        }
    })
}

/// Registers the instruments (after `telemetry::init`), every labelled series at 0.
pub fn init() {
    let i = instruments();
    zero_every::<Outcome>(&i.deliveries);
    i.parked_events.add(0, &[]);
    i.sample_errors.add(0, &[]);
}

/// One delivery attempt.
pub fn delivery(outcome: Outcome, took: Duration) {
    let i = instruments();
    i.deliveries.add(1, &[outcome.key_value()]);
    i.duration
        .record(took.as_secs_f64(), &[outcome.key_value()]);
}

/// A delivered event's lag, in seconds since it occurred.
pub fn lag(seconds: f64) {
    instruments().lag.record(seconds.max(0.0), &[]);
}

pub fn parked() {
    instruments().parked_events.add(1, &[]);
}

/// Samples the gauges now, then every `every`, until `cancel` fires.
pub fn spawn_gauges(
    db: Database,
    every: Duration,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            sample(&db).await;
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    })
}

async fn sample(db: &Database) {
    let i = instruments();
    match status::status(db).await {
        Ok(s) => {
            i.parked.record(s.parked, &[]);
            i.requeued.record(s.requeued, &[]);
            for (state, n) in [
                (CircuitState::Closed, s.closed),
                (CircuitState::Open, s.open),
                (CircuitState::HalfOpen, s.half_open),
                (CircuitState::Disabled, s.disabled),
            ] {
                i.circuits.record(n, &[state.key_value()]);
            }
            i.gaps.record(s.gaps, &[]);
            i.behind.record(s.behind, &[]);
        }
        Err(e) => {
            i.sample_errors.add(1, &[]);
            tracing::debug!(error = %e, "webhook gauges sample failed");
        }
    }
}
