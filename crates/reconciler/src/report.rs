//! What a pass found and did, per board and in total.

use ledgerboard_core::telemetry::metrics::Label;
use serde::Serialize;

use crate::classify::Classification;
use crate::metrics::{PassOutcome, RepairAction, metrics};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Source rows compared with the projection.
    pub checked: u64,
    pub missing: u64,
    pub stale: u64,
    pub ahead: u64,
    pub corrupt: u64,
    pub current: u64,
    /// Members whose newest version is still pending in the outbox (the projector has yet to
    /// write it): not drift, not repaired.
    pub lagging: u64,
    /// Members in Redis with no source row.
    pub orphan: u64,
    /// Members set to their source score and version.
    pub repaired: u64,
    /// Orphans removed.
    pub removed: u64,
    /// Repairs or removals not made because the projection moved on since it was observed
    /// (the projector wrote a newer version meanwhile).
    pub skipped: u64,
    /// Repairs or removals that Redis refused.
    pub failed: u64,
}

impl Counts {
    pub fn count(&mut self, class: Classification) {
        let slot = match class {
            Classification::Missing => &mut self.missing,
            Classification::Stale => &mut self.stale,
            Classification::Ahead => &mut self.ahead,
            Classification::Corrupt => &mut self.corrupt,
            Classification::Current => &mut self.current,
            Classification::Lagging => &mut self.lagging,
            Classification::Orphan => &mut self.orphan,
        };
        *slot += 1;
    }

    /// Rows whose projection differs from the source (orphans included), lagging ones aside:
    /// the projector is still on its way to them.
    pub fn drift(&self) -> u64 {
        self.missing + self.stale + self.ahead + self.corrupt + self.orphan
    }

    fn add(&mut self, other: &Counts) {
        self.checked += other.checked;
        self.missing += other.missing;
        self.stale += other.stale;
        self.ahead += other.ahead;
        self.corrupt += other.corrupt;
        self.current += other.current;
        self.lagging += other.lagging;
        self.orphan += other.orphan;
        self.repaired += other.repaired;
        self.removed += other.removed;
        self.skipped += other.skipped;
        self.failed += other.failed;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoardReport {
    pub board: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// Why this board could not be checked to its end (a wrong-typed key), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassReport {
    /// True when every board was walked to its end.
    pub completed: bool,
    /// Why the pass stopped early (a lost lock, an unreachable server).
    pub aborted: Option<String>,
    pub dry_run: bool,
    /// The board after which this pass began its walk: where the previous pass stopped
    /// (None: from the first board, or a pass of one board).
    pub resumed_after: Option<String>,
    /// The pass stopped at `reconciler.max_boards_per_pass` with boards left; the next pass
    /// continues with them.
    pub more: bool,
    pub totals: Counts,
    pub boards: Vec<BoardReport>,
    pub duration_ms: u64,
    pub rows_per_s: f64,
}

impl PassReport {
    pub fn new(dry_run: bool) -> Self {
        Self {
            completed: false,
            aborted: None,
            dry_run,
            resumed_after: None,
            more: false,
            totals: Counts::default(),
            boards: Vec::new(),
            duration_ms: 0,
            rows_per_s: 0.0,
        }
    }

    /// Adds a board's counts to the totals and keeps its report. A board with drift, a repair
    /// or an error gets a log line of its own; with many boards, the clean ones only count.
    pub fn add_board(&mut self, board: BoardReport) {
        let c = &board.counts;
        if c.drift() > 0 || c.repaired + c.removed + c.failed > 0 || board.error.is_some() {
            tracing::info!(
                board = board.board,
                checked = c.checked,
                missing = c.missing,
                stale = c.stale,
                ahead = c.ahead,
                corrupt = c.corrupt,
                lagging = c.lagging,
                orphan = c.orphan,
                repaired = c.repaired,
                removed = c.removed,
                skipped = c.skipped,
                failed = c.failed,
                error = board.error.as_deref().unwrap_or(""),
                duration_ms = board.duration_ms,
                "board reconciled"
            );
        }
        self.totals.add(&board.counts);
        self.boards.push(board);
    }

    pub fn finish(&mut self, elapsed: std::time::Duration, aborted: Option<String>) {
        self.completed = aborted.is_none();
        self.aborted = aborted;
        self.duration_ms = elapsed.as_millis() as u64;
        let secs = elapsed.as_secs_f64();
        self.rows_per_s = if secs > 0.0 {
            self.totals.checked as f64 / secs
        } else {
            0.0
        };
    }

    /// Adds the pass to the reconciler's metrics. The per-class gauges describe the last
    /// completed pass only: an aborted pass saw part of the boards.
    pub fn record_metrics(&self) {
        let m = metrics();
        let t = &self.totals;
        let classes = [
            (Classification::Missing, t.missing),
            (Classification::Stale, t.stale),
            (Classification::Ahead, t.ahead),
            (Classification::Corrupt, t.corrupt),
            (Classification::Orphan, t.orphan),
        ];
        m.rows_checked.add(t.checked, &[]);
        for (class, n) in classes {
            m.drift.add(n, &[class.key_value()]);
            if self.completed {
                m.last_pass_drift.record(n as i64, &[class.key_value()]);
            }
        }
        m.lagging.add(t.lagging, &[]);
        if self.completed {
            m.last_pass_lagging.record(t.lagging as i64, &[]);
        }
        m.repairs
            .add(t.repaired, &[RepairAction::Repaired.key_value()]);
        m.repairs
            .add(t.removed, &[RepairAction::Removed.key_value()]);
        let outcome = if self.completed {
            PassOutcome::Completed
        } else {
            PassOutcome::Aborted
        };
        m.passes.add(1, &[outcome.key_value()]);
        m.pass_duration.record(self.duration_ms as f64 / 1e3, &[]);
        if self.completed {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            m.last_success.record(now, &[]);
        }
    }

    /// One log line for the pass (the JSON report carries the per-board detail).
    pub fn log(&self) {
        let t = &self.totals;
        if let Some(reason) = &self.aborted {
            tracing::warn!(
                reason,
                checked = t.checked,
                repaired = t.repaired,
                "reconciliation pass aborted"
            );
        }
        tracing::info!(
            completed = self.completed,
            dry_run = self.dry_run,
            resumed_after = self.resumed_after.as_deref().unwrap_or(""),
            more = self.more,
            boards = self.boards.len(),
            checked = t.checked,
            missing = t.missing,
            stale = t.stale,
            ahead = t.ahead,
            corrupt = t.corrupt,
            current = t.current,
            lagging = t.lagging,
            orphan = t.orphan,
            repaired = t.repaired,
            removed = t.removed,
            skipped = t.skipped,
            failed = t.failed,
            duration_ms = self.duration_ms,
            rows_per_s = self.rows_per_s.round(),
            "reconciliation pass"
        );
    }
}
