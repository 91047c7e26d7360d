//! The sequencer: committed `event_queue` rows move into `events` with increasing positions,
//! one sequencer at a time, and retention. Any process may run [`upkeep`] (the api and the
//! dispatcher do); the advisory lock makes it one turn at a time cluster-wide, and a turn that
//! finds the lock taken skips (another process is doing the work).

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::db::{Database, Op, Statement, StoreError, commit};

static LOCK: Statement<0> =
    Statement::new(Op::EventSequence, include_str!("sql/sequence_lock.sql"), []);
/// Parameters: the most rows to move.
static MOVE: Statement<1> = Statement::new(
    Op::EventSequence,
    include_str!("sql/sequence_move.sql"),
    [Type::INT8],
);
/// Parameters: retention in hours, batch, webhooks' hold in hours.
static SWEEP: Statement<3> = Statement::new(
    Op::EventSweep,
    include_str!("sql/sweep.sql"),
    [Type::INT4, Type::INT8, Type::INT4],
);

/// Rows one turn moves at most; a backlog takes several turns, each one short transaction.
pub const TURN_ROWS: i64 = 5_000;

/// Moves up to `limit` committed queue rows into the log. `None`: another process held the
/// sequencer's lock (it does the work). `Some(n)`: rows moved.
pub async fn sequence(db: &Database, limit: i64) -> Result<Option<u64>, StoreError> {
    let mut client = db.client().await?;
    let stmts = db.statements();
    let tx = client.transaction().await?;
    let granted: bool = stmts.query_one(&tx, &LOCK, []).await?.try_get("granted")?;
    if !granted {
        return Ok(None);
    }
    let moved = stmts.execute(&tx, &MOVE, [&limit]).await?;
    commit(tx).await?;
    Ok(Some(moved))
}

/// Moves everything committed so far (turns of [`TURN_ROWS`] until one moves fewer). `false`
/// when another process held the lock.
pub async fn sequence_all(db: &Database) -> Result<bool, StoreError> {
    loop {
        match sequence(db, TURN_ROWS).await? {
            None => return Ok(false),
            Some(n) if (n as i64) < TURN_ROWS => return Ok(true),
            Some(_) => {}
        }
    }
}

/// Deletes events older than `hours` in batches of `batch`; returns how many. Events an
/// enabled webhook subscription's lane has not passed yet are kept until they are
/// `hold_hours` old (`sql/sweep.sql`).
pub async fn sweep(
    db: &Database,
    hours: i32,
    hold_hours: i32,
    batch: i64,
) -> Result<u64, StoreError> {
    let mut total = 0u64;
    loop {
        let row = db.query_one(&SWEEP, [&hours, &batch, &hold_hours]).await?;
        let deleted: i64 = row.try_get("deleted")?;
        total += deleted as u64;
        if deleted < batch {
            return Ok(total);
        }
    }
}

/// How often the upkeep runs and what it keeps.
#[derive(Debug, Clone, Copy)]
pub struct Upkeep {
    /// Between sequencer turns.
    pub interval: Duration,
    /// Events older than this many hours are deleted.
    pub retention_hours: i32,
    /// Events a webhook lane still has to deliver are kept until this many hours old.
    pub webhook_hold_hours: i32,
    /// Between retention sweeps.
    pub sweep_interval: Duration,
}

impl From<&crate::config::EventsSettings> for Upkeep {
    fn from(s: &crate::config::EventsSettings) -> Self {
        Upkeep {
            interval: s.sequence_interval(),
            retention_hours: i32::try_from(s.retention_hours).unwrap_or(i32::MAX),
            webhook_hold_hours: i32::try_from(s.webhook_hold_hours).unwrap_or(i32::MAX),
            sweep_interval: s.sweep_interval(),
        }
    }
}

/// Runs the sequencer every `interval` and retention every `sweep_interval` until `stop`.
/// After each turn it reads the log's last position into `head` (the api's feed waits on it,
/// whichever process did the turn). Failures are logged and retried with back-off; they never
/// end the task.
pub async fn upkeep(
    db: Database,
    settings: Upkeep,
    stop: CancellationToken,
    head: tokio::sync::watch::Sender<i64>,
) {
    let mut backoff = Backoff::new(settings.interval, Duration::from_secs(5));
    let mut last_sweep = tokio::time::Instant::now();
    loop {
        let turn = async {
            sequence_all(&db).await?;
            super::feed::bounds(&db).await
        };
        let failed = match turn.await {
            Ok(bounds) => {
                head.send_if_modified(|h| {
                    let moved = bounds.last > *h;
                    *h = (*h).max(bounds.last);
                    moved
                });
                backoff.reset();
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff.current(), "event sequencer turn failed; trying again");
                true
            }
        };
        if last_sweep.elapsed() >= settings.sweep_interval {
            last_sweep = tokio::time::Instant::now();
            let (hours, hold) = (settings.retention_hours, settings.webhook_hold_hours);
            match sweep(&db, hours, hold, 10_000).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "event log retention"),
                Err(e) => tracing::warn!(error = %e, "event log retention failed"),
            }
        }
        if failed {
            if !backoff.wait(&stop).await {
                return;
            }
            continue;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(settings.interval) => {}
        }
    }
}
