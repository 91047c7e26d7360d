//! Every metric ledgerboard exports, in one place. Names are OpenTelemetry names; the
//! Prometheus exporter turns dots into underscores, appends the unit (`_seconds`) and
//! `_total` to counters: `ledgerboard.projections` is scraped as
//! `ledgerboard_projections_total`. docs/operations.md lists them as Prometheus sees them.

use std::sync::OnceLock;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};

/// Latency buckets (seconds) for store calls and requests: sub-millisecond to ten seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Buckets for longer operations (a batch, a reconciliation pass).
const LONG_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
];
const ROW_BUCKETS: &[f64] = &[
    1.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1_000.0, 2_500.0, 5_000.0,
];

/// The drift classes, as the reconciler's report and the `class` label name them.
pub const DRIFT_CLASSES: [&str; 5] = ["missing", "stale", "ahead", "corrupt", "orphan"];
/// The outcomes of a projected row, as the `result` label names them.
pub const PROJECTION_RESULTS: [&str; 4] = ["applied", "duplicate", "stale", "failed"];

pub struct Metrics {
    // Stores, all daemons.
    /// One PostgreSQL round trip (or a projector's claim / record step), by `op`.
    pub db_call_duration: Histogram<f64>,

    // The outbox, sampled from PostgreSQL by every daemon.
    pub outbox_pending: Gauge<i64>,
    pub outbox_oldest_pending_age: Gauge<f64>,
    pub outbox_parked: Gauge<i64>,
    /// Samples that failed (the gauges then keep their last value).
    pub outbox_sample_errors: Counter<u64>,
    /// Cancel requests sent for queries whose caller gave up (`Database::bounded`).
    pub db_cancels: Counter<u64>,
    /// Requested rebuilds of boards whose projection was not whole, by `outcome` (done,
    /// failed).
    pub reconciler_rebuilds: Counter<u64>,

    // Projector.
    /// Projected rows by `result`: applied, duplicate, stale (published), or failed (charged
    /// an attempt and retried).
    pub projections: Counter<u64>,
    /// Rows this projector parked after their last allowed attempt.
    pub projection_parked: Counter<u64>,
    pub projection_batch_rows: Histogram<u64>,
    pub projection_batch_duration: Histogram<f64>,
    /// Batches abandoned, by `kind` (redis_outage, database, timeout).
    pub projection_batch_errors: Counter<u64>,

    // Reconciler.
    pub reconcile_rows_checked: Counter<u64>,
    /// Drift found, by `class`; summed over passes.
    pub reconcile_drift: Counter<u64>,
    /// Drift found by the last completed pass, by `class`.
    pub reconcile_last_pass_drift: Gauge<i64>,
    /// Members found lagging (their newest version still pending in the outbox); not drift,
    /// so a metric of its own rather than a `class` of the drift metrics.
    pub reconcile_lagging: Counter<u64>,
    /// Lagging members found by the last completed pass.
    pub reconcile_last_pass_lagging: Gauge<i64>,
    /// Members set to their source value (`action=repaired`) or removed (`action=removed`).
    pub reconcile_repairs: Counter<u64>,
    /// Passes by `outcome` (completed, aborted).
    pub reconcile_passes: Counter<u64>,
    pub reconcile_pass_duration: Histogram<f64>,
    /// Unix time (seconds) when the last pass completed.
    pub reconcile_last_success: Gauge<f64>,
    /// 1 while this replica holds the single-reconciler lock.
    pub reconciler_lock_held: Gauge<i64>,

    // API.
    /// Requests by `route`, `method` and `status`.
    pub http_request_duration: Histogram<f64>,
    /// Score commands by `outcome` (created, duplicate, refused, failed).
    pub commands: Counter<u64>,
    /// Reads answered from PostgreSQL, by `reason` (strong, lag, lag_unknown, min_version,
    /// redis_error, projection_missing, projection_broken).
    pub read_fallbacks: Counter<u64>,
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// Awaits one PostgreSQL step that does not go through `Database::bounded` (a projector's
/// claim, record or commit inside its batch) and records its latency under `op`.
pub async fn timed_db_call<T>(op: &'static str, call: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let out = call.await;
    metrics().db_call(op, started);
    out
}

/// The instruments, created from the global meter provider on first use (after
/// [`super::init`] in a daemon; no-ops in a library test that never called it).
pub fn metrics() -> &'static Metrics {
    METRICS.get_or_init(|| Metrics::new(&opentelemetry::global::meter("ledgerboard")))
}

impl Metrics {
    fn new(m: &Meter) -> Self {
        let latency = |name: &'static str, description: &'static str| {
            m.f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(LATENCY_BUCKETS.to_vec())
                .build()
        };
        let long = |name: &'static str, description: &'static str| {
            m.f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(LONG_BUCKETS.to_vec())
                .build()
        };
        let counter = |name: &'static str, description: &'static str| {
            m.u64_counter(name).with_description(description).build()
        };
        Self {
            db_call_duration: latency(
                "ledgerboard.db.call.duration",
                "PostgreSQL round trips by operation",
            ),
            outbox_pending: m
                .i64_gauge("ledgerboard.outbox.pending")
                .with_description("Outbox rows waiting to be projected")
                .build(),
            outbox_oldest_pending_age: m
                .f64_gauge("ledgerboard.outbox.oldest_pending_age")
                .with_unit("s")
                .with_description(
                    "Age of the oldest pending outbox row by the database clock (0 when none)",
                )
                .build(),
            outbox_parked: m
                .i64_gauge("ledgerboard.outbox.parked")
                .with_description("Outbox rows parked after too many failed attempts")
                .build(),
            outbox_sample_errors: counter(
                "ledgerboard.outbox.sample.errors",
                "Outbox samples that failed",
            ),
            db_cancels: counter(
                "ledgerboard.db.cancels",
                "Queries cancelled on the server because their caller gave up",
            ),
            reconciler_rebuilds: counter(
                "ledgerboard.reconciler.rebuilds",
                "Requested rebuilds of boards whose projection was not whole, by outcome",
            ),
            projections: counter("ledgerboard.projections", "Projected outbox rows by result"),
            projection_parked: counter(
                "ledgerboard.projection.parked",
                "Rows parked by this projector",
            ),
            projection_batch_rows: m
                .u64_histogram("ledgerboard.projection.batch.rows")
                .with_description("Rows claimed per non-empty batch")
                .with_boundaries(ROW_BUCKETS.to_vec())
                .build(),
            projection_batch_duration: long(
                "ledgerboard.projection.batch.duration",
                "Claim, apply and record of one non-empty batch",
            ),
            projection_batch_errors: counter(
                "ledgerboard.projection.batch.errors",
                "Batches abandoned, by kind",
            ),
            reconcile_rows_checked: counter(
                "ledgerboard.reconcile.rows.checked",
                "Source rows compared with the projection",
            ),
            reconcile_drift: counter(
                "ledgerboard.reconcile.drift",
                "Drift found, by class, over all passes",
            ),
            reconcile_last_pass_drift: m
                .i64_gauge("ledgerboard.reconcile.last_pass.drift")
                .with_description("Drift found by the last completed pass, by class")
                .build(),
            reconcile_lagging: counter(
                "ledgerboard.reconcile.lagging",
                "Members whose newest version was still pending in the outbox, over all passes",
            ),
            reconcile_last_pass_lagging: m
                .i64_gauge("ledgerboard.reconcile.last_pass.lagging")
                .with_description(
                    "Members whose newest version was still pending in the outbox, last completed pass",
                )
                .build(),
            reconcile_repairs: counter(
                "ledgerboard.reconcile.repairs",
                "Members repaired or removed, by action",
            ),
            reconcile_passes: counter(
                "ledgerboard.reconcile.passes",
                "Reconciliation passes by outcome",
            ),
            reconcile_pass_duration: long(
                "ledgerboard.reconcile.pass.duration",
                "Duration of one reconciliation pass",
            ),
            reconcile_last_success: m
                .f64_gauge("ledgerboard.reconcile.last_success")
                .with_unit("s")
                .with_description("Unix time at which the last completed pass ended")
                .build(),
            reconciler_lock_held: m
                .i64_gauge("ledgerboard.reconciler.lock.held")
                .with_description("1 while this replica holds the single-reconciler lock")
                .build(),
            http_request_duration: latency(
                "ledgerboard.http.request.duration",
                "HTTP requests by route, method and status",
            ),
            commands: counter("ledgerboard.commands", "Score commands by outcome"),
            read_fallbacks: counter(
                "ledgerboard.read.fallbacks",
                "Reads answered from PostgreSQL instead of the projection, by reason",
            ),
        }
    }

    /// Records one PostgreSQL call.
    pub fn db_call(&self, op: &'static str, started: Instant) {
        self.db_call_duration
            .record(started.elapsed().as_secs_f64(), &[KeyValue::new("op", op)]);
    }

    /// Puts every labelled series of the projector at 0, so that rates and alerts see a
    /// series from the start rather than from the first event.
    pub fn init_projector_series(&self) {
        for result in PROJECTION_RESULTS {
            self.projections.add(0, &[KeyValue::new("result", result)]);
        }
        self.projection_parked.add(0, &[]);
        for kind in ["redis_outage", "database", "timeout"] {
            self.projection_batch_errors
                .add(0, &[KeyValue::new("kind", kind)]);
        }
    }

    /// As [`Self::init_projector_series`], for the reconciler.
    pub fn init_reconciler_series(&self) {
        self.reconcile_rows_checked.add(0, &[]);
        for class in DRIFT_CLASSES {
            self.reconcile_drift
                .add(0, &[KeyValue::new("class", class)]);
        }
        self.reconcile_lagging.add(0, &[]);
        for action in ["repaired", "removed"] {
            self.reconcile_repairs
                .add(0, &[KeyValue::new("action", action)]);
        }
        for outcome in ["completed", "aborted"] {
            self.reconcile_passes
                .add(0, &[KeyValue::new("outcome", outcome)]);
        }
        self.reconciler_lock_held.record(0, &[]);
        for outcome in ["done", "failed"] {
            self.reconciler_rebuilds
                .add(0, &[KeyValue::new("outcome", outcome)]);
        }
    }

    /// As [`Self::init_projector_series`], for the api.
    pub fn init_api_series(&self) {
        for outcome in ["created", "duplicate", "refused", "failed"] {
            self.commands.add(0, &[KeyValue::new("outcome", outcome)]);
        }
        for reason in [
            "strong",
            "lag",
            "lag_unknown",
            "min_version",
            "redis_error",
            "projection_missing",
            "projection_broken",
        ] {
            self.read_fallbacks
                .add(0, &[KeyValue::new("reason", reason)]);
        }
    }
}
