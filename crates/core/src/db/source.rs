//! The source side as the reconciler and the rebuild read it: boards, keyset-paginated
//! chunks of a board's scores (a pass), all of a board's scores in its order from one snapshot
//! (a rebuild), and which members exist.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use deadpool_postgres::Object;
use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, Op, Statement, timed};
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

/// Parameters: board. Bound to a portal in a transaction of its own ([`scan_in_order`]).
pub static IN_ORDER: Statement<1> = Statement::new(
    Op::ReconcileChunk,
    include_str!("sql/reconcile/in_order.sql"),
    [Type::TEXT],
);

/// What [`scan_in_order`] hands each chunk to (a rebuild's writer).
pub trait Chunks {
    type Error: From<StoreError>;
    /// Takes one chunk; an error stops the scan and is answered as it is.
    fn take(&mut self, rows: &[SourceRow]) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Every visible source row of `board` in the board's order, from one snapshot, handed to
/// `sink` a chunk of `limit` rows at a time; answers the rows read. The next chunk is fetched
/// while `sink` takes this one, so a rebuild takes about the longer of the two, not their sum.
///
/// Why one snapshot: in the board's order, pages that are each a statement of their own would
/// read a row whose score moves while the scan runs twice or, moving into the part already
/// read, not at all (keyset pages in user-id order never miss one, and the rebuild read those).
/// One statement bound to a portal reads from the snapshot it started with, to its last row;
/// PostgreSQL's vacuum keeps the rows that snapshot can see for as long as the scan runs
/// (seconds for a board of a million users; docs/reconciler.md gives the figures).
pub async fn scan_in_order<C: Chunks>(
    db: &Database,
    board: &BoardId,
    limit: usize,
    sink: &mut C,
) -> Result<u64, C::Error> {
    let mut client = db.client().await?;
    let outcome = scan_on(&mut client, db, board, limit, sink).await;
    if outcome.is_err() {
        // A fetch may still be in flight (it timed out, or `sink` failed while it ran), so the
        // connection's state is unknown: it leaves the pool rather than serve the next caller.
        drop(Object::take(client));
    }
    outcome
}

async fn scan_on<C: Chunks>(
    client: &mut Object,
    db: &Database,
    board: &BoardId,
    limit: usize,
    sink: &mut C,
) -> Result<u64, C::Error> {
    let bound = db.round_trip_timeout();
    // A portal lives in a transaction (read only: the scan writes nothing).
    let tx = within(bound, client.build_transaction().read_only(true).start()).await?;
    // A named statement even behind a transaction pooler: it lives and is closed inside this
    // one transaction, which the pooler keeps on one server connection.
    let statement = within(bound, tx.prepare_typed(IN_ORDER.sql(), IN_ORDER.types())).await?;
    let portal = within(bound, tx.bind(&statement, &[&board.as_str()])).await?;
    let max_rows = i32::try_from(limit).unwrap_or(i32::MAX);
    let fetch = async || -> Result<Vec<SourceRow>, StoreError> {
        let rows = timed(
            IN_ORDER.op(),
            within(bound, tx.query_portal(&portal, max_rows)),
        )
        .await?;
        Ok(rows
            .iter()
            .map(SourceRow::from_row)
            .collect::<Result<_, _>>()?)
    };
    let mut read = 0_u64;
    let mut rows = fetch().await?;
    while !rows.is_empty() {
        let more = rows.len() >= limit;
        let next = async { if more { fetch().await } else { Ok(Vec::new()) } };
        let (done, next) = tokio::join!(sink.take(&rows), next);
        done?;
        read += rows.len() as u64;
        rows = next?;
    }
    // Closed before the commit, inside the transaction (see the statement's comment above).
    drop(portal);
    drop(statement);
    within(bound, tx.commit()).await?;
    Ok(read)
}

/// One round trip of a transaction this module holds, within the client-side bound.
async fn within<T>(
    bound: Duration,
    call: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, StoreError> {
    match tokio::time::timeout(bound, call).await {
        Ok(outcome) => Ok(outcome?),
        Err(_) => Err(StoreError::Unavailable(format!(
            "no answer from the database within {bound:?}"
        ))),
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
