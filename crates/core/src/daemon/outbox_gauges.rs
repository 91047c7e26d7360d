//! The outbox gauges (pending rows, age of the oldest pending row, parked rows), sampled from
//! PostgreSQL by every daemon. The api and the reconciler sample too, so that the gauges keep
//! moving while every projector is down, which is exactly when they matter.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Gauge};
use tokio_util::sync::CancellationToken;

use crate::db::{Database, outbox_status};
use crate::telemetry::metrics::{counter, gauge, meter};

struct Gauges {
    pending: Gauge<i64>,
    oldest_pending_age: Gauge<f64>,
    parked: Gauge<i64>,
    /// Samples that failed (the gauges then keep their last value).
    sample_errors: Counter<u64>,
}

static GAUGES: OnceLock<Gauges> = OnceLock::new();

fn gauges() -> &'static Gauges {
    GAUGES.get_or_init(|| {
        let m = meter();
        Gauges {
            pending: gauge(
                &m,
                "ledgerboard.outbox.pending",
                "Outbox rows waiting to be projected",
            ),
            oldest_pending_age: m
                .f64_gauge("ledgerboard.outbox.oldest_pending_age")
                .with_unit("s")
                .with_description(
                    "Age of the oldest pending outbox row by the database clock (0 when none)",
                )
                .build(),
            parked: gauge(
                &m,
                "ledgerboard.outbox.parked",
                "Outbox rows parked after too many failed attempts",
            ),
            sample_errors: counter(
                &m,
                "ledgerboard.outbox.sample.errors",
                "Outbox samples that failed",
            ),
        }
    })
}

/// Samples once now, then every `every`, until `cancel` fires.
pub fn spawn(
    db: Database,
    every: Duration,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    gauges().sample_errors.add(0, &[]);
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
    let g = gauges();
    match outbox_status(db).await {
        Ok(status) => {
            g.pending.record(status.pending, &[]);
            g.parked.record(status.parked, &[]);
            let age_s = status.oldest_pending_age_ms.unwrap_or(0) as f64 / 1e3;
            g.oldest_pending_age.record(age_s, &[]);
        }
        Err(e) => {
            g.sample_errors.add(1, &[]);
            tracing::debug!(error = %e, "outbox sample failed");
        }
    }
}
