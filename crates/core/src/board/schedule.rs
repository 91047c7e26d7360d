//! Cron schedules (issue 22): a board whose `reset` is a cron expression
//! ([`crate::board::definition::Cron`]) has its boundaries written ahead into `board_resets`, so that
//! a command finds its period as on a board reset by hand (`lb_period_start`, migration V8):
//! one lookup, no cron in SQL. croner computes the wall-clock fire times; PostgreSQL turns
//! them into instants in the board's zone (`sql/period_schedule_extend.sql`).
//!
//! The definition that declares a schedule writes its first boundaries (`definition/store.rs`), and
//! the reconciler extends every schedule that runs short after each pass
//! (`periods::extend_schedules`). How far ahead: [`AHEAD`] or [`MAX_AHEAD`] boundaries,
//! whichever comes first, and always the next one; extended once fewer than [`LOW_COUNT`] are
//! ahead and none beyond [`LOW_HORIZON`], so a reconciler that is down for two weeks (or
//! 500 boundaries of a schedule that fires every minute) is the margin.

use std::time::Duration;

use tokio_postgres::types::Type;

use crate::board::definition::Reset;
use crate::db::{Database, Op, Statement, StatementClient, Statements, StoreError};
use crate::model::BoardId;

/// Parameters: board.
pub static LOCK: Statement<1> = Statement::new(
    Op::BoardSchedule,
    include_str!("sql/period_schedule_lock.sql"),
    [Type::TEXT],
);
/// Parameters: low-water count, low-water horizon, limit.
pub static DUE: Statement<3> = Statement::new(
    Op::BoardSchedule,
    include_str!("sql/period_schedule_due.sql"),
    [Type::INT8, Type::TEXT, Type::INT8],
);
/// Parameters: board, how far ahead.
pub static STATE: Statement<2> = Statement::new(
    Op::BoardSchedule,
    include_str!("sql/period_schedule_state.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: board, schedule, wall-clock times.
pub static EXTEND: Statement<3> = Statement::new(
    Op::BoardSchedule,
    include_str!("sql/period_schedule_extend.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT_ARRAY],
);
/// Parameters: board.
pub static CLEAR: Statement<1> = Statement::new(
    Op::BoardSchedule,
    include_str!("sql/period_schedule_clear.sql"),
    [Type::TEXT],
);

/// How far ahead boundaries are written (a weekly schedule: five).
pub const AHEAD: Duration = Duration::from_secs(35 * 24 * 3600);
/// Most boundaries written ahead (a schedule that fires every minute: about 16 hours).
pub const MAX_AHEAD: usize = 1_000;
/// A schedule is extended once fewer than this many boundaries are ahead...
pub const LOW_COUNT: i64 = 500;
/// ... and none is beyond this.
pub const LOW_HORIZON: Duration = Duration::from_secs(14 * 24 * 3600);

/// How [`STATE`] and [`EXTEND`] spell a wall-clock time.
const WALL_CLOCK: &str = "%Y-%m-%dT%H:%M:%S";

/// An interval PostgreSQL reads.
pub fn interval(d: Duration) -> String {
    format!("{} seconds", d.as_secs())
}

/// Writes the board's next cron boundaries, if it has a cron schedule; how many were written.
/// The caller holds the board's period lock ([`LOCK`]) in `tx`.
pub async fn extend_in(
    stmts: Statements,
    tx: &impl StatementClient,
    board: &BoardId,
) -> Result<u64, StoreError> {
    let ahead = interval(AHEAD);
    let Some(state) = stmts
        .query(tx, &STATE, [&board.as_str(), &ahead])
        .await?
        .into_iter()
        .next()
    else {
        return Ok(0);
    };
    let reset: String = state.try_get("reset")?;
    let Some(Reset::Cron(cron)) = Reset::parse(&reset) else {
        // The table's CHECK let through five fields croner does not read (a newer release's
        // syntax): leave the schedule to the release that wrote it.
        tracing::warn!(%board, reset, "not a cron schedule this release reads; not extended");
        return Ok(0);
    };
    let wall = |column: &str| -> Result<chrono::NaiveDateTime, StoreError> {
        let text: String = state.try_get(column)?;
        chrono::NaiveDateTime::parse_from_str(&text, WALL_CLOCK)
            .map_err(|e| StoreError::Internal(format!("{column} {text:?}: {e}")))
    };
    let (after, until) = (wall("after_local")?, wall("until_local")?);
    let written_ahead: i64 = state.try_get("ahead")?;
    let room = MAX_AHEAD.saturating_sub(usize::try_from(written_ahead).unwrap_or(MAX_AHEAD));
    let times: Vec<String> = cron
        .fire_times_after(after, room)
        .into_iter()
        .enumerate()
        // Always the next boundary, however far (a yearly schedule), then those within reach.
        .take_while(|(i, t)| *i == 0 || *t <= until)
        .map(|(_, t)| t.format(WALL_CLOCK).to_string())
        .collect();
    if times.is_empty() {
        return Ok(0);
    }
    Ok(stmts
        .execute(tx, &EXTEND, [&board.as_str(), &reset, &times])
        .await?)
}

/// The boards whose cron schedule runs short, at most `limit`.
pub async fn due(db: &Database, limit: i64) -> Result<Vec<BoardId>, StoreError> {
    let horizon = interval(LOW_HORIZON);
    let rows = db.query(&DUE, [&LOW_COUNT, &horizon, &limit]).await?;
    let mut due = Vec::with_capacity(rows.len());
    for r in rows {
        let raw: String = r.try_get(0)?;
        match BoardId::parse(&raw) {
            Ok(board) => due.push(board),
            Err(_) => tracing::warn!(
                board = raw,
                "skipping a schedule of a board that is not one"
            ),
        }
    }
    Ok(due)
}
