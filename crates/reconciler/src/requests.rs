//! Rebuilds that readers and projectors asked for: a board whose projection a read found
//! without a whole seal (lost, evicted, edited, never built) is added to the rebuild requests
//! (`projection/keys.rs`); the reconciler that holds the lock rebuilds the requested boards
//! one at a time, between passes. An operator's request (the console's "rebuild") goes to a
//! set of its own and is served first, whatever the board's seal says.
//!
//! Each request is taken off the set *before* its board's seal is read and the board rebuilt
//! (`projection::generation::claim_request`), never after: an ask that arrives meanwhile (a
//! member lost right after the switch, say) adds it again and is served next round. Removing it
//! after the rebuild would swallow that ask, and the board would stay not whole until someone
//! read it again. A board found whole once claimed needs nothing; one whose rebuild could not
//! run or failed is asked for again.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::settings::Settings;
use ledgerboard_core::board::periods;
use ledgerboard_core::db::Database;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::generation::RequestKind;
use ledgerboard_core::projection::{
    ReadModelError, Seal, Store, generation, read, request_rebuild,
};
use ledgerboard_core::telemetry::metrics::Label;

use crate::lock;
use crate::metrics::{RebuildOutcome, metrics};
use crate::pass::PassError;
use crate::rebuild::{RebuildError, RebuildReport, build_and_switch};

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
    /// Rebuilds the requested boards, one at a time, if this replica can take the lock (a
    /// pass, a rebuild by another replica or lbctl may hold it: then nothing is claimed).
    /// Returns how many boards were rebuilt.
    pub async fn serve(
        &mut self,
        db: &Database,
        store: &Store,
        settings: &Settings,
    ) -> Result<usize, ReadModelError> {
        // An operator's forced rebuilds first: someone is looking at the board.
        let mut boards: Vec<(RequestKind, String)> = Vec::new();
        for kind in [RequestKind::Forced, RequestKind::NotWhole] {
            let names = generation::requested(store, kind, PER_ROUND).await?;
            boards.extend(names.into_iter().map(|n| (kind, n)));
        }
        self.failed.retain(|_, at| at.elapsed() < RETRY_AFTER);
        let boards: Vec<(RequestKind, String)> = boards
            .into_iter()
            .filter(|(_, name)| !self.failed.contains_key(name))
            .take(PER_ROUND)
            .collect();
        if boards.is_empty() {
            return Ok(0);
        }
        let r = &settings.reconciler;
        let Some(held) = lock::try_acquire(store, r.lock_ttl(), r.lock_renew()).await? else {
            return Ok(0);
        };
        let served = self.serve_locked(db, store, settings, &held, boards).await;
        held.release().await;
        served
    }

    async fn serve_locked(
        &mut self,
        db: &Database,
        store: &Store,
        settings: &Settings,
        held: &lock::HeldLock,
        boards: Vec<(RequestKind, String)>,
    ) -> Result<usize, ReadModelError> {
        let mut rebuilt = 0;
        for (kind, name) in boards {
            if !generation::claim_request(store, kind, &name).await? {
                continue;
            }
            // Only valid board ids are ever requested; anything else was written by hand.
            let Ok(board) = BoardId::parse_stored(&name) else {
                continue;
            };
            let started = Instant::now();
            match serve_one(db, store, settings, held, &board, kind).await {
                Ok(None) => {}
                Ok(Some(report)) => {
                    metrics()
                        .rebuilds
                        .add(1, &[RebuildOutcome::Done.key_value()]);
                    tracing::info!(board = %board, rows = report.rows, seconds = started.elapsed().as_secs_f64(), "requested rebuild done");
                    rebuilt += 1;
                }
                Err(e) => {
                    metrics()
                        .rebuilds
                        .add(1, &[RebuildOutcome::Failed.key_value()]);
                    tracing::warn!(board = %board, error = %e, retry_in = ?RETRY_AFTER, "requested rebuild failed");
                    self.failed.insert(name, Instant::now());
                    // Claimed, not served: asked for again, tried after RETRY_AFTER. If even
                    // this fails, the next read or walk that finds the board asks again.
                    match kind {
                        RequestKind::NotWhole => request_rebuild(store, &board).await?,
                        kind => generation::request(store, kind, &board).await?,
                    }
                    if !held.confirm().await {
                        break;
                    }
                }
            }
        }
        Ok(rebuilt)
    }
}

/// One claimed request: its rebuild, except for a request not forced whose board is whole
/// already (asked for again while an earlier rebuild ran, and made whole by it) and keeps the
/// distinct scores if it is read with dense ranks.
async fn serve_one(
    db: &Database,
    store: &Store,
    settings: &Settings,
    held: &lock::HeldLock,
    board: &BoardId,
    kind: RequestKind,
) -> Result<Option<RebuildReport>, RebuildError> {
    // Whole, unless dense reads wait for distinct scores it does not keep (they asked).
    if kind == RequestKind::NotWhole
        && read::board_seal(store, board)
            .await
            .map_err(PassError::from)?
            == Seal::Whole
        && !generation::distinct_missing(store, board)
            .await
            .map_err(PassError::from)?
    {
        return Ok(None);
    }
    // An archived period is read from PostgreSQL (an api whose period cache was still older
    // than its archive may have asked): its keys stay dropped.
    if periods::is_archived(db, board)
        .await
        .map_err(PassError::from)?
    {
        tracing::info!(%board, "rebuild request of an archived period dropped");
        return Ok(None);
    }
    build_and_switch(db, store, settings, board, held)
        .await
        .map(Some)
}
