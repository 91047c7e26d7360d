//! The outbox as the projector sees it: claim, publish, fail (retry / park), release,
//! retention, and the operator's view of parked rows.

use std::time::Duration;

use tokio_postgres::Row;
use tokio_postgres::types::Type;
use uuid::Uuid;

use super::errors::StoreError;
use super::{Database, Op, Statement, StatementClient, Statements};
use crate::model::{BoardId, EntryChange, EventId, ProjectionEntry, UserId};

/// One claimed row. `entry` is an error when the row's ids do not validate (they become Redis
/// keys, so such a row is failed and parked rather than projected).
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: i64,
    pub attempts: i32,
    pub entry: Result<ProjectionEntry, String>,
    /// The trace context of the request that produced the row, if it had one.
    pub traceparent: Option<String>,
}

/// Capped exponential back-off and parking of rows that failed.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub base_ms: u64,
    pub max_ms: u64,
    pub max_attempts: u32,
}

fn claimed(row: &Row) -> Result<Claimed, tokio_postgres::Error> {
    let id: i64 = row.try_get("id")?;
    let event_id: Uuid = row.try_get("event_id")?;
    let board: String = row.try_get("board_id")?;
    let user: String = row.try_get("user_id")?;
    let score: i64 = row.try_get("absolute_score")?;
    let version: i64 = row.try_get("score_version")?;
    let key = super::row::key(row)?;
    let metadata: Option<String> = row.try_get("metadata")?;
    let moderation: Option<String> = row.try_get("moderation")?;
    let change = EntryChange::parse(moderation.as_deref());
    let entry = match (BoardId::parse_stored(&board), UserId::parse(&user), change) {
        (_, _, None) => Err(format!(
            "row cannot be projected: unknown moderation {moderation:?}"
        )),
        (Ok(board), Ok(user_id), Some(change)) => Ok(ProjectionEntry {
            outbox_id: id,
            event_id: EventId::from(event_id),
            board,
            user_id,
            score,
            version,
            key,
            metadata,
            change,
        }),
        (Err(e), _, _) | (_, Err(e), _) => Err(format!("row cannot be projected: {e}")),
    };
    Ok(Claimed {
        id,
        attempts: row.try_get("attempts")?,
        entry,
        traceparent: row.try_get("traceparent")?,
    })
}

fn claimed_rows(rows: &[Row]) -> Result<Vec<Claimed>, StoreError> {
    let mut out = rows.iter().map(claimed).collect::<Result<Vec<_>, _>>()?;
    // RETURNING has no order; apply in commit order so a member's versions arrive ascending.
    out.sort_by_key(|c| c.id);
    Ok(out)
}

/// Parameters: limit.
pub static CLAIM: Statement<1> = Statement::new(
    Op::OutboxClaim,
    include_str!("sql/outbox/claim.sql"),
    [Type::INT8],
);

/// Transactional mode: locks the next due rows inside the caller's transaction.
pub async fn claim(
    client: &impl StatementClient,
    stmts: Statements,
    limit: usize,
) -> Result<Vec<Claimed>, StoreError> {
    let rows = stmts.query(client, &CLAIM, [&(limit as i64)]).await?;
    claimed_rows(&rows)
}

/// Parameters: limit, owner, lease (ms).
pub static LEASE: Statement<3> = Statement::new(
    Op::OutboxLease,
    include_str!("sql/outbox/lease.sql"),
    [Type::INT8, Type::TEXT, Type::FLOAT8],
);

/// Leased mode: reserves the next due rows for `owner` until now() + `lease` (database clock).
pub async fn claim_leased(
    client: &impl StatementClient,
    stmts: Statements,
    limit: usize,
    owner: &str,
    lease: Duration,
) -> Result<Vec<Claimed>, StoreError> {
    let lease_ms = lease.as_millis() as f64;
    let rows = stmts
        .query(client, &LEASE, [&(limit as i64), &owner, &lease_ms])
        .await?;
    claimed_rows(&rows)
}

/// Parameters: ids, owner (NULL in transactional mode).
pub static PUBLISH: Statement<2> = Statement::new(
    Op::OutboxPublish,
    include_str!("sql/outbox/publish.sql"),
    [Type::INT8_ARRAY, Type::TEXT],
);

/// Marks rows published. `owner`: leased mode, only rows still leased to it.
pub async fn publish(
    client: &impl StatementClient,
    stmts: Statements,
    ids: &[i64],
    owner: Option<&str>,
) -> Result<u64, StoreError> {
    if ids.is_empty() {
        return Ok(0);
    }
    Ok(stmts.execute(client, &PUBLISH, [&ids, &owner]).await?)
}

/// Parameters: ids, errors, retry base (ms), retry max (ms), max attempts, owner (NULL in
/// transactional mode).
pub static FAIL: Statement<6> = Statement::new(
    Op::OutboxFail,
    include_str!("sql/outbox/fail.sql"),
    [
        Type::INT8_ARRAY,
        Type::TEXT_ARRAY,
        Type::FLOAT8,
        Type::FLOAT8,
        Type::INT4,
        Type::TEXT,
    ],
);

/// Charges one failed attempt to each row; returns how many of them this parked.
pub async fn fail(
    client: &impl StatementClient,
    stmts: Statements,
    failures: &[(i64, String)],
    policy: RetryPolicy,
    owner: Option<&str>,
) -> Result<u64, StoreError> {
    if failures.is_empty() {
        return Ok(0);
    }
    let ids: Vec<i64> = failures.iter().map(|(id, _)| *id).collect();
    let errors: Vec<&str> = failures.iter().map(|(_, e)| e.as_str()).collect();
    let rows = stmts
        .query(
            client,
            &FAIL,
            [
                &ids,
                &errors,
                &(policy.base_ms as f64),
                &(policy.max_ms as f64),
                &(policy.max_attempts as i32),
                &owner,
            ],
        )
        .await?;
    let mut parked = 0;
    for row in &rows {
        if row.try_get::<_, bool>("parked")? {
            parked += 1;
        }
    }
    Ok(parked)
}

/// Parameters: ids, owner.
pub static RELEASE: Statement<2> = Statement::new(
    Op::OutboxRelease,
    include_str!("sql/outbox/release.sql"),
    [Type::INT8_ARRAY, Type::TEXT],
);

/// Leased mode: gives rows back without charging an attempt.
pub async fn release(
    client: &impl StatementClient,
    stmts: Statements,
    ids: &[i64],
    owner: &str,
) -> Result<u64, StoreError> {
    if ids.is_empty() {
        return Ok(0);
    }
    Ok(stmts.execute(client, &RELEASE, [&ids, &owner]).await?)
}

/// The transaction-level advisory lock of retention; true when taken.
pub static RETENTION_LOCK: Statement<0> = Statement::new(
    Op::RetentionLock,
    include_str!("sql/retention/lock.sql"),
    [],
);
// Parameters of both: age (ms), batch.
pub static RETENTION_OUTBOX: Statement<2> = Statement::new(
    Op::RetentionOutbox,
    include_str!("sql/retention/outbox.sql"),
    [Type::FLOAT8, Type::INT8],
);
pub static RETENTION_EVENTS: Statement<2> = Statement::new(
    Op::RetentionEvents,
    include_str!("sql/retention/events.sql"),
    [Type::FLOAT8, Type::INT8],
);

/// What one retention pass deleted; `skipped` when another projector held the lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub outbox_deleted: u64,
    pub events_deleted: u64,
    pub skipped: bool,
}

/// Deletes published outbox rows older than `published` (and, when set, events older than
/// `events`) in batches of `batch`, each in its own short transaction under a
/// transaction-level advisory lock, so one projector at a time does it. Stops at `max_batches`
/// so a huge backlog is worked off over several passes rather than in one long one.
pub async fn retention_pass(
    db: &Database,
    published: Option<Duration>,
    events: Option<Duration>,
    batch: usize,
    max_batches: usize,
) -> Result<RetentionReport, StoreError> {
    let mut report = RetentionReport::default();
    let jobs = [
        (published, &RETENTION_OUTBOX, true),
        (events, &RETENTION_EVENTS, false),
    ];
    for (age, statement, is_outbox) in jobs {
        let Some(age) = age else { continue };
        for _ in 0..max_batches {
            let mut client = db.client().await?;
            let tx = client.transaction().await?;
            let stmts = db.statements();
            let locked: bool = stmts
                .query_one(&tx, &RETENTION_LOCK, [])
                .await?
                .try_get(0)?;
            if !locked {
                tx.commit().await?;
                report.skipped = true;
                return Ok(report);
            }
            let deleted = stmts
                .execute(&tx, statement, [&(age.as_millis() as f64), &(batch as i64)])
                .await?;
            tx.commit().await?;
            if is_outbox {
                report.outbox_deleted += deleted;
            } else {
                report.events_deleted += deleted;
            }
            if deleted < batch as u64 {
                break;
            }
        }
    }
    Ok(report)
}

/// A parked row as `lbctl parked list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ParkedRow {
    pub id: i64,
    pub event_id: Uuid,
    pub board: String,
    pub user_id: String,
    pub score: i64,
    pub version: i64,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub parked_at_ms: i64,
}

/// Parameters: limit.
pub static PARKED_LIST: Statement<1> = Statement::new(
    Op::ParkedList,
    include_str!("sql/parked/list.sql"),
    [Type::INT8],
);

pub async fn list_parked(db: &Database, limit: usize) -> Result<Vec<ParkedRow>, StoreError> {
    let rows = db.query(&PARKED_LIST, [&(limit as i64)]).await?;
    rows.iter()
        .map(|r| {
            Ok(ParkedRow {
                id: r.try_get("id")?,
                event_id: r.try_get("event_id")?,
                board: r.try_get("board_id")?,
                user_id: r.try_get("user_id")?,
                score: r.try_get("absolute_score")?,
                version: r.try_get("score_version")?,
                attempts: r.try_get("attempts")?,
                last_error: r.try_get("last_error")?,
                parked_at_ms: r.try_get("parked_at_ms")?,
            })
        })
        .collect()
}

/// Parameters: ids (or NULL), board (or NULL).
pub static PARKED_REQUEUE: Statement<2> = Statement::new(
    Op::ParkedRequeue,
    include_str!("sql/parked/requeue.sql"),
    [Type::INT8_ARRAY, Type::TEXT],
);

/// Puts parked rows back in the claim (all of them, or those with the given ids or board).
pub async fn requeue_parked(
    db: &Database,
    ids: Option<&[i64]>,
    board: Option<&str>,
) -> Result<u64, StoreError> {
    let ids = ids.map(<[i64]>::to_vec);
    db.execute(&PARKED_REQUEUE, [&ids, &board]).await
}
