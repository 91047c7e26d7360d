//! What the dispatcher's gauges sample from PostgreSQL (`sql/status.sql`): one statement, a few
//! index probes and a count over subscriptions, whose number is small.

use crate::db::{Database, Op, Statement, StoreError};

static STATUS: Statement<0> = Statement::new(Op::WebhookStatus, include_str!("sql/status.sql"), []);

/// Deliveries and subscriptions by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    /// Parked deliveries, requeued ones included.
    pub parked: i64,
    pub requeued: i64,
    /// Enabled subscriptions by circuit state; disabled ones.
    pub closed: i64,
    pub open: i64,
    pub half_open: i64,
    pub disabled: i64,
    /// Gaps retention left (`webhook_gaps` rows).
    pub gaps: i64,
    /// Positions between the log's last and the furthest-behind lane of an enabled
    /// subscription.
    pub behind: i64,
}

pub async fn status(db: &Database) -> Result<Status, StoreError> {
    let row = db.query_one(&STATUS, []).await?;
    Ok(Status {
        parked: row.try_get("parked")?,
        requeued: row.try_get("requeued")?,
        closed: row.try_get("closed")?,
        open: row.try_get("open")?,
        half_open: row.try_get("half_open")?,
        disabled: row.try_get("disabled")?,
        gaps: row.try_get("gaps")?,
        behind: row.try_get("behind")?,
    })
}
