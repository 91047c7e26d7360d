//! The projector's instruments, and the one place its work is counted.
//!
//! Each [`Projector`](crate::Projector) counts what it did in a [`Counters`] of its own
//! (atomics); tests and the benchmark read those counters of one replica, and the exported
//! counters (`ledgerboard_projections_total`, `ledgerboard_projection_parked_total`,
//! `ledgerboard_projection_batch_errors_total`) observe the very same atomics, summed over the
//! projectors of the process. So there is one booking, and what a test asserts is what
//! `/metrics` shows. The batch histograms are recorded directly.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use ledgerboard_core::telemetry::metrics::{Label, long, meter, rows};
use opentelemetry::metrics::{AsyncInstrument, Histogram};

/// What one batch did, counted once its transaction committed. It lives here, beside what
/// counts it, rather than in `worker` (which fills it): `worker` imports this module, and
/// this module must not import `worker` back.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub claimed: usize,
    pub applied: u64,
    pub duplicate: u64,
    pub stale: u64,
    pub failed: u64,
    pub parked: u64,
    /// `rank.top_changed` events queued with the batch (core `events/top.rs`).
    pub top_changed: u64,
}

/// What became of a projected row: the `result` label of `ledgerboard_projections_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectionResult {
    Applied,
    Duplicate,
    /// Published without a write: the projection held this version or a newer one.
    Stale,
    /// Charged an attempt and retried (or parked after the last one).
    Failed,
}

impl Label for ProjectionResult {
    const ALL: &'static [Self] = &[Self::Applied, Self::Duplicate, Self::Stale, Self::Failed];
    const KEY: &'static str = "result";
    fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Duplicate => "duplicate",
            Self::Stale => "stale",
            Self::Failed => "failed",
        }
    }
}

/// Why a batch was abandoned: the `kind` label of `ledgerboard_projection_batch_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchErrorKind {
    RedisOutage,
    Database,
    Timeout,
}

impl Label for BatchErrorKind {
    const ALL: &'static [Self] = &[Self::RedisOutage, Self::Database, Self::Timeout];
    const KEY: &'static str = "kind";
    fn as_str(self) -> &'static str {
        match self {
            Self::RedisOutage => "redis_outage",
            Self::Database => "database",
            Self::Timeout => "timeout",
        }
    }
}

/// What one projector did since it was created.
#[derive(Debug, Default)]
pub struct Counters {
    /// By [`ProjectionResult`], in the order of `ProjectionResult::ALL`.
    projections: [AtomicU64; 4],
    parked: AtomicU64,
    /// By [`BatchErrorKind`], in the order of `BatchErrorKind::ALL`.
    batch_errors: [AtomicU64; 3],
    top_changed: AtomicU64,
}

/// A copy of one projector's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub applied: u64,
    pub duplicate: u64,
    pub stale: u64,
    pub failed: u64,
    pub parked: u64,
    /// Batches abandoned because Redis was unreachable or refused writes.
    pub outages: u64,
    pub database_errors: u64,
    pub timeouts: u64,
    /// `rank.top_changed` events queued by committed batches.
    pub top_changed: u64,
}

impl Snapshot {
    /// Rows whose projection finished (they are published).
    pub fn delivered(&self) -> u64 {
        self.applied + self.duplicate + self.stale
    }

    /// Rows claimed in batches that committed: every claimed row is one of these results.
    pub fn claimed(&self) -> u64 {
        self.delivered() + self.failed
    }
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

impl Counters {
    /// A projector's counters, registered so that the exported counters include them.
    pub fn register() -> Arc<Self> {
        let counters = Arc::new(Self::default());
        // Kept for the life of the process, even after its projector stopped: an exported
        // counter must never go down, so a stopped projector's counts stay in the sum.
        registry()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(counters.clone());
        counters
    }

    pub fn snapshot(&self) -> Snapshot {
        let [applied, duplicate, stale, failed] = self.projections.each_ref().map(get);
        let [outages, database_errors, timeouts] = self.batch_errors.each_ref().map(get);
        Snapshot {
            applied,
            duplicate,
            stale,
            failed,
            parked: get(&self.parked),
            outages,
            database_errors,
            timeouts,
            top_changed: get(&self.top_changed),
        }
    }

    fn projections(&self, result: ProjectionResult) -> &AtomicU64 {
        &self.projections[result as usize]
    }

    fn batch_errors(&self, kind: BatchErrorKind) -> &AtomicU64 {
        &self.batch_errors[kind as usize]
    }

    /// Counts one committed batch: its rows by result, those it parked, and (when it claimed
    /// any) its size and duration.
    pub fn batch(&self, tally: &Tally, started: Instant) {
        if tally.claimed == 0 {
            return;
        }
        let h = histograms();
        h.batch_rows.record(tally.claimed as u64, &[]);
        h.batch_duration
            .record(started.elapsed().as_secs_f64(), &[]);
        for (result, n) in [
            (ProjectionResult::Applied, tally.applied),
            (ProjectionResult::Duplicate, tally.duplicate),
            (ProjectionResult::Stale, tally.stale),
            (ProjectionResult::Failed, tally.failed),
        ] {
            self.projections(result).fetch_add(n, Ordering::Relaxed);
        }
        self.parked.fetch_add(tally.parked, Ordering::Relaxed);
        self.top_changed
            .fetch_add(tally.top_changed, Ordering::Relaxed);
    }

    /// Counts one abandoned batch.
    pub fn batch_error(&self, kind: BatchErrorKind) {
        self.batch_errors(kind).fetch_add(1, Ordering::Relaxed);
    }
}

/// Every projector's counters this process created.
fn registry() -> &'static Mutex<Vec<Arc<Counters>>> {
    static REGISTRY: OnceLock<Mutex<Vec<Arc<Counters>>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// The sum of one counter over every projector of the process.
fn total(counter: impl Fn(&Counters) -> &AtomicU64) -> u64 {
    registry()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .map(|c| get(counter(c)))
        .sum()
}

struct Histograms {
    batch_rows: Histogram<u64>,
    batch_duration: Histogram<f64>,
}

fn histograms() -> &'static Histograms {
    static HISTOGRAMS: OnceLock<Histograms> = OnceLock::new();
    HISTOGRAMS.get_or_init(|| {
        let m = meter();
        Histograms {
            batch_rows: rows(
                &m,
                "ledgerboard.projection.batch.rows",
                "Rows claimed per non-empty batch",
            ),
            batch_duration: long(
                &m,
                "ledgerboard.projection.batch.duration",
                "Claim, apply and record of one non-empty batch",
            ),
        }
    })
}

/// Registers the projector's instruments with the global meter provider (after
/// `telemetry::init`): every labelled series is exported from then on, at 0 until something
/// happens, so that rates and alerts see a series from the start rather than from the first
/// event. Call once per process.
pub fn init() {
    let m = meter();
    histograms();
    m.u64_observable_counter("ledgerboard.projections")
        .with_description("Projected outbox rows by result")
        .with_callback(|o: &dyn AsyncInstrument<u64>| {
            for result in ProjectionResult::ALL {
                o.observe(total(|c| c.projections(*result)), &[result.key_value()]);
            }
        })
        .build();
    m.u64_observable_counter("ledgerboard.projection.parked")
        .with_description("Rows parked by this projector")
        .with_callback(|o: &dyn AsyncInstrument<u64>| o.observe(total(|c| &c.parked), &[]))
        .build();
    m.u64_observable_counter("ledgerboard.events.top_changed")
        .with_description("rank.top_changed events queued by this projector's batches")
        .with_callback(|o: &dyn AsyncInstrument<u64>| o.observe(total(|c| &c.top_changed), &[]))
        .build();
    m.u64_observable_counter("ledgerboard.projection.batch.errors")
        .with_description("Batches abandoned, by kind")
        .with_callback(|o: &dyn AsyncInstrument<u64>| {
            for kind in BatchErrorKind::ALL {
                o.observe(total(|c| c.batch_errors(*kind)), &[kind.key_value()]);
            }
        })
        .build();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_indexes_its_own_counter() {
        for (i, r) in ProjectionResult::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r:?}");
        }
        for (i, k) in BatchErrorKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
    }

    #[test]
    fn a_batch_is_counted_once_by_result() {
        let c = Counters::register();
        let tally = Tally {
            claimed: 7,
            applied: 3,
            duplicate: 1,
            stale: 1,
            failed: 2,
            parked: 1,
            top_changed: 2,
        };
        c.batch(&tally, Instant::now());
        c.batch(&Tally::default(), Instant::now());
        c.batch_error(BatchErrorKind::RedisOutage);
        c.batch_error(BatchErrorKind::Timeout);
        let s = c.snapshot();
        assert_eq!(
            s,
            Snapshot {
                applied: 3,
                duplicate: 1,
                stale: 1,
                failed: 2,
                parked: 1,
                outages: 1,
                database_errors: 0,
                timeouts: 1,
                top_changed: 2,
            }
        );
        assert_eq!((s.delivered(), s.claimed()), (5, 7));
    }
}
