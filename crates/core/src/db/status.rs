use tokio_postgres::types::Type;

use super::errors::StoreError;
use super::{Database, Op, Statement};

/// The gauges' sample; the parameter is the count cap.
pub static STATUS: Statement<1> = Statement::new(
    Op::OutboxStatus,
    include_str!("sql/outbox/status.sql"),
    [Type::INT8],
);

/// Counts in [`OutboxStatus`] stop here (`outbox/status.sql`): sampled by every daemon every few
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
    let row = db.query_one(&STATUS, [&STATUS_COUNT_CAP]).await?;
    Ok(OutboxStatus {
        pending: row.try_get("pending")?,
        parked: row.try_get("parked")?,
        oldest_pending_age_ms: row.try_get("oldest_pending_age_ms")?,
    })
}
