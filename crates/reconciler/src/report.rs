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
    /// Members read again from both stores because the first look did not find them current
    /// (`recheck` in `pass/mod.rs`): on a quiet, whole board none; under writes, about the
    /// members written while the pass looked.
    pub rechecked: u64,
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
        self.rechecked += other.rechecked;
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

impl BoardReport {
    /// Something to report: drift, a repair, a removal, a failure or an error.
    fn noteworthy(&self) -> bool {
        let c = &self.counts;
        c.drift() > 0 || c.repaired + c.removed + c.failed > 0 || self.error.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassReport {
    /// Entries `boards` holds at most.
    #[serde(skip)]
    max_listed: usize,
    /// Clean boards (nothing to report) among `boards`: the ones a noteworthy board may take
    /// the place of.
    #[serde(skip)]
    clean_listed: usize,
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
    /// Boards visited (checked to their end, skipped for an error, or the one the pass
    /// stopped at).
    pub boards_visited: u64,
    /// The visited boards, in the order of the walk, up to `reconciler.report_max_boards`:
    /// every board with drift, a repair or an error first claims a place, clean boards fill
    /// the rest. A pass over a million boards must not hold a million entries.
    pub boards: Vec<BoardReport>,
    /// Visited boards not in `boards` (past the limit); their counts are in `totals`.
    pub boards_unlisted: u64,
    pub duration_ms: u64,
    pub rows_per_s: f64,
}

impl PassReport {
    /// `max_listed`: entries `boards` holds at most (at least 1).
    pub fn new(dry_run: bool, max_listed: usize) -> Self {
        Self {
            max_listed: max_listed.max(1),
            clean_listed: 0,
            completed: false,
            aborted: None,
            dry_run,
            resumed_after: None,
            more: false,
            totals: Counts::default(),
            boards_visited: 0,
            boards: Vec::new(),
            boards_unlisted: 0,
            duration_ms: 0,
            rows_per_s: 0.0,
        }
    }

    /// Adds a board's counts to the totals and lists it while there is room (see `boards`). A
    /// board with drift, a repair or an error gets a log line of its own; with many boards,
    /// the clean ones only count.
    pub fn add_board(&mut self, board: BoardReport) {
        let c = &board.counts;
        let noteworthy = board.noteworthy();
        if noteworthy {
            tracing::info!(
                board = board.board,
                checked = c.checked,
                missing = c.missing,
                stale = c.stale,
                ahead = c.ahead,
                corrupt = c.corrupt,
                lagging = c.lagging,
                orphan = c.orphan,
                rechecked = c.rechecked,
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
        self.boards_visited += 1;
        if self.boards.len() < self.max_listed {
            self.clean_listed += usize::from(!noteworthy);
            self.boards.push(board);
            return;
        }
        self.boards_unlisted += 1;
        // Full: a noteworthy board takes the place of the latest clean one listed. Once no
        // clean one is left this costs nothing, so the whole pass stays linear in boards.
        if noteworthy && self.clean_listed > 0 {
            let clean = self.boards.iter().rposition(|b| !b.noteworthy());
            if let Some(i) = clean {
                self.boards.remove(i);
                self.clean_listed -= 1;
                self.boards.push(board);
            }
        }
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
            boards = self.boards_visited,
            checked = t.checked,
            missing = t.missing,
            stale = t.stale,
            ahead = t.ahead,
            corrupt = t.corrupt,
            current = t.current,
            lagging = t.lagging,
            orphan = t.orphan,
            rechecked = t.rechecked,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn board(name: &str, missing: u64) -> BoardReport {
        BoardReport {
            board: name.into(),
            counts: Counts {
                checked: 1,
                missing,
                current: 1 - missing,
                ..Counts::default()
            },
            error: None,
            duration_ms: 0,
        }
    }

    #[test]
    fn a_full_report_lists_a_drifting_board_in_place_of_a_clean_one() {
        let mut report = PassReport::new(false, 3);
        for name in ["a", "b", "c", "d"] {
            report.add_board(board(name, 0));
        }
        report.add_board(board("e", 1));
        report.add_board(board("f", 0));
        let listed: Vec<&str> = report.boards.iter().map(|b| b.board.as_str()).collect();
        assert_eq!(listed, ["a", "b", "e"]);
        assert_eq!((report.boards_visited, report.boards_unlisted), (6, 3));
        assert_eq!((report.totals.checked, report.totals.missing), (6, 1));
    }
}
