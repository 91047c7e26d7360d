//! Leaderboard reads from PostgreSQL: the authoritative answer (strong reads, and the fallback
//! when the projection lags), in exactly the order the projection gives (`model::Order`:
//! `(score, col2, col3, tie, user_id)`, greater first on descending boards, smaller first on
//! ascending ones). Each read is one statement (`sql/reads/<read>_<desc|asc>.sql`): the page and the
//! counts that rank it (`ranking.rs`) come from one snapshot.

use tokio_postgres::Row as PgRow;
use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::row::key;
use super::{Database, Op, Statement};
use crate::model::{BoardId, Columns, MemberStanding, UserId};
use crate::model::{Order, Sort};
use crate::ranking::{self, Bases, Cursor, Page, RankMode, Row, Standings};

/// A statement for each direction of a board's order: the SQL differs in its comparisons and
/// `ORDER BY` only, so that each direction reads `user_scores_visible_rank` in one direction.
pub struct ByOrder<const N: usize> {
    pub descending: Statement<N>,
    pub ascending: Statement<N>,
}

impl<const N: usize> ByOrder<N> {
    fn of(&self, order: Order) -> &Statement<N> {
        match order.sort {
            Sort::Descending => &self.descending,
            Sort::Ascending => &self.ascending,
        }
    }
}

/// Parameters: board, offset, limit, dense.
pub static TOP: ByOrder<4> = ByOrder {
    descending: Statement::new(
        Op::ReadTop,
        include_str!("sql/reads/top_desc.sql"),
        [Type::TEXT, Type::INT8, Type::INT8, Type::BOOL],
    ),
    ascending: Statement::new(
        Op::ReadTop,
        include_str!("sql/reads/top_asc.sql"),
        [Type::TEXT, Type::INT8, Type::INT8, Type::BOOL],
    ),
};

/// The parameters of `after_*.sql`.
const AFTER_TYPES: [Type; 8] = [
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::BOOL,
];

/// Parameters: board, cursor score, col2, col3, tie, user id, limit, dense.
pub static AFTER: ByOrder<8> = ByOrder {
    descending: Statement::new(
        Op::ReadTop,
        include_str!("sql/reads/after_desc.sql"),
        AFTER_TYPES,
    ),
    ascending: Statement::new(
        Op::ReadTop,
        include_str!("sql/reads/after_asc.sql"),
        AFTER_TYPES,
    ),
};

/// Parameters: board, user, radius, dense.
pub static AROUND: ByOrder<4> = ByOrder {
    descending: Statement::new(
        Op::ReadAround,
        include_str!("sql/reads/around_desc.sql"),
        [Type::TEXT, Type::TEXT, Type::INT8, Type::BOOL],
    ),
    ascending: Statement::new(
        Op::ReadAround,
        include_str!("sql/reads/around_asc.sql"),
        [Type::TEXT, Type::TEXT, Type::INT8, Type::BOOL],
    ),
};

/// Parameters: board, user ids, dense.
pub static USERS: ByOrder<3> = ByOrder {
    descending: Statement::new(
        Op::ReadUsers,
        include_str!("sql/reads/users_desc.sql"),
        [Type::TEXT, Type::TEXT_ARRAY, Type::BOOL],
    ),
    ascending: Statement::new(
        Op::ReadUsers,
        include_str!("sql/reads/users_asc.sql"),
        [Type::TEXT, Type::TEXT_ARRAY, Type::BOOL],
    ),
};
/// The same statements for one member (`users/{user_id}`), timed as `read_user`.
pub static USER: ByOrder<3> = ByOrder {
    descending: Statement::new(
        Op::ReadUser,
        include_str!("sql/reads/users_desc.sql"),
        [Type::TEXT, Type::TEXT_ARRAY, Type::BOOL],
    ),
    ascending: Statement::new(
        Op::ReadUser,
        include_str!("sql/reads/users_asc.sql"),
        [Type::TEXT, Type::TEXT_ARRAY, Type::BOOL],
    ),
};

fn count(row: &PgRow, name: &str) -> Result<u64, StoreError> {
    Ok(row.try_get::<_, Option<i64>>(name)?.unwrap_or(0).max(0) as u64)
}

/// A page from the rows of a statement with the columns of `top_desc.sql`.
fn page(
    rows: &[PgRow],
    mode: RankMode,
    columns: Columns,
    limit: Option<u64>,
) -> Result<Option<Page>, StoreError> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let total = count(first, "total")?;
    let bases = Bases {
        ordinal: count(first, "ahead")? + 1,
        competition: count(first, "better")? + 1,
        dense: (mode == RankMode::Dense)
            .then(|| count(first, "dense_better").map(|d| d + 1))
            .transpose()?,
    };
    let mut page_rows = Vec::with_capacity(rows.len());
    for r in rows {
        // The one row of an empty page carries the total only.
        let Some(user_id) = r.try_get::<_, Option<String>>("user_id")? else {
            continue;
        };
        page_rows.push(Row {
            user_id,
            score: r.try_get("score")?,
            key: key(r)?,
            metadata: r.try_get("metadata")?,
        });
    }
    Ok(Some(Page::new(
        mode, total, bases, columns, page_rows, limit,
    )))
}

fn dense(mode: RankMode) -> bool {
    mode == RankMode::Dense
}

/// A page by position: `limit` entries from position `offset + 1` on.
pub async fn top(
    db: &Database,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    offset: u64,
    limit: u64,
) -> Result<Page, StoreError> {
    let rows = db
        .query(
            TOP.of(order),
            [
                &board.as_str(),
                &(offset as i64),
                &(limit as i64),
                &dense(mode),
            ],
        )
        .await?;
    Ok(page(&rows, mode, order.columns, Some(limit))?.unwrap_or_else(|| empty(mode)))
}

/// A page of `limit` entries just after `cursor`'s place in the board's order.
pub async fn after(
    db: &Database,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    cursor: &Cursor,
    limit: u64,
) -> Result<Page, StoreError> {
    let rows = db
        .query(
            AFTER.of(order),
            [
                &board.as_str(),
                &cursor.score,
                &cursor.key.rest[0],
                &cursor.key.rest[1],
                &cursor.key.tie,
                &cursor.user_id.as_str(),
                &(limit as i64),
                &dense(mode),
            ],
        )
        .await?;
    Ok(page(&rows, mode, order.columns, Some(limit))?.unwrap_or_else(|| empty(mode)))
}

fn empty(mode: RankMode) -> Page {
    Page::new(
        mode,
        0,
        Bases {
            ordinal: 1,
            competition: 1,
            dense: Some(1),
        },
        Columns::ONE,
        Vec::new(),
        None,
    )
}

/// The member and up to `radius` entries on each side of it, in one statement; None for a
/// member not on the board.
pub async fn around(
    db: &Database,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    user: &UserId,
    radius: u64,
) -> Result<Option<Page>, StoreError> {
    let rows = db
        .query(
            AROUND.of(order),
            [
                &board.as_str(),
                &user.as_str(),
                &(radius as i64),
                &dense(mode),
            ],
        )
        .await?;
    Ok(page(&rows, mode, order.columns, None)?.filter(|p| !p.entries.is_empty()))
}

async fn standings(
    db: &Database,
    statements: &ByOrder<3>,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    users: &[UserId],
) -> Result<Standings, StoreError> {
    let ids: Vec<&str> = users.iter().map(UserId::as_str).collect();
    let rows = db
        .query(statements.of(order), [&board.as_str(), &ids, &dense(mode)])
        .await?;
    let mut total = 0;
    let mut members = Vec::with_capacity(rows.len());
    for r in &rows {
        total = count(r, "total")?;
        let Some(user_id) = r.try_get::<_, Option<String>>("user_id")? else {
            continue;
        };
        let bases = Bases {
            ordinal: count(r, "ahead")? + 1,
            competition: count(r, "better")? + 1,
            dense: dense(mode)
                .then(|| count(r, "dense_better").map(|d| d + 1))
                .transpose()?,
        };
        members.push(MemberStanding {
            entry: ranking::entry(
                mode,
                total,
                bases,
                order.columns,
                user_id,
                r.try_get("score")?,
                key(r)?,
                r.try_get("metadata")?,
            ),
            version: r.try_get("version")?,
        });
    }
    Ok(Standings { members, total })
}

/// The members among `users` that are on the board, in board order, each with its rank.
pub async fn users(
    db: &Database,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    users: &[UserId],
) -> Result<Standings, StoreError> {
    standings(db, &USERS, board, order, mode, users).await
}

/// One member with its rank, and the board's total.
pub async fn member(
    db: &Database,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    user: &UserId,
) -> Result<(Option<MemberStanding>, u64), StoreError> {
    let s = standings(db, &USER, board, order, mode, std::slice::from_ref(user)).await?;
    Ok((s.members.into_iter().next(), s.total))
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
