//! The source side as the reconciler and the rebuild read it: boards, keyset-paginated
//! chunks of a board's scores, and which members exist.

use std::collections::{HashMap, HashSet};

use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, sql};
use crate::domain::BoardId;

/// One row of `user_scores`: the intent the projection must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    pub user_id: String,
    pub score: i64,
    pub version: i64,
}

/// Up to `limit` boards that have source rows, in byte order, after `after` ("" for the first)
/// and, when `upto` is set, up to and including it. A stored board id that does not validate is
/// skipped with a warning (it could not be a Redis key); the page may then be shorter, so
/// callers page on with the last id of the raw page, returned second.
pub async fn boards_page(
    db: &Database,
    after: &str,
    upto: Option<&str>,
    limit: usize,
) -> Result<(Vec<BoardId>, Option<String>), StoreError> {
    let client = db.client().await?;
    let (_, rows) = db
        .bounded("reconcile_boards", client, async |c| {
            db.statements()
                .query(
                    c,
                    sql::RECONCILE_BOARDS,
                    &[
                        (&after, Type::TEXT),
                        (&upto, Type::TEXT),
                        (&(limit as i32), Type::INT4),
                    ],
                )
                .await
        })
        .await?;
    let mut boards = Vec::with_capacity(rows.len());
    let mut last = None;
    for row in rows {
        let raw: String = row.try_get(0)?;
        match BoardId::parse(&raw) {
            Ok(board) => boards.push(board),
            Err(e) => {
                tracing::warn!(board = raw, error = %e, "skipping a board id that cannot be a Redis key")
            }
        }
        last = Some(raw);
    }
    Ok((boards, last))
}

/// The last board the reconciler finished for `namespace`, if any.
pub async fn progress(db: &Database, namespace: &str) -> Result<Option<String>, StoreError> {
    let client = db.client().await?;
    let (_, row) = db
        .bounded("reconcile_progress", client, async |c| {
            db.statements()
                .query_opt(c, sql::RECONCILE_PROGRESS_GET, &[(&namespace, Type::TEXT)])
                .await
        })
        .await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// Records `board` as the last one the reconciler finished for `namespace`.
pub async fn record_progress(
    db: &Database,
    namespace: &str,
    board: &BoardId,
) -> Result<(), StoreError> {
    let client = db.client().await?;
    let _ = db
        .bounded("reconcile_progress", client, async |c| {
            db.statements()
                .execute(
                    c,
                    sql::RECONCILE_PROGRESS_SET,
                    &[(&namespace, Type::TEXT), (&board.as_str(), Type::TEXT)],
                )
                .await
        })
        .await?;
    Ok(())
}

/// Up to `limit` source rows of `board` after `cursor` ("" to start), in byte order.
pub async fn chunk(
    db: &Database,
    board: &BoardId,
    cursor: &str,
    limit: usize,
) -> Result<Vec<SourceRow>, StoreError> {
    let client = db.client().await?;
    let (_, rows) = db
        .bounded("reconcile_chunk", client, async |c| {
            // Typed parameters and the unnamed statement: one round trip per chunk, where
            // `query` with a string prepares first (two).
            c.query_typed(
                sql::RECONCILE_CHUNK,
                &[
                    (&board.as_str(), Type::TEXT),
                    (&cursor, Type::TEXT),
                    (&(limit as i64), Type::INT8),
                ],
            )
            .await
        })
        .await?;
    rows.iter()
        .map(|r| {
            Ok(SourceRow {
                user_id: r.try_get(0)?,
                score: r.try_get(1)?,
                version: r.try_get(2)?,
            })
        })
        .collect()
}

/// A source row read again, with whether the outbox row of its version is still pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecheckedRow {
    pub row: SourceRow,
    /// The projector has yet to write this version: its outbox row is neither published nor
    /// parked.
    pub pending: bool,
}

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
    let client = db.client().await?;
    let (_, rows) = db
        .bounded("reconcile_recheck", client, async |c| {
            db.statements()
                .query(
                    c,
                    sql::RECONCILE_RECHECK,
                    &[(&board.as_str(), Type::TEXT), (&users, Type::TEXT_ARRAY)],
                )
                .await
        })
        .await?;
    rows.iter()
        .map(|r| {
            let row = SourceRow {
                user_id: r.try_get(0)?,
                score: r.try_get(1)?,
                version: r.try_get(2)?,
            };
            Ok((
                row.user_id.clone(),
                RecheckedRow {
                    row,
                    pending: r.try_get(3)?,
                },
            ))
        })
        .collect()
}

/// The members of `users` that have a source row on `board`.
pub async fn existing(
    db: &Database,
    board: &BoardId,
    users: &[String],
) -> Result<HashSet<String>, StoreError> {
    if users.is_empty() {
        return Ok(HashSet::new());
    }
    let client = db.client().await?;
    let (_, rows) = db
        .bounded("reconcile_existing", client, async |c| {
            db.statements()
                .query(
                    c,
                    sql::RECONCILE_EXISTING,
                    &[(&board.as_str(), Type::TEXT), (&users, Type::TEXT_ARRAY)],
                )
                .await
        })
        .await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}
