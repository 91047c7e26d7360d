//! Periods (issue 22): a board declared with a `reset` (`board::definition::Reset`) starts a new
//! period on its schedule or when an admin asks, and each period is a board of its own,
//! `<board>~<period id>` (`BoardId::in_period`), in every table and in Redis. Which period a
//! command lands in is decided in its statement (`lb_command_board`, migration V7); this module
//! answers which period is current (for reads) and opens one by hand.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_postgres::types::Type;

use super::definition::{Column, Columns, Sort};
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::model::BoardId;

// A closed period's verification lives in `verification.rs`; named here too, as the rest of a
// period's reads are.
pub use super::verification::{Outcome, Verification, verify};

/// Parameters: board.
pub static CURRENT: Statement<1> = Statement::new(
    Op::BoardPeriod,
    include_str!("sql/period_current.sql"),
    [Type::TEXT],
);

/// Parameters: board, actor.
pub static RESET: Statement<2> = Statement::new(
    Op::BoardReset,
    include_str!("sql/period_reset.sql"),
    [Type::TEXT, Type::TEXT],
);

/// A board's periods as of now, by the database clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Periods {
    /// The period commands land in now.
    pub current: String,
    /// The one before it; None before a board's first reset when it resets only by hand.
    pub previous: Option<String>,
    /// How long until the current period ends by the schedule (None: only by hand).
    pub ends_in_ms: Option<i64>,
    /// The period that starts then.
    pub next: Option<String>,
    /// The last archived period (migration V8): it and every period before it are read from
    /// PostgreSQL only.
    pub archived_through: Option<String>,
}

impl Periods {
    /// Whether reads of `period` go to PostgreSQL only (its projection archived).
    pub fn archived(&self, period: &str) -> bool {
        self.archived_through
            .as_deref()
            .is_some_and(|through| period <= through)
    }
}

/// The board's periods, or None when it never resets (or is undeclared).
pub async fn current(db: &Database, board: &BoardId) -> Result<Option<Periods>, StoreError> {
    let Some(row) = db.query_opt(&CURRENT, [&board.base().as_str()]).await? else {
        return Ok(None);
    };
    Ok(Some(Periods {
        current: row.try_get("current")?,
        previous: row.try_get("previous")?,
        ends_in_ms: row.try_get("ends_in_ms")?,
        next: row.try_get("next")?,
        archived_through: row.try_get("archived_through")?,
    }))
}

/// What a manual reset did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reset {
    /// The period it opens, at the next whole second by the database clock.
    pub period: String,
    /// False when a reset in the same second had already opened it.
    pub opened: bool,
}

/// Opens the board's next period at the next whole second; None when the board never resets.
pub async fn reset(
    db: &Database,
    board: &BoardId,
    actor: &str,
) -> Result<Option<Reset>, StoreError> {
    // Under the period lock, exclusively: the commands in flight commit before the boundary is
    // written, and those that wait for it read a clock past the boundary after it is written,
    // however late this commits (without it, a command could read a clock past a start that was
    // not committed yet, and land in the period before it).
    let mut client = db.client().await?;
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let wait = format!("{}ms", CLOSE_LOCK_WAIT.as_millis());
    stmts
        .query(&tx, &super::definition::LOCK_TIMEOUT, [&wait])
        .await?;
    stmts
        .query(&tx, &super::schedule::LOCK, [&board.as_str()])
        .await?;
    let row = stmts
        .query(&tx, &RESET, [&board.as_str(), &actor])
        .await?
        .into_iter()
        .next();
    commit(tx).await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(Reset {
        period: row.try_get("period")?,
        opened: row.try_get("opened")?,
    }))
}

/// Boards cached at most; past it the cache starts over (as the definitions' cache).
const MAX_CACHED: usize = 10_000;

/// The api's cache of each board's periods: an answer is kept for the cache's time to live,
/// and never past the end of the current period by its schedule (a manual reset is seen
/// within the time to live, as a definition's change is).
pub struct PeriodCache {
    ttl: Duration,
    cached: Mutex<HashMap<BoardId, (Instant, Option<Periods>)>>,
}

impl PeriodCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            cached: Mutex::new(HashMap::new()),
        }
    }

    /// The board's periods (None: it never resets), from the cache while fresh.
    pub async fn get(&self, db: &Database, board: &BoardId) -> Result<Option<Periods>, StoreError> {
        if let Some((until, periods)) = self.entry(board)
            && Instant::now() < until
        {
            return Ok(periods);
        }
        let periods = current(db, board).await?;
        let ends = periods
            .as_ref()
            .and_then(|p| p.ends_in_ms)
            .map_or(self.ttl, |ms| Duration::from_millis(ms.max(0) as u64));
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if cached.len() >= MAX_CACHED {
            cached.clear();
        }
        cached.insert(
            board.clone(),
            (Instant::now() + self.ttl.min(ends), periods.clone()),
        );
        Ok(periods)
    }

    /// The last answer read for the board, however old (for reads while PostgreSQL is down).
    pub fn last_known(&self, board: &BoardId) -> Option<Option<Periods>> {
        self.entry(board).map(|(_, periods)| periods)
    }

    /// Forgets the board's periods (after this process reset it or changed its definition).
    pub fn forget(&self, board: &BoardId) {
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached.remove(board);
    }

    fn entry(&self, board: &BoardId) -> Option<(Instant, Option<Periods>)> {
        let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        cached.get(board).cloned()
    }
}

/// Cron schedules extended after one call at most (the rest wait for the next).
const MAX_SCHEDULES_PER_CALL: i64 = 1_000;

/// Extends every cron schedule that runs short (`schedule.rs`), each in a transaction of its own
/// under the board's period lock (commands of the board wait behind it for the few ms of the
/// write); how many boards got new boundaries. One board's failure is logged and the others
/// still go: the next call tries it again, with two weeks of margin.
pub async fn extend_schedules(db: &Database) -> Result<u64, StoreError> {
    let mut extended = 0;
    for board in super::schedule::due(db, MAX_SCHEDULES_PER_CALL).await? {
        match extend_schedule(db, &board).await {
            Ok(0) => {}
            Ok(n) => {
                extended += 1;
                tracing::info!(%board, boundaries = n, "cron schedule extended");
            }
            Err(e) => {
                tracing::warn!(%board, error = %e, "cron schedule not extended; tried again later");
            }
        }
    }
    Ok(extended)
}

/// Extends one board's cron schedule; how many boundaries were written.
pub async fn extend_schedule(db: &Database, board: &BoardId) -> Result<u64, StoreError> {
    let mut client = db.client().await?;
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let wait = format!("{}ms", CLOSE_LOCK_WAIT.as_millis());
    stmts
        .query(&tx, &super::definition::LOCK_TIMEOUT, [&wait])
        .await?;
    stmts
        .query(&tx, &super::schedule::LOCK, [&board.as_str()])
        .await?;
    let written = super::schedule::extend_in(stmts, &tx, board).await?;
    commit(tx).await?;
    Ok(written)
}

/// Parameters: limit.
pub static RESETTING: Statement<1> = Statement::new(
    Op::PeriodRead,
    include_str!("sql/period_boards.sql"),
    [Type::INT8],
);

/// Up to `limit` declared boards that reset, in byte order.
pub async fn resetting_boards(db: &Database, limit: i64) -> Result<Vec<BoardId>, StoreError> {
    let rows = db.query(&RESETTING, [&limit]).await?;
    let mut boards = Vec::with_capacity(rows.len());
    for r in rows {
        let raw: String = r.try_get(0)?;
        match BoardId::parse(&raw) {
            Ok(board) => boards.push(board),
            Err(_) => tracing::warn!(
                board = raw,
                "skipping a definition of a board that is not one"
            ),
        }
    }
    Ok(boards)
}

/// Parameters: retention, limit.
pub static ARCHIVE_MARK: Statement<2> = Statement::new(
    Op::PeriodArchive,
    include_str!("sql/period_archive_mark.sql"),
    [Type::TEXT, Type::INT8],
);
/// Parameters: grace, limit.
pub static ARCHIVE_KEYS_DUE: Statement<2> = Statement::new(
    Op::PeriodArchive,
    include_str!("sql/period_archive_keys_due.sql"),
    [Type::TEXT, Type::INT8],
);
/// Parameters: board, period.
pub static ARCHIVE_KEYS_DROPPED: Statement<2> = Statement::new(
    Op::PeriodArchive,
    include_str!("sql/period_archive_keys_dropped.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: stored board id.
pub static ARCHIVED: Statement<1> = Statement::new(
    Op::PeriodArchive,
    include_str!("sql/period_archived.sql"),
    [Type::TEXT],
);

/// Archives (at most `limit`) closed periods whose close is older than `retention`: reads of
/// them go to PostgreSQL from then on (each api within its period cache's time). How many.
pub async fn archive(db: &Database, retention: Duration, limit: i64) -> Result<u64, StoreError> {
    let retention = super::schedule::interval(retention);
    db.execute(&ARCHIVE_MARK, [&retention, &limit]).await
}

/// Archived periods (at most `limit`) whose Redis keys are still there, archived longer than
/// `grace` ago: their board ids, for the reconciler to unlink.
pub async fn archived_with_keys(
    db: &Database,
    grace: Duration,
    limit: i64,
) -> Result<Vec<BoardId>, StoreError> {
    let grace = super::schedule::interval(grace);
    let rows = db.query(&ARCHIVE_KEYS_DUE, [&grace, &limit]).await?;
    let mut boards = Vec::with_capacity(rows.len());
    for r in rows {
        let raw: String = r.try_get(0)?;
        match BoardId::parse_stored(&raw) {
            Ok(board) if board.period().is_some() => boards.push(board),
            _ => tracing::warn!(board = raw, "skipping an archived period that is not one"),
        }
    }
    Ok(boards)
}

/// Records that an archived period's Redis keys were unlinked.
pub async fn keys_dropped(db: &Database, period_board: &BoardId) -> Result<(), StoreError> {
    let Some(period) = period_board.period() else {
        return Ok(());
    };
    db.execute(
        &ARCHIVE_KEYS_DROPPED,
        [&period_board.base().as_str(), &period],
    )
    .await?;
    Ok(())
}

/// Whether `board` (a stored board id) is an archived period: nothing rebuilds it.
pub async fn is_archived(db: &Database, board: &BoardId) -> Result<bool, StoreError> {
    if board.period().is_none() {
        return Ok(false);
    }
    Ok(db
        .query_one(&ARCHIVED, [&board.as_str()])
        .await?
        .try_get("archived")?)
}

/// Parameters: board, period.
pub static CLOSE_CHECK: Statement<2> = Statement::new(
    Op::PeriodClose,
    include_str!("sql/period_close_check.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: board.
pub static CLOSE_LOCK: Statement<1> = Statement::new(
    Op::PeriodClose,
    include_str!("sql/period_close_lock.sql"),
    [Type::TEXT],
);
/// Parameters: the period's board id.
pub static CLOSE_PENDING: Statement<1> = Statement::new(
    Op::PeriodClose,
    include_str!("sql/period_close_pending.sql"),
    [Type::TEXT],
);
/// Parameters: board, period, sort, tie break, columns (JSON text).
pub static CLOSE: Statement<5> = Statement::new(
    Op::PeriodClose,
    include_str!("sql/period_close.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT],
);
/// Parameters: board, period.
pub static GET: Statement<2> = Statement::new(
    Op::PeriodRead,
    include_str!("sql/period_get.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: board, period, after position, limit.
pub static STANDINGS: Statement<4> = Statement::new(
    Op::PeriodRead,
    include_str!("sql/period_standings.sql"),
    [Type::TEXT, Type::TEXT, Type::INT8, Type::INT8],
);
/// Parameters: limit.
pub static DUE: Statement<1> = Statement::new(
    Op::PeriodRead,
    include_str!("sql/period_due.sql"),
    [Type::INT8],
);
/// Parameters: the bound.
pub static TIMEOUT: Statement<1> = Statement::new(
    Op::PeriodClose,
    include_str!("sql/period_timeout.sql"),
    [Type::TEXT],
);

/// How long a close waits for the commands in flight in its period (they hold the period lock
/// shared; new commands of the board wait behind the close meanwhile).
pub const CLOSE_LOCK_WAIT: Duration = Duration::from_secs(2);

/// The statement bound of a close's and a verification's transaction: they read (and the close
/// writes) every entry of the period; measured: docs/performance.md, "Periods".
pub const WHOLE_PERIOD_TIMEOUT: Duration = Duration::from_secs(600);

/// A closed period: when, in which order, how many entries, and the SHA-256 (hex) of its
/// standings' lines (`lb_standings_line`, migration V7).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Closed {
    /// When the close froze the standings, by the database clock (UTC): read after the
    /// snapshot they were ranked from (`sql/period_close.sql`).
    pub closed_at: String,
    pub sort: String,
    pub tie_break: String,
    pub entries: i64,
    pub digest: String,
    /// The board's columns at the close, when it declared them (the standings carry every
    /// column, and the digest covers them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Column>,
}

/// What [`close`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseOutcome {
    /// This call froze the standings.
    Closed(Closed),
    /// An earlier close had (nothing written now).
    AlreadyClosed(Closed),
    /// The period is still open (the current one, or one that has not started).
    NotEnded,
    /// Outbox rows of the period still wait for the projector: close later.
    Pending,
    /// The board never resets (or is undeclared).
    NeverResets,
}

/// Closes one ended period of `board`: waits for the commands still in flight in it (the period
/// lock), and once Redis holds all of it (no pending outbox row), freezes its standings in one
/// transaction. Idempotent: a period closes once, whoever asks and however often.
pub async fn close(
    db: &Database,
    board: &BoardId,
    period: &str,
) -> Result<CloseOutcome, StoreError> {
    let board = board.base();
    let period_board = board
        .in_period(period)
        .map_err(|_| StoreError::Internal(format!("{period:?} is not a period id")))?;
    let mut client = db.client().await?;
    // Dropped without commit (an early return), the transaction rolls back.
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let Some(check) = stmts
        .query(&tx, &CLOSE_CHECK, [&board.as_str(), &period])
        .await?
        .into_iter()
        .next()
    else {
        return Ok(CloseOutcome::NeverResets);
    };
    if check.try_get::<_, bool>("closed")? {
        drop(tx);
        return Ok(match closed(db, &board, period).await? {
            Some(c) => CloseOutcome::AlreadyClosed(c),
            None => CloseOutcome::Pending,
        });
    }
    if !check.try_get::<_, bool>("ended")? {
        return Ok(CloseOutcome::NotEnded);
    }
    let sort: String = check.try_get("sort")?;
    let tie_break: String = check.try_get("tie_break")?;
    let columns: Option<String> = check.try_get("columns")?;
    let wait = format!("{}ms", CLOSE_LOCK_WAIT.as_millis());
    stmts
        .query(&tx, &super::definition::LOCK_TIMEOUT, [&wait])
        .await?;
    // Held exclusively only until the commands still in flight in the period have committed:
    // once it is granted, every command to come reads a clock past the period's end and
    // lands in a later period, so the ended period's commands are all in, and the lock goes
    // with this transaction. The standings are written in the next one, while the board's
    // new commands run (held for the whole write, the lock queued them for its 11–16 s on a
    // 1M-entry period: docs/performance.md).
    stmts.query(&tx, &CLOSE_LOCK, [&board.as_str()]).await?;
    commit(tx).await?;
    let tx = client.transaction().await?;
    let bound = format!("{}ms", WHOLE_PERIOD_TIMEOUT.as_millis());
    stmts.query(&tx, &TIMEOUT, [&bound]).await?;
    let pending: bool = stmts
        .query_one(&tx, &CLOSE_PENDING, [&period_board.as_str()])
        .await?
        .try_get("pending")?;
    if pending {
        return Ok(CloseOutcome::Pending);
    }
    let written: bool = stmts
        .query_one(
            &tx,
            &CLOSE,
            [&board.as_str(), &period, &sort, &tie_break, &columns],
        )
        .await?
        .try_get("written")?;
    commit(tx).await?;
    let Some(done) = closed(db, &board, period).await? else {
        return Err(StoreError::Internal(format!(
            "period {period_board} was closed and has no close row"
        )));
    };
    Ok(if written {
        CloseOutcome::Closed(done)
    } else {
        CloseOutcome::AlreadyClosed(done)
    })
}

/// The close of a period; None when it is not closed.
pub async fn closed(
    db: &Database,
    board: &BoardId,
    period: &str,
) -> Result<Option<Closed>, StoreError> {
    let Some(row) = db
        .query_opt(&GET, [&board.base().as_str(), &period])
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(Closed {
        closed_at: row.try_get("closed_at")?,
        sort: row.try_get("sort")?,
        tie_break: row.try_get("tie_break")?,
        entries: row.try_get("entries")?,
        digest: row.try_get("digest")?,
        columns: closed_columns(row.try_get("columns")?)?,
    }))
}

/// The columns a close recorded (`period_closes.columns`, JSON text; NULL: one column).
fn closed_columns(json: Option<String>) -> Result<Vec<Column>, StoreError> {
    json.map_or(Ok(Vec::new()), |j| {
        serde_json::from_str(&j)
            .map_err(|_| StoreError::SchemaMismatch(format!("a close's columns {j:?}")))
    })
}

/// One line of a closed period's standings.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Standing {
    /// 1.. in the board's order (unique).
    pub position: i64,
    /// Competition rank by score (1, 2, 2, 4).
    pub rank: i64,
    /// Dense rank by score (1, 2, 2, 3).
    pub dense_rank: i64,
    pub user_id: String,
    /// The score (on a board with columns, its first column).
    pub score: i64,
    /// On a board with columns: the value in each column, in the definition's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<i64>>,
    /// The order among equal tuples on an `earliest` board (0 on `user_id` boards).
    pub tie: i64,
    pub version: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<serde_json::Value>,
}

/// Most standings one page holds.
pub const MAX_STANDINGS_PAGE: i64 = 1_000;

/// Up to `limit` standings of a closed period after position `after` (0: from the first).
pub async fn standings(
    db: &Database,
    board: &BoardId,
    period: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<Standing>, StoreError> {
    let limit = limit.clamp(1, MAX_STANDINGS_PAGE);
    let rows = db
        .query(
            &STANDINGS,
            [&board.base().as_str(), &period, &after, &limit],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let metadata: Option<String> = r.try_get("metadata")?;
            let defined = closed_columns(r.try_get("defined")?)?;
            let orders: Vec<Sort> = defined.iter().map(|c| c.order).collect();
            let columns = Columns::of(&orders).unwrap_or(Columns::ONE);
            let key = crate::db::row::key(r)?;
            let score: i64 = r.try_get("score")?;
            Ok(Standing {
                position: r.try_get("position")?,
                rank: r.try_get("rank")?,
                dense_rank: r.try_get("dense")?,
                user_id: r.try_get("user_id")?,
                score,
                scores: columns.several().then(|| columns.values(score, key.rest)),
                tie: key.tie,
                version: r.try_get("version")?,
                metadata: metadata.and_then(|m| serde_json::from_str(&m).ok()),
            })
        })
        .collect()
}

/// Up to `limit` ended periods that are not closed, oldest first: (board, period id).
pub async fn due(db: &Database, limit: i64) -> Result<Vec<(BoardId, String)>, StoreError> {
    let rows = db.query(&DUE, [&limit]).await?;
    let mut due = Vec::with_capacity(rows.len());
    for r in rows {
        let raw: String = r.try_get(0)?;
        let period: String = r.try_get(1)?;
        // A board id the table's CHECK allowed, and a period a command's statement named.
        match BoardId::parse(&raw) {
            Ok(board) if crate::model::is_period_id(&period) => due.push((board, period)),
            _ => tracing::warn!(board = raw, period, "skipping a period that is not one"),
        }
    }
    Ok(due)
}
