//! Leaderboard reads from PostgreSQL: the authoritative answer (strong reads, and the fallback
//! when the projection lags), in exactly the order the projection gives.

use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, Op, Statement, Statements};
use crate::domain::{BoardId, MemberStanding, RankedEntry, UserId};

/// Parameters: board, offset, limit.
pub static TOP: Statement<3> = Statement::new(
    Op::ReadTop,
    include_str!("sql/reads/top.sql"),
    [Type::TEXT, Type::INT8, Type::INT8],
);

pub async fn top(
    db: &Database,
    board: &BoardId,
    offset: u64,
    limit: u64,
) -> Result<Vec<RankedEntry>, StoreError> {
    let rows = db
        .query(&TOP, [&board.as_str(), &(offset as i64), &(limit as i64)])
        .await?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            Ok(RankedEntry {
                rank: offset + i as u64 + 1,
                user_id: r.try_get(0)?,
                score: r.try_get(1)?,
            })
        })
        .collect()
}

/// Parameters: board, user.
pub static USER: Statement<2> = Statement::new(
    Op::ReadUser,
    include_str!("sql/reads/user.sql"),
    [Type::TEXT, Type::TEXT],
);

pub async fn member(
    db: &Database,
    board: &BoardId,
    user: &UserId,
) -> Result<Option<MemberStanding>, StoreError> {
    let row = db
        .query_opt(&USER, [&board.as_str(), &user.as_str()])
        .await?;
    row.map(|r| {
        Ok(MemberStanding {
            score: r.try_get(0)?,
            version: r.try_get(1)?,
            rank: r.try_get::<_, i64>(2)? as u64,
        })
    })
    .transpose()
}

// Parameters of both: board, score, user, radius. Both run in one round trip, timed as
// `read_around`.
pub static ABOVE: Statement<4> = Statement::new(
    Op::ReadAround,
    include_str!("sql/reads/above.sql"),
    [Type::TEXT, Type::INT8, Type::TEXT, Type::INT8],
);
pub static BELOW: Statement<4> = Statement::new(
    Op::ReadAround,
    include_str!("sql/reads/below.sql"),
    [Type::TEXT, Type::INT8, Type::TEXT, Type::INT8],
);

/// The member and up to `radius` members on each side, in rank order; None for an unknown
/// member.
pub async fn around(
    db: &Database,
    board: &BoardId,
    user: &UserId,
    radius: u64,
) -> Result<Option<Vec<RankedEntry>>, StoreError> {
    let Some(me) = member(db, board, user).await? else {
        return Ok(None);
    };
    let client = db.client().await?;
    let n = radius as i64;
    let (_, (above, below)) = db
        .bounded(Op::ReadAround, client, async |c| {
            let params: super::Params<'_, 4> = [&board.as_str(), &me.score, &user.as_str(), &n];
            let stmts = db.statements();
            let above = stmts.query_untimed(c, &ABOVE, params);
            let below = stmts.query_untimed(c, &BELOW, params);
            match stmts {
                // Both on one connection at once: pipelined.
                Statements::Prepared => tokio::try_join!(above, below),
                // A transaction pooler may hand the second to another server connection
                // mid-pipeline: one after the other.
                Statements::Unnamed => Ok((above.await?, below.await?)),
            }
        })
        .await?;
    let mut entries = Vec::with_capacity(above.len() + below.len() + 1);
    for (i, r) in above.iter().enumerate().rev() {
        entries.push(RankedEntry {
            rank: me.rank - i as u64 - 1,
            user_id: r.try_get(0)?,
            score: r.try_get(1)?,
        });
    }
    entries.push(RankedEntry {
        rank: me.rank,
        user_id: user.as_str().to_owned(),
        score: me.score,
    });
    for (i, r) in below.iter().enumerate() {
        entries.push(RankedEntry {
            rank: me.rank + i as u64 + 1,
            user_id: r.try_get(0)?,
            score: r.try_get(1)?,
        });
    }
    Ok(Some(entries))
}

/// Counts in [`Lag`] stop here: counting further would make stating freshness cost as much as
/// the backlog is large. A capped count says "at least this many".
pub const LAG_COUNT_CAP: i64 = 10_000;

/// How far behind one board's projection is (see `reads/freshness.sql`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Lag {
    /// The board's outbox rows committed and not yet projected, rows waiting for a retry
    /// included; at most [`LAG_COUNT_CAP`].
    pub pending: i64,
    /// The board's parked rows (the projector gave up on them: those members may be stale
    /// until the reconciler repairs them or an operator requeues the rows); at most the cap.
    pub parked: i64,
    /// Every committed outbox row (of any board) with an id up to this one is projected
    /// (parked rows count as not projected). A command still in flight may hold a lower id: it
    /// is not committed, so no reader can have seen it, but the value can then move back when
    /// it commits.
    pub projected_through: i64,
    /// Age of the board's oldest pending row; 0 when none.
    pub lag_ms: i64,
}

impl Lag {
    /// Whether `pending` or `parked` reached the cap (then they are lower bounds).
    pub fn capped(&self) -> bool {
        self.pending >= LAG_COUNT_CAP || self.parked >= LAG_COUNT_CAP
    }
}

/// Parameters: board, count cap.
pub static FRESHNESS: Statement<2> = Statement::new(
    Op::Freshness,
    include_str!("sql/reads/freshness.sql"),
    [Type::TEXT, Type::INT8],
);

pub async fn lag(db: &Database, board: &BoardId) -> Result<Lag, StoreError> {
    let row = db
        .query_one(&FRESHNESS, [&board.as_str(), &LAG_COUNT_CAP])
        .await?;
    let pending: i64 = row.try_get("pending")?;
    let lowest: Option<i64> = row.try_get("lowest_unpublished")?;
    let last_id: i64 = row.try_get("last_id")?;
    Ok(Lag {
        pending,
        parked: row.try_get("parked")?,
        projected_through: lowest.map_or(last_id, |id| id - 1),
        lag_ms: row.try_get::<_, Option<i64>>("lag_ms")?.unwrap_or(0).max(0),
    })
}
