//! Meter helpers every crate's instruments are built with. Names are OpenTelemetry names; the Prometheus exporter
//! turns dots into underscores, appends the unit (`_seconds`) and `_total` to counters:
//! `ledgerboard.projections` is scraped as `ledgerboard_projections_total`.
//! docs/operations.md lists them as Prometheus sees them.
//!
//! Each crate owns its instruments: `db/metrics.rs`, `projection/metrics.rs`,
//! `daemon/outbox_gauges.rs`, and
//! `metrics.rs` of the projector, the reconciler and the api.

use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};

/// Latency buckets (seconds) for store calls and requests: sub-millisecond to ten seconds.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Buckets for longer operations (a batch, a reconciliation pass).
pub const LONG_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
];
/// Buckets for row counts (rows per batch).
pub const ROW_BUCKETS: &[f64] = &[
    1.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1_000.0, 2_500.0, 5_000.0,
];

/// The meter every instrument of ledgerboard comes from: the global provider's (set by
/// [`super::init`] in a daemon; a no-op in a library test that never called it).
pub fn meter() -> Meter {
    opentelemetry::global::meter("ledgerboard")
}

/// A latency histogram in seconds with [`LATENCY_BUCKETS`].
pub fn latency(m: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    m.f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(LATENCY_BUCKETS.to_vec())
        .build()
}

/// A duration histogram in seconds with [`LONG_BUCKETS`].
pub fn long(m: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    m.f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(LONG_BUCKETS.to_vec())
        .build()
}

/// A row-count histogram with [`ROW_BUCKETS`].
pub fn rows(m: &Meter, name: &'static str, description: &'static str) -> Histogram<u64> {
    m.u64_histogram(name)
        .with_description(description)
        .with_boundaries(ROW_BUCKETS.to_vec())
        .build()
}

pub fn counter(m: &Meter, name: &'static str, description: &'static str) -> Counter<u64> {
    m.u64_counter(name).with_description(description).build()
}

pub fn gauge(m: &Meter, name: &'static str, description: &'static str) -> Gauge<i64> {
    m.i64_gauge(name).with_description(description).build()
}

/// A label of a metric: one value per variant, every value known, so that each series can be
/// set to 0 at start (rates and alerts then see a series from the start rather than from the
/// first event).
pub trait Label: Copy + 'static {
    /// Every value, in the order docs/operations.md lists them.
    const ALL: &'static [Self];
    /// The label key (`result`, `kind`, …).
    const KEY: &'static str;
    fn as_str(self) -> &'static str;

    fn key_value(self) -> opentelemetry::KeyValue {
        opentelemetry::KeyValue::new(Self::KEY, self.as_str())
    }
}

/// Puts the series of every value of `L` of `counter` at 0.
pub fn zero_every<L: Label>(counter: &Counter<u64>) {
    for label in L::ALL {
        counter.add(0, &[label.key_value()]);
    }
}
