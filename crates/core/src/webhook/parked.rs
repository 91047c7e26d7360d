//! Parked deliveries: events a lane gave up on after `dispatcher.max_attempts`, kept with the
//! body they were signed with. An operator lists them and requeues them (`lbctl webhook
//! parked`/`requeue`, `GET /v1/webhooks/{id}/parked`, `POST …/parked/requeue`); the dispatcher
//! claims the requeued ones by lease and delivers each once more: delivered, it is deleted;
//! failed, it is parked again until the next requeue. A requeued event arrives after the
//! events its lane delivered meanwhile (it is out of its board's order).

use std::time::Duration;

use serde::Serialize;
use tokio_postgres::types::Type;

use super::WebhookError;
use super::lane::truncate;
use crate::db::{Database, Op, Statement, StoreError};

/// Parameters: subscription, after, limit.
static LIST: Statement<3> = Statement::new(
    Op::WebhookParked,
    include_str!("sql/parked_list.sql"),
    [Type::TEXT, Type::INT8, Type::INT8],
);
/// Parameters: subscription, positions (empty: all).
static REQUEUE: Statement<2> = Statement::new(
    Op::WebhookParked,
    include_str!("sql/parked_requeue.sql"),
    [Type::TEXT, Type::INT8_ARRAY],
);
/// Parameters: holder, lease ms, limit.
static CLAIM: Statement<3> = Statement::new(
    Op::WebhookParked,
    include_str!("sql/parked_claim.sql"),
    [Type::TEXT, Type::INT8, Type::INT8],
);
/// Parameters: subscription, position, holder.
static DONE: Statement<3> = Statement::new(
    Op::WebhookParked,
    include_str!("sql/parked_done.sql"),
    [Type::TEXT, Type::INT8, Type::TEXT],
);
/// Parameters: subscription, position, holder, error.
static FAIL: Statement<4> = Statement::new(
    Op::WebhookParked,
    include_str!("sql/parked_fail.sql"),
    [Type::TEXT, Type::INT8, Type::TEXT, Type::TEXT],
);
static EXISTS: Statement<1> = Statement::new(
    Op::WebhookSubscription,
    include_str!("sql/get.sql"),
    [Type::TEXT],
);

/// Most parked deliveries one page lists.
pub const MAX_PAGE: i64 = 1_000;

/// One parked delivery as an operator reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Parked {
    pub position: i64,
    pub event_id: uuid::Uuid,
    pub kind: String,
    pub board: String,
    pub attempts: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub parked_at: String,
    /// Set while it waits for its one more delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeued_at: Option<String>,
}

async fn known(db: &Database, subscription: &str) -> Result<(), WebhookError> {
    match db.query_opt(&EXISTS, [&subscription]).await? {
        Some(_) => Ok(()),
        None => Err(WebhookError::Unknown),
    }
}

/// The parked deliveries of `subscription` after position `after`, at most `limit`.
pub async fn list(
    db: &Database,
    subscription: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<Parked>, WebhookError> {
    known(db, subscription).await?;
    let limit = limit.clamp(1, MAX_PAGE);
    let rows = db.query(&LIST, [&subscription, &after, &limit]).await?;
    rows.iter()
        .map(|r| {
            Ok(Parked {
                position: r.try_get("position")?,
                event_id: r.try_get("event_id")?,
                kind: r.try_get("kind")?,
                board: r.try_get("board_id")?,
                attempts: r.try_get("attempts")?,
                last_error: r.try_get("last_error")?,
                parked_at: r.try_get("parked_at")?,
                requeued_at: r.try_get("requeued_at")?,
            })
        })
        .collect::<Result<_, StoreError>>()
        .map_err(WebhookError::from)
}

/// Requeues the parked deliveries of `subscription` at `positions` (empty: all); returns how
/// many. Fix what made them fail first (`last_error`).
pub async fn requeue(
    db: &Database,
    subscription: &str,
    positions: &[i64],
) -> Result<u64, WebhookError> {
    known(db, subscription).await?;
    Ok(db.execute(&REQUEUE, [&subscription, &positions]).await?)
}

/// A requeued parked delivery leased to one claim.
#[derive(Debug, Clone)]
pub struct Requeued {
    pub subscription_id: String,
    pub position: i64,
    pub event_id: uuid::Uuid,
    pub kind: String,
    pub board: String,
    /// The event's JSON as it was first signed.
    pub body: String,
    pub attempts: i32,
    pub url: String,
    pub secret: String,
    pub holder: String,
}

/// Leases up to `limit` requeued parked deliveries to `holder`.
pub async fn claim(
    db: &Database,
    holder: &str,
    lease: Duration,
    limit: i64,
) -> Result<Vec<Requeued>, StoreError> {
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let rows = db.query(&CLAIM, [&holder, &lease_ms, &limit]).await?;
    rows.iter()
        .map(|r| {
            Ok(Requeued {
                subscription_id: r.try_get("subscription_id")?,
                position: r.try_get("position")?,
                event_id: r.try_get("event_id")?,
                kind: r.try_get("kind")?,
                board: r.try_get("board_id")?,
                body: r.try_get("body")?,
                attempts: r.try_get("attempts")?,
                url: r.try_get("url")?,
                secret: r.try_get("secret")?,
                holder: holder.to_owned(),
            })
        })
        .collect()
}

/// The requeued delivery went through: no longer parked.
pub async fn delivered(db: &Database, r: &Requeued) -> Result<bool, StoreError> {
    Ok(db
        .execute(&DONE, [&r.subscription_id, &r.position, &r.holder])
        .await?
        > 0)
}

/// The requeued delivery failed: parked again until the next requeue.
pub async fn failed(db: &Database, r: &Requeued, error: &str) -> Result<bool, StoreError> {
    let error = truncate(error);
    Ok(db
        .execute(&FAIL, [&r.subscription_id, &r.position, &r.holder, &error])
        .await?
        > 0)
}
