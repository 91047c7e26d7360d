//! Closing the periods that have ended (issue 22): after each pass, under the reconciler's
//! lock, every ended period that is not closed yet is closed through core's
//! `board::periods::close`, which waits for the commands still in flight in it and freezes its
//! standings once Redis holds all of it. A period whose rows are still pending is tried again
//! after the next pass; the close is idempotent, so a replica that lost the lock mid-way (or
//! `lbctl period close` run meanwhile) does no harm.

use ledgerboard_core::board::periods::{self, CloseOutcome};
use ledgerboard_core::db::{Database, StoreError};

/// Periods closed after one pass at most (the rest wait for the next pass).
const MAX_CLOSES_PER_PASS: i64 = 100;

/// What one round of closes did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Closes {
    pub closed: u64,
    /// Ended, but rows still on their way to Redis.
    pub pending: u64,
    pub failed: u64,
}

/// Closes the ended periods that are not closed yet.
pub async fn close_due(db: &Database) -> Result<Closes, StoreError> {
    let mut done = Closes::default();
    for (board, period) in periods::due(db, MAX_CLOSES_PER_PASS).await? {
        match periods::close(db, &board, &period).await {
            Ok(CloseOutcome::Closed(c)) => {
                done.closed += 1;
                tracing::info!(%board, period, entries = c.entries, digest = c.digest, "period closed: standings frozen");
            }
            Ok(CloseOutcome::Pending) => done.pending += 1,
            Ok(
                CloseOutcome::AlreadyClosed(_) | CloseOutcome::NotEnded | CloseOutcome::NeverResets,
            ) => {}
            Err(e) => {
                done.failed += 1;
                tracing::warn!(%board, period, error = %e, "period close failed; tried again after the next pass");
            }
        }
    }
    Ok(done)
}
