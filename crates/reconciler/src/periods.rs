//! Closing the periods that have ended (issue 22): after each pass, under the reconciler's
//! lock, every ended period that is not closed yet is closed through core's
//! `board::periods::close`, which waits for the commands still in flight in it and freezes its
//! standings once Redis holds all of it. A period whose rows are still pending is tried again
//! after the next pass; the close is idempotent, so a replica that lost the lock mid-way (or
//! `lbctl period close` run meanwhile) does no harm.
//!
//! Before a period starts, its projection is sealed empty ([`seal_next`]): no command can land
//! in it yet, so an empty rebuild is exact, and the period's first reads find it whole rather
//! than falling back to PostgreSQL until a rebuild that a read asked for is done.
//!
//! Then the closed periods past `reconciler.period_projection_retention_ms` are archived
//! ([`archive_due`]): read from PostgreSQL from then on, and their Redis keys unlinked once
//! `reconciler.period_archive_grace_ms` has passed (migration V8 says why in two steps).

use std::time::Duration;

use ledgerboard_core::board::periods::{self, CloseOutcome};
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::read::{self, Seal};

use crate::lock::HeldLock;
use crate::rebuild::build_and_switch_sealing;
use crate::settings::Settings;

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

/// Periods archived, and periods whose keys are dropped, after one pass at most.
const MAX_ARCHIVES_PER_PASS: i64 = 1_000;

/// What one round of archiving did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Archives {
    /// Periods now read from PostgreSQL.
    pub archived: u64,
    /// Periods whose Redis keys were unlinked (and how many keys).
    pub dropped: u64,
    pub keys: i64,
    pub failed: u64,
}

/// Archives the closed periods past `retention`, and drops the keys of those archived longer
/// than `grace` ago. A failure to drop one period's keys leaves it for the next round.
pub async fn archive_due(
    db: &Database,
    store: &Store,
    retention: Duration,
    grace: Duration,
) -> Result<Archives, StoreError> {
    let mut done = Archives {
        archived: periods::archive(db, retention, MAX_ARCHIVES_PER_PASS).await?,
        ..Archives::default()
    };
    for board in periods::archived_with_keys(db, grace, MAX_ARCHIVES_PER_PASS).await? {
        let dropped = match store.drop_board(&board).await {
            Ok(keys) => periods::keys_dropped(db, &board).await.map(|()| keys),
            Err(e) => Err(StoreError::Internal(e.to_string())),
        };
        match dropped {
            Ok(keys) => {
                done.dropped += 1;
                done.keys += keys;
                tracing::info!(%board, keys, "archived period: its Redis keys dropped");
            }
            Err(e) => {
                done.failed += 1;
                tracing::warn!(%board, error = %e, "archived period's keys not dropped; tried again after the next pass");
            }
        }
    }
    Ok(done)
}

/// Boards whose next period one round seals at most.
const MAX_SEALS_AHEAD: i64 = 10_000;

/// What one round of sealing ahead did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SealsAhead {
    pub sealed: u64,
    pub failed: u64,
}

/// Seals the next period of every board that resets, if its start is known (a schedule's next
/// boundary, a cron boundary written ahead, a manual reset within the second) and its
/// projection has no seal yet. Under the reconciler's lock (`held`), as any rebuild.
pub async fn seal_next(
    db: &Database,
    store: &Store,
    settings: &Settings,
    held: &HeldLock,
) -> Result<SealsAhead, StoreError> {
    let mut done = SealsAhead::default();
    for board in periods::resetting_boards(db, MAX_SEALS_AHEAD).await? {
        let Some(next) = periods::current(db, &board).await?.and_then(|p| p.next) else {
            continue;
        };
        let Ok(next_board) = board.in_period(&next) else {
            continue;
        };
        let sealed = match read::board_seal(store, &next_board).await {
            Ok(Seal::Missing) => {
                build_and_switch_sealing(db, store, settings, &next_board, held, true)
                    .await
                    .map(|_| true)
                    .map_err(|e| e.to_string())
            }
            Ok(_) => Ok(false),
            Err(e) => Err(e.to_string()),
        };
        match sealed {
            Ok(true) => {
                done.sealed += 1;
                tracing::info!(board = %next_board, "next period sealed before it starts");
            }
            Ok(false) => {}
            Err(e) => {
                done.failed += 1;
                tracing::warn!(board = %next_board, error = %e, "next period not sealed ahead; its first reads ask for a rebuild");
            }
        }
    }
    Ok(done)
}
