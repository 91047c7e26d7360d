//! Rebuilds that readers and projectors asked for: a board whose projection a read found
//! without a whole seal (lost, evicted, edited, never built) is added to the rebuild requests
//! (`keys.rs`); the reconciler that holds the lock rebuilds the requested boards one at a
//! time, between passes, and removes each request once its board is sealed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ledgerboard_core::cache::{Cache, CacheError};
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::Database;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::telemetry::metrics::Label;

use crate::metrics::{RebuildOutcome, metrics};
use crate::rebuild::{RebuildError, rebuild};

/// How often the requests are looked at while no pass runs: the time from a lost projection to
/// its rebuild starts at most this late.
pub const POLL: Duration = Duration::from_millis(250);
/// Requests taken per look; the rest wait for the next one.
const PER_ROUND: usize = 8;
/// A board whose rebuild failed is tried again after this long, not at every look.
const RETRY_AFTER: Duration = Duration::from_secs(10);

#[derive(Default)]
pub struct Requests {
    failed: HashMap<String, Instant>,
}

impl Requests {
    /// Rebuilds the requested boards, one at a time, while this replica can take the lock.
    /// Returns how many boards were rebuilt.
    pub async fn serve(
        &mut self,
        db: &Database,
        cache: &Cache,
        settings: &Settings,
    ) -> Result<usize, CacheError> {
        let key = cache.keys().rebuild_requests();
        let mut conn = cache.connection().await?;
        let boards: Vec<String> = redis::cmd("SRANDMEMBER")
            .arg(&key)
            .arg(PER_ROUND)
            .query_async(&mut conn)
            .await?;
        self.failed.retain(|_, at| at.elapsed() < RETRY_AFTER);
        let mut rebuilt = 0;
        for name in boards {
            if self.failed.contains_key(&name) {
                continue;
            }
            let Ok(board) = BoardId::parse(&name) else {
                // Only valid board ids are ever requested; anything else was written by hand.
                let _: i64 = redis::cmd("SREM")
                    .arg(&key)
                    .arg(&name)
                    .query_async(&mut conn)
                    .await?;
                continue;
            };
            let started = Instant::now();
            match rebuild(db, cache, settings, &board, Duration::ZERO).await {
                Ok(report) => {
                    let _: i64 = redis::cmd("SREM")
                        .arg(&key)
                        .arg(&name)
                        .query_async(&mut conn)
                        .await?;
                    metrics()
                        .rebuilds
                        .add(1, &[RebuildOutcome::Done.key_value()]);
                    tracing::info!(board = %board, rows = report.rows, seconds = started.elapsed().as_secs_f64(), "requested rebuild done");
                    rebuilt += 1;
                }
                // A pass, or a rebuild by another replica or lbctl, holds the lock.
                Err(RebuildError::Busy(_)) => break,
                Err(e) => {
                    metrics()
                        .rebuilds
                        .add(1, &[RebuildOutcome::Failed.key_value()]);
                    tracing::warn!(board = %board, error = %e, retry_in = ?RETRY_AFTER, "requested rebuild failed");
                    self.failed.insert(name, Instant::now());
                }
            }
        }
        Ok(rebuilt)
    }
}
