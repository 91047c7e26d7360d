//! The source side as the reconciler and the rebuild read it: boards, keyset-paginated
//! chunks of a board's scores, and which members exist.

use std::collections::{HashMap, HashSet};

use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, Op, Statement};
use crate::model::{BoardId, Key};

/// One row of `user_scores`: the intent the projection must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    pub user_id: String,
    pub score: i64,
    pub version: i64,
    /// The member's other columns and tie (`model::Key`).
    pub key: Key,
    /// The entry's metadata as JSON text.
    pub metadata: Option<String>,
}

impl SourceRow {
    fn from_row(r: &tokio_postgres::Row) -> Result<Self, tokio_postgres::Error> {
        Ok(SourceRow {
            user_id: r.try_get("user_id")?,
            score: r.try_get("score")?,
            version: r.try_get("version")?,
            key: super::row::key(r)?,
            metadata: r.try_get("metadata")?,
        })
    }
}

/// Parameters: after, up to (or NULL), limit.
pub static BOARDS: Statement<3> = Statement::new(
    Op::ReconcileBoards,
    include_str!("sql/reconcile/boards.sql"),
    [Type::TEXT, Type::TEXT, Type::INT4],
);

/// Up to `limit` boards that have source rows, in byte order, after `after` ("" for the first)
/// and, when `upto` is set, up to and including it; archived periods (migration V8) are left
/// out. A stored board id that does not validate is skipped with a warning (it could not be a Redis key); the page may then be shorter, so
/// callers page on with the last id of the raw page, returned second.
pub async fn boards_page(
    db: &Database,
    after: &str,
    upto: Option<&str>,
    limit: usize,
) -> Result<(Vec<BoardId>, Option<String>), StoreError> {
    let rows = db.query(&BOARDS, [&after, &upto, &(limit as i32)]).await?;
    let mut boards = Vec::with_capacity(rows.len());
    let mut last = None;
    for row in rows {
        let raw: String = row.try_get(0)?;
        let archived: bool = row.try_get(1)?;
        match BoardId::parse_stored(&raw) {
            // Read from PostgreSQL, its keys dropped: nothing to compare or repair.
            Ok(_) if archived => {}
            Ok(board) => boards.push(board),
            Err(e) => {
                tracing::warn!(board = raw, error = %e, "skipping a board id that cannot be a Redis key")
            }
        }
        last = Some(raw);
    }
    Ok((boards, last))
}

/// Parameters: board.
pub static BOARD_EXISTS: Statement<1> = Statement::new(
    Op::ReconcileBoards,
    include_str!("sql/reconcile/board_exists.sql"),
    [Type::TEXT],
);

/// Whether `board` has any source row, hidden ones included (`reconcile/board_exists.sql`).
pub async fn board_exists(db: &Database, board: &BoardId) -> Result<bool, StoreError> {
    Ok(db
        .query_one(&BOARD_EXISTS, [&board.as_str()])
        .await?
        .try_get("exists")?)
}

/// Parameters: namespace.
pub static PROGRESS_GET: Statement<1> = Statement::new(
    Op::ReconcileProgress,
    include_str!("sql/reconcile/progress_get.sql"),
    [Type::TEXT],
);

/// The last board the reconciler finished for `namespace`, if any.
pub async fn progress(db: &Database, namespace: &str) -> Result<Option<String>, StoreError> {
    let row = db.query_opt(&PROGRESS_GET, [&namespace]).await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// Parameters: namespace, board.
pub static PROGRESS_SET: Statement<2> = Statement::new(
    Op::ReconcileProgressSet,
    include_str!("sql/reconcile/progress_set.sql"),
    [Type::TEXT, Type::TEXT],
);

/// Records `board` as the last one the reconciler finished for `namespace`.
pub async fn record_progress(
    db: &Database,
    namespace: &str,
    board: &BoardId,
) -> Result<(), StoreError> {
    db.execute(&PROGRESS_SET, [&namespace, &board.as_str()])
        .await?;
    Ok(())
}

/// Parameters: board, cursor, limit. Always the unnamed statement with typed parameters: one
/// round trip per chunk, where a statement prepared on first use costs two on that call.
pub static CHUNK: Statement<3> = Statement::new(
    Op::ReconcileChunk,
    include_str!("sql/reconcile/chunk.sql"),
    [Type::TEXT, Type::TEXT, Type::INT8],
)
.unnamed();

/// Up to `limit` source rows of `board` after `cursor` ("" to start), in byte order.
pub async fn chunk(
    db: &Database,
    board: &BoardId,
    cursor: &str,
    limit: usize,
) -> Result<Vec<SourceRow>, StoreError> {
    let rows = db
        .query(&CHUNK, [&board.as_str(), &cursor, &(limit as i64)])
        .await?;
    rows.iter().map(|r| Ok(SourceRow::from_row(r)?)).collect()
}

/// Where the chunk after `rows` starts (its last user id), or None when `rows` was the board's
/// last chunk (shorter than `limit`). With [`chunk_after`], a caller reads the next chunk while
/// it works on this one.
pub fn next_cursor(rows: &[SourceRow], limit: usize) -> Option<String> {
    rows.last()
        .filter(|_| rows.len() == limit)
        .map(|last| last.user_id.clone())
}

/// The chunk after `cursor` ([`next_cursor`]); an empty one, without a query, for None.
pub async fn chunk_after(
    db: &Database,
    board: &BoardId,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Vec<SourceRow>, StoreError> {
    match cursor {
        Some(cursor) => chunk(db, board, cursor, limit).await,
        None => Ok(Vec::new()),
    }
}

/// A source row read again, with whether the outbox row of its version is still pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecheckedRow {
    pub row: SourceRow,
    /// The projector has yet to write this version: its outbox row is neither published nor
    /// parked.
    pub pending: bool,
}

/// Parameters: board, users.
pub static RECHECK: Statement<2> = Statement::new(
    Op::ReconcileRecheck,
    include_str!("sql/reconcile/recheck.sql"),
    [Type::TEXT, Type::TEXT_ARRAY],
);

/// The source rows of those of `users` that have one on `board`, by user id, each with whether
/// its version is still pending in the outbox; one statement, so one snapshot for both.
pub async fn recheck(
    db: &Database,
    board: &BoardId,
    users: &[String],
) -> Result<HashMap<String, RecheckedRow>, StoreError> {
    if users.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = db.query(&RECHECK, [&board.as_str(), &users]).await?;
    rows.iter()
        .map(|r| {
            let row = SourceRow::from_row(r)?;
            Ok((
                row.user_id.clone(),
                RecheckedRow {
                    row,
                    pending: r.try_get("pending")?,
                },
            ))
        })
        .collect()
}

/// Parameters: board, users.
pub static EXISTING: Statement<2> = Statement::new(
    Op::ReconcileExisting,
    include_str!("sql/reconcile/existing.sql"),
    [Type::TEXT, Type::TEXT_ARRAY],
);

/// The members of `users` that have a source row on `board`.
pub async fn existing(
    db: &Database,
    board: &BoardId,
    users: &[String],
) -> Result<HashSet<String>, StoreError> {
    if users.is_empty() {
        return Ok(HashSet::new());
    }
    let rows = db.query(&EXISTING, [&board.as_str(), &users]).await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}
