use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, sql};

/// Counts in [`OutboxStatus`] stop here (`outbox_status.sql`): sampled by every daemon every few
/// seconds, they must cost the same with ten million rows pending as with ten.
pub const STATUS_COUNT_CAP: i64 = 100_000;

/// The outbox as `lbctl status` and the outbox gauges show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct OutboxStatus {
    /// Rows waiting to be projected, counted up to [`STATUS_COUNT_CAP`].
    pub pending: i64,
    /// Rows taken out of the claim after too many failed attempts, counted up to the cap.
    pub parked: i64,
    /// Age of the oldest pending row by the database clock; None when nothing is pending.
    pub oldest_pending_age_ms: Option<i64>,
}

pub async fn outbox_status(db: &Database) -> Result<OutboxStatus, StoreError> {
    let client = db.client().await?;
    let (_, row) = db
        .bounded("outbox_status", client, async |c| {
            db.statements()
                .query_one(c, sql::OUTBOX_STATUS, &[(&STATUS_COUNT_CAP, Type::INT8)])
                .await
        })
        .await?;
    Ok(OutboxStatus {
        pending: row.try_get("pending")?,
        parked: row.try_get("parked")?,
        oldest_pending_age_ms: row.try_get("oldest_pending_age_ms")?,
    })
}
