//! Periods (issue 22): a board declared with a `reset` (`definition::Reset`) starts a new
//! period on its schedule or when an admin asks, and each period is a board of its own,
//! `<board>~<period id>` (`BoardId::in_period`), in every table and in Redis. Which period a
//! command lands in is decided in its statement (`lb_command_board`, migration V7); this module
//! answers which period is current (for reads) and opens one by hand.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_postgres::types::Type;

use crate::db::{Database, Op, Statement, StoreError};
use crate::domain::BoardId;

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
    let Some(row) = db.query_opt(&RESET, [&board.as_str(), &actor]).await? else {
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
