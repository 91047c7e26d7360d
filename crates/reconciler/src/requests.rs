//! Rebuilds that readers and projectors asked for: a board whose projection a read found
//! without a whole seal (lost, evicted, edited, never built) is added to the rebuild requests
//! (`projection/keys.rs`); the reconciler that holds the lock rebuilds the requested boards
//! one at a time, between passes, and removes each request once its board is sealed. Reading
//! and removing requests are `projection::generation::{requested, forget_request}`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::settings::Settings;
use ledgerboard_core::db::Database;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::projection::{ReadModelError, Store, generation};
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
        store: &Store,
        settings: &Settings,
    ) -> Result<usize, ReadModelError> {
        let boards = generation::requested(store, PER_ROUND).await?;
        self.failed.retain(|_, at| at.elapsed() < RETRY_AFTER);
        let mut rebuilt = 0;
        for name in boards {
            if self.failed.contains_key(&name) {
                continue;
            }
            let Ok(board) = BoardId::parse(&name) else {
                // Only valid board ids are ever requested; anything else was written by hand.
                generation::forget_request(store, &name).await?;
                continue;
            };
            let started = Instant::now();
            match rebuild(db, store, settings, &board, Duration::ZERO).await {
                Ok(report) => {
                    generation::forget_request(store, &name).await?;
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
