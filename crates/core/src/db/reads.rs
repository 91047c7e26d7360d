//! Leaderboard reads from PostgreSQL: the authoritative answer (strong reads, and the fallback
//! when the projection lags), in exactly the order the projection gives.

use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, Statements, sql};
use crate::domain::{BoardId, MemberStanding, RankedEntry, UserId};

pub async fn top(
    db: &Database,
    board: &BoardId,
    offset: u64,
    limit: u64,
) -> Result<Vec<RankedEntry>, StoreError> {
    let client = db.client().await?;
    let stmts = db.statements();
    let (_, rows) = db
        .bounded("read_top", client, async |c| {
            stmts
                .query(
                    c,
                    sql::READ_TOP,
                    &[
                        (&board.as_str(), Type::TEXT),
                        (&(offset as i64), Type::INT8),
                        (&(limit as i64), Type::INT8),
                    ],
                )
                .await
        })
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

pub async fn member(
    db: &Database,
    board: &BoardId,
    user: &UserId,
) -> Result<Option<MemberStanding>, StoreError> {
    let client = db.client().await?;
    let (_, row) = db
        .bounded("read_user", client, async |c| {
            db.statements()
                .query_opt(
                    c,
                    sql::READ_USER,
                    &[(&board.as_str(), Type::TEXT), (&user.as_str(), Type::TEXT)],
                )
                .await
        })
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
        .bounded("read_around", client, async |c| {
            let params = [
                (
                    &board.as_str() as &(dyn tokio_postgres::types::ToSql + Sync),
                    Type::TEXT,
                ),
                (&me.score, Type::INT8),
                (&user.as_str(), Type::TEXT),
                (&n, Type::INT8),
            ];
            let stmts = db.statements();
            let above = stmts.query(c, sql::READ_ABOVE, &params);
            let below = stmts.query(c, sql::READ_BELOW, &params);
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

/// How far behind one board's projection is (see `freshness.sql`).
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

pub async fn lag(db: &Database, board: &BoardId) -> Result<Lag, StoreError> {
    let client = db.client().await?;
    let (_, row) = db
        .bounded("freshness", client, async |c| {
            db.statements()
                .query_one(
                    c,
                    sql::FRESHNESS,
                    &[(&board.as_str(), Type::TEXT), (&LAG_COUNT_CAP, Type::INT8)],
                )
                .await
        })
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
