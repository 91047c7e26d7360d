//! Counters of what this projector did, for tests and the benchmark. The same events are
//! recorded as metrics (`ledgerboard_projections_total` and others) in `worker.rs`.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Stats {
    pub batches: AtomicU64,
    pub applied: AtomicU64,
    pub duplicate: AtomicU64,
    pub stale: AtomicU64,
    pub failed: AtomicU64,
    pub parked: AtomicU64,
    pub outages: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub batches: u64,
    pub applied: u64,
    pub duplicate: u64,
    pub stale: u64,
    pub failed: u64,
    pub parked: u64,
    pub outages: u64,
}

impl StatsSnapshot {
    /// Rows whose projection finished (they are published).
    pub fn delivered(&self) -> u64 {
        self.applied + self.duplicate + self.stale
    }
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            batches: get(&self.batches),
            applied: get(&self.applied),
            duplicate: get(&self.duplicate),
            stale: get(&self.stale),
            failed: get(&self.failed),
            parked: get(&self.parked),
            outages: get(&self.outages),
        }
    }
}
