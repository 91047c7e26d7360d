//! The projection's lag, measured once per `api.freshness_cache_ms` and shared by every read,
//! so that stating freshness costs almost nothing per request.

use std::time::{Duration, Instant};

use ledgerboard_core::db::reads::{Lag, lag};
use ledgerboard_core::db::{Database, StoreError};
use serde::Serialize;
use tokio::sync::Mutex;

/// How long one lag measurement may take.
const MEASURE_TIMEOUT: Duration = Duration::from_millis(300);

pub struct FreshnessCache {
    ttl: Duration,
    /// The last measurement, or the fact that it failed (PostgreSQL down), and when.
    last: Mutex<Option<(Instant, Option<Lag>)>>,
}

impl FreshnessCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            last: Mutex::new(None),
        }
    }

    /// The current lag, or None when PostgreSQL cannot say. Concurrent callers wait for one
    /// measurement instead of each making their own.
    pub async fn get(&self, db: &Database) -> Option<Lag> {
        let mut last = self.last.lock().await;
        if let Some((at, value)) = *last
            && at.elapsed() < self.ttl
        {
            return value;
        }
        // Bounded well below the database timeouts: a hung PostgreSQL must not hold every
        // read (eventual ones included) behind this lock; the lag is then stated as unknown.
        let value = match tokio::time::timeout(MEASURE_TIMEOUT, lag(db)).await {
            Ok(Ok(lag)) => Some(lag),
            Ok(Err(e)) => {
                log_unknown(&e);
                None
            }
            Err(_) => {
                tracing::warn!(timeout = ?MEASURE_TIMEOUT, "projection lag unknown: the database did not answer in time");
                None
            }
        };
        *last = Some((Instant::now(), value));
        value
    }
}

fn log_unknown(e: &StoreError) {
    tracing::warn!(error = %e, "projection lag unknown");
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Projection,
    Database,
}

/// The `freshness` object of every read. The numbers describe the projection's lag; they are
/// null when PostgreSQL could not be asked.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct Freshness {
    pub source: Source,
    pub projected_through: Option<i64>,
    pub pending: Option<i64>,
    pub lag_ms: Option<i64>,
}

impl Freshness {
    pub fn new(source: Source, lag: Option<Lag>) -> Self {
        Self {
            source,
            projected_through: lag.map(|l| l.projected_through),
            pending: lag.map(|l| l.pending),
            lag_ms: lag.map(|l| l.lag_ms),
        }
    }
}
