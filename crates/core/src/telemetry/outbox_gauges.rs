//! The outbox gauges (pending rows, age of the oldest pending row, parked rows), sampled from
//! PostgreSQL by every daemon. The api and the reconciler sample too, so that the gauges keep
//! moving while every projector is down, which is exactly when they matter.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::metrics::metrics;
use crate::db::{Database, outbox_status};

/// Samples once now, then every `every`, until `cancel` fires.
pub fn spawn(
    db: Database,
    every: Duration,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    metrics().outbox_sample_errors.add(0, &[]);
    tokio::spawn(async move {
        loop {
            sample(&db).await;
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    })
}

/// One sample into the gauges. A failure keeps the last values and is counted.
pub async fn sample(db: &Database) {
    let m = metrics();
    match outbox_status(db).await {
        Ok(status) => {
            m.outbox_pending.record(status.pending, &[]);
            m.outbox_parked.record(status.parked, &[]);
            let age_s = status.oldest_pending_age_ms.unwrap_or(0) as f64 / 1e3;
            m.outbox_oldest_pending_age.record(age_s, &[]);
        }
        Err(e) => {
            m.outbox_sample_errors.add(1, &[]);
            tracing::debug!(error = %e, "outbox sample failed");
        }
    }
}
