//! Closing a run: like a period's close (`board/periods.rs`), it waits for the commands still
//! in flight in the run (the board's period lock, held exclusively only until they committed),
//! and once Redis holds all of the run (no pending outbox row of its boards), freezes every
//! cohort's standings (`sql/close_freeze.sql`) and the run's record (`sql/close_run.sql`: the
//! moves, the tiers they set, the prizes and tiers as they stand, one digest chained to the
//! previous run's) in one transaction. Idempotent: a run closes once, whoever asks. Runs close
//! in order, each after the one before it.

use serde::Serialize;
use tokio_postgres::types::Type;

use super::CompetitionError;
use crate::board::definition::LOCK_TIMEOUT;
use crate::board::periods::{
    CLOSE_CHECK, CLOSE_LOCK, CLOSE_LOCK_WAIT, TIMEOUT, WHOLE_PERIOD_TIMEOUT,
};
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::model::BoardId;

/// Parameters: competition, run.
static CHECK: Statement<2> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/close_check.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: the run's board.
static PENDING: Statement<1> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/close_pending.sql"),
    [Type::TEXT],
);
/// Parameters: competition, run, sort, tie break, columns.
static FREEZE: Statement<5> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/close_freeze.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT],
);
/// Parameters: competition, run.
static RUN_ROW: Statement<2> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/close_run_row.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: competition, run.
static RUN: Statement<2> = Statement::new(
    Op::CompetitionClose,
    include_str!("sql/close_run.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: competition, run.
static GET_RUN: Statement<2> = Statement::new(
    Op::Competition,
    include_str!("sql/run_get.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: competition.
static SERIALIZE: Statement<1> = Statement::new(
    Op::CompetitionClose,
    "SELECT pg_advisory_xact_lock(hashtextextended('lb_competition_close:' || $1, 0))",
    [Type::TEXT],
);
/// Parameters: limit.
static DUE: Statement<1> = Statement::new(
    Op::Competition,
    include_str!("sql/close_due.sql"),
    [Type::INT8],
);

/// A closed run: when, how many boards (cohorts, or its one board) and moves, and its digest
/// with the previous run's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunClosed {
    pub run: String,
    pub closed_at: String,
    pub boards: i32,
    /// Entries ranked, over its boards.
    pub entries: i64,
    pub moves: i64,
    pub digest: String,
    /// The previous closed run's digest (absent for the first run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

/// What [`close`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseOutcome {
    Closed(RunClosed),
    AlreadyClosed(RunClosed),
    /// The run is still open (or has not started).
    NotEnded,
    /// Outbox rows of the run still wait for the projector: close later.
    Pending,
    /// An earlier run is not closed yet: it closes first.
    Waiting,
}

/// Closes the run `run` (a period id) of the competition `id`.
pub async fn close(
    db: &Database,
    id: &BoardId,
    run: &str,
) -> Result<CloseOutcome, CompetitionError> {
    let run_board = id
        .in_period(run)
        .map_err(|_| CompetitionError::UnknownRun)?;
    if run_board.cohort().is_some() {
        return Err(CompetitionError::UnknownRun);
    }
    let mut client = db.client().await?;
    let stmts = db.statements();
    let tx = client.transaction().await?;
    let Some(check) = stmts
        .query(&tx, &CHECK, [&id.as_str(), &run])
        .await?
        .into_iter()
        .next()
    else {
        return Err(CompetitionError::Unknown);
    };
    if check.try_get::<_, bool>("closed")? {
        drop(tx);
        return Ok(match closed(db, id, run).await? {
            Some(c) => CloseOutcome::AlreadyClosed(c),
            None => CloseOutcome::Pending,
        });
    }
    if !check.try_get::<_, bool>("ended")? {
        return Ok(CloseOutcome::NotEnded);
    }
    if check.try_get::<_, bool>("waiting")? {
        return Ok(CloseOutcome::Waiting);
    }
    let Some(order) = stmts
        .query(&tx, &CLOSE_CHECK, [&id.as_str(), &run])
        .await?
        .into_iter()
        .next()
    else {
        return Err(CompetitionError::Unknown);
    };
    let sort: String = order.try_get("sort")?;
    let tie_break: String = order.try_get("tie_break")?;
    let columns: Option<String> = order.try_get("columns")?;
    let wait = format!("{}ms", CLOSE_LOCK_WAIT.as_millis());
    stmts.query(&tx, &LOCK_TIMEOUT, [&wait]).await?;
    // As a period's close: granted once the commands in flight in the run have committed;
    // every command after it reads a clock past the run's end.
    stmts.query(&tx, &CLOSE_LOCK, [&id.as_str()]).await?;
    commit(tx).await?;
    let tx = client.transaction().await?;
    let bound = format!("{}ms", WHOLE_PERIOD_TIMEOUT.as_millis());
    stmts.query(&tx, &TIMEOUT, [&bound]).await?;
    // Closers of one competition (the reconciler, an operator, the entries of a league's next
    // run) take turns: the next one's statements see the first one's close and write nothing.
    stmts.query(&tx, &SERIALIZE, [&id.as_str()]).await?;
    let pending: bool = stmts
        .query_one(&tx, &PENDING, [&run_board.as_str()])
        .await?
        .try_get("pending")?;
    if pending {
        return Ok(CloseOutcome::Pending);
    }
    stmts
        .query(
            &tx,
            &FREEZE,
            [&id.as_str(), &run, &sort, &tie_break, &columns],
        )
        .await?;
    stmts.query(&tx, &RUN_ROW, [&id.as_str(), &run]).await?;
    let written: bool = stmts
        .query_one(&tx, &RUN, [&id.as_str(), &run])
        .await?
        .try_get("written")?;
    commit(tx).await?;
    let Some(done) = closed(db, id, run).await? else {
        return Err(
            StoreError::Internal(format!("run {run_board} was closed and has no record")).into(),
        );
    };
    Ok(if written {
        CloseOutcome::Closed(done)
    } else {
        CloseOutcome::AlreadyClosed(done)
    })
}

/// Parameters: limit.
static RECENT: Statement<1> = Statement::new(
    Op::Competition,
    include_str!("sql/runs_recent.sql"),
    [Type::INT8],
);

/// A closed run of some competition, with its frozen prize table's ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentRun {
    pub competition: String,
    pub prize_ranges: i32,
    pub closed: RunClosed,
}

/// The last `limit` closed runs over every competition, newest first.
pub async fn recent_runs(db: &Database, limit: i64) -> Result<Vec<RecentRun>, StoreError> {
    let rows = db.query(&RECENT, [&limit.clamp(1, 1_000)]).await?;
    rows.iter()
        .map(|r| {
            Ok(RecentRun {
                competition: r.try_get("competition_id")?,
                prize_ranges: r.try_get("prize_ranges")?,
                closed: of_run(r)?,
            })
        })
        .collect()
}

fn of_run(r: &tokio_postgres::Row) -> Result<RunClosed, StoreError> {
    Ok(RunClosed {
        run: r.try_get("run")?,
        closed_at: r.try_get("closed_at")?,
        boards: r.try_get("boards")?,
        entries: r.try_get("entries")?,
        moves: r.try_get("moves")?,
        digest: r.try_get("digest")?,
        previous: r.try_get("previous")?,
    })
}

/// The record of a closed run; None when it is not closed.
pub async fn closed(
    db: &Database,
    id: &BoardId,
    run: &str,
) -> Result<Option<RunClosed>, StoreError> {
    db.query_opt(&GET_RUN, [&id.as_str(), &run])
        .await?
        .as_ref()
        .map(of_run)
        .transpose()
}

/// Runs closed after one reconciler pass at most (the rest wait for the next).
const MAX_CLOSES: i64 = 100;

/// What one round of run closes did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Closes {
    pub closed: u64,
    pub pending: u64,
    pub failed: u64,
}

/// Closes the runs that have ended and are not closed, oldest first (the reconciler, after
/// its period closes).
pub async fn close_due(db: &Database) -> Result<Closes, StoreError> {
    let mut done = Closes::default();
    for row in db.query(&DUE, [&MAX_CLOSES]).await? {
        let raw: String = row.try_get(0)?;
        let run: String = row.try_get(1)?;
        let Ok(id) = BoardId::parse(&raw) else {
            tracing::warn!(
                competition = raw,
                run,
                "skipping a competition id that is not one"
            );
            continue;
        };
        match close(db, &id, &run).await {
            Ok(CloseOutcome::Closed(c)) => {
                done.closed += 1;
                tracing::info!(competition = %id, run, boards = c.boards, moves = c.moves, digest = c.digest, "competition run closed");
            }
            Ok(CloseOutcome::Pending | CloseOutcome::Waiting) => done.pending += 1,
            Ok(CloseOutcome::AlreadyClosed(_) | CloseOutcome::NotEnded) => {}
            Err(e) => {
                done.failed += 1;
                tracing::warn!(competition = %id, run, error = %e, "competition run close failed; tried again after the next pass");
            }
        }
    }
    Ok(done)
}

/// Parameters: competition.
static OPEN_RUNS: Statement<1> = Statement::new(
    Op::Competition,
    "SELECT run FROM competition_runs WHERE competition_id = $1 AND closed_at IS NULL ORDER BY run LIMIT 10",
    [Type::TEXT],
);

/// Closes the competition's runs that have ended and wait for their close, oldest first: what
/// an entry into a league's next run asks when the previous run is not closed yet (its tiers
/// place the entry), rather than wait for the reconciler's next pass. Answers whether every
/// ended run is closed now.
pub async fn close_ended(db: &Database, id: &BoardId) -> Result<bool, CompetitionError> {
    for row in db.query(&OPEN_RUNS, [&id.as_str()]).await? {
        let run: String = row.try_get("run")?;
        match close(db, id, &run).await? {
            CloseOutcome::Closed(_) | CloseOutcome::AlreadyClosed(_) => {}
            CloseOutcome::NotEnded => return Ok(true),
            CloseOutcome::Pending | CloseOutcome::Waiting => return Ok(false),
        }
    }
    Ok(true)
}
