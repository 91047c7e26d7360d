//! The reconciler's instruments, with its enums as labels. docs/reconciler.md and
//! docs/operations.md list them as Prometheus sees them.

use std::sync::OnceLock;

use ledgerboard_core::telemetry::metrics::{Label, counter, gauge, long, meter, zero_every};
use opentelemetry::metrics::{Counter, Gauge, Histogram};

use crate::classify::Classification;

/// What a repair did to a member: the `action` label of `ledgerboard_reconcile_repairs_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairAction {
    /// Set to its source value.
    Repaired,
    /// Removed (an orphan).
    Removed,
}

impl Label for RepairAction {
    const ALL: &'static [Self] = &[Self::Repaired, Self::Removed];
    const KEY: &'static str = "action";
    fn as_str(self) -> &'static str {
        match self {
            Self::Repaired => "repaired",
            Self::Removed => "removed",
        }
    }
}

/// How a pass ended: the `outcome` label of `ledgerboard_reconcile_passes_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassOutcome {
    Completed,
    Aborted,
}

impl Label for PassOutcome {
    const ALL: &'static [Self] = &[Self::Completed, Self::Aborted];
    const KEY: &'static str = "outcome";
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Aborted => "aborted",
        }
    }
}

/// How a requested rebuild ended: the `outcome` label of
/// `ledgerboard_reconciler_rebuilds_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebuildOutcome {
    Done,
    Failed,
}

impl Label for RebuildOutcome {
    const ALL: &'static [Self] = &[Self::Done, Self::Failed];
    const KEY: &'static str = "outcome";
    fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }
}

pub struct Metrics {
    pub rows_checked: Counter<u64>,
    /// Drift found, by `class`; summed over passes.
    pub drift: Counter<u64>,
    /// Drift found by the last completed pass, by `class`.
    pub last_pass_drift: Gauge<i64>,
    /// Members found lagging (their newest version still pending in the outbox); not drift,
    /// so a metric of its own rather than a `class` of the drift metrics.
    pub lagging: Counter<u64>,
    /// Lagging members found by the last completed pass.
    pub last_pass_lagging: Gauge<i64>,
    /// Members set to their source value or removed, by [`RepairAction`].
    pub repairs: Counter<u64>,
    /// Passes by [`PassOutcome`].
    pub passes: Counter<u64>,
    pub pass_duration: Histogram<f64>,
    /// Unix time (seconds) when the last pass completed.
    pub last_success: Gauge<f64>,
    /// 1 while this replica holds the single-reconciler lock.
    pub lock_held: Gauge<i64>,
    /// Requested rebuilds of boards whose projection was not whole, by [`RebuildOutcome`].
    pub rebuilds: Counter<u64>,
    /// Held scores waiting for review (issue 38), counted after each whole pass.
    pub reviews_pending: Gauge<i64>,
}

/// The instruments, created from the global meter provider on first use (after
/// `telemetry::init` in the daemon; no-ops in a test that never called it).
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let m = meter();
        Metrics {
            rows_checked: counter(
                &m,
                "ledgerboard.reconcile.rows.checked",
                "Source rows compared with the projection",
            ),
            drift: counter(
                &m,
                "ledgerboard.reconcile.drift",
                "Drift found, by class, over all passes",
            ),
            reviews_pending: gauge(
                &m,
                "ledgerboard.reviews.pending",
                "Held scores waiting for review (board review rules), after the last whole pass",
            ),
            last_pass_drift: gauge(
                &m,
                "ledgerboard.reconcile.last_pass.drift",
                "Drift found by the last completed pass, by class",
            ),
            lagging: counter(
                &m,
                "ledgerboard.reconcile.lagging",
                "Members whose newest version was still pending in the outbox, over all passes",
            ),
            last_pass_lagging: gauge(
                &m,
                "ledgerboard.reconcile.last_pass.lagging",
                "Members whose newest version was still pending in the outbox, last completed pass",
            ),
            repairs: counter(
                &m,
                "ledgerboard.reconcile.repairs",
                "Members repaired or removed, by action",
            ),
            passes: counter(
                &m,
                "ledgerboard.reconcile.passes",
                "Reconciliation passes by outcome",
            ),
            pass_duration: long(
                &m,
                "ledgerboard.reconcile.pass.duration",
                "Duration of one reconciliation pass",
            ),
            last_success: m
                .f64_gauge("ledgerboard.reconcile.last_success")
                .with_unit("s")
                .with_description("Unix time at which the last completed pass ended")
                .build(),
            lock_held: gauge(
                &m,
                "ledgerboard.reconciler.lock.held",
                "1 while this replica holds the single-reconciler lock",
            ),
            rebuilds: counter(
                &m,
                "ledgerboard.reconciler.rebuilds",
                "Requested rebuilds of boards whose projection was not whole, by outcome",
            ),
        }
    })
}

/// Puts every labelled series of the reconciler at 0, so that rates and alerts see a series
/// from the start rather than from the first event.
pub fn init_series() {
    let m = metrics();
    m.rows_checked.add(0, &[]);
    zero_every::<Classification>(&m.drift);
    m.lagging.add(0, &[]);
    zero_every::<RepairAction>(&m.repairs);
    zero_every::<PassOutcome>(&m.passes);
    m.lock_held.record(0, &[]);
    zero_every::<RebuildOutcome>(&m.rebuilds);
}
