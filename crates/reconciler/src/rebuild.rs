//! Online rebuild of one board: build a new generation of its keys from PostgreSQL while
//! readers keep reading the live one (or PostgreSQL, when the live one is not whole), switch
//! the two atomically and seal the new one, delete the old one; on request (`lbctl rebuild
//! --verify`), then run a pass over the board. The Redis side of each step is
//! `ledgerboard_core::projection::generation`; this file holds the order of the steps, the
//! lock and the verifying pass.
//!
//! The build's seal (`:m:rebuild`) is written before the first row is read from PostgreSQL.
//! From then on the projector writes every row to both generations
//! (`lua/project.lua`), and the build writes each source row only
//! where the new generation holds no newer version (`lua/rebuild_chunk.lua`). So
//! every version the live generation shows at the switch is in the new one too: a row
//! projected before the build started was committed before PostgreSQL was read, and one
//! projected after it reached both. A reader never sees a score go back.
//!
//! That is also why no pass follows the switch unless asked for: with the double writes it has
//! nothing to repair (docs/reconciler.md proves it step by step), and a full pass over a board
//! of 1M users costs Redis's one thread about 4.5 s that every other board's projection waits
//! behind. The daemon's scheduled passes still compare every board, the rebuilt ones too.

use std::time::{Duration, Instant};

use ledgerboard_core::config::{self, Holds};
use ledgerboard_core::db::Database;
use ledgerboard_core::db::source;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_core::projection::generation::Build;
use serde::Serialize;

use crate::lock::{self, HeldLock};
use crate::pass::{PassError, PassOptions, run_pass};
use crate::report::PassReport;
use crate::settings::{Sections, Settings};

#[derive(Debug, Serialize)]
pub struct RebuildReport {
    pub board: String,
    /// Source rows read from PostgreSQL into the new generation (a row the projector had
    /// already written in a newer version is read, not written).
    pub rows: u64,
    pub build_seconds: f64,
    pub rows_per_s: f64,
    /// The pass run right after the switch, when asked for (`verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<PassReport>,
}

#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("the reconciler lock stayed taken for {0:?}: a pass or another rebuild is running")]
    Busy(Duration),
    /// An archived period is read from PostgreSQL alone and its keys are dropped: a rebuild
    /// would write them back, and nothing would drop them again.
    #[error(
        "{0} is an archived period: it is read from PostgreSQL, and its Redis keys stay dropped"
    )]
    Archived(String),
    #[error(transparent)]
    Pass(#[from] PassError),
}

/// Waits up to `wait` for the reconciler lock (a rebuild and a pass must not overlap).
async fn acquire(
    store: &Store,
    settings: &Settings,
    wait: Duration,
) -> Result<HeldLock, RebuildError> {
    let started = Instant::now();
    loop {
        let r = &settings.reconciler;
        if let Some(held) = lock::try_acquire(store, r.lock_ttl(), r.lock_renew())
            .await
            .map_err(PassError::from)?
        {
            return Ok(held);
        }
        if started.elapsed() >= wait {
            return Err(RebuildError::Busy(wait));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether a pass over the board follows the switch (`lbctl rebuild --verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    No,
    /// A pass over the rebuilt board, under the same lock, never a dry run: it shows (and
    /// repairs) anything the live keys lost or gained by hand since the switch.
    Pass,
}

/// `settings` may hold other daemons' sections too (`lbctl`, tests).
pub async fn rebuild<D: Holds<Sections>>(
    db: &Database,
    store: &Store,
    settings: &config::Settings<D>,
    board: &BoardId,
    wait: Duration,
    verify: Verify,
) -> Result<RebuildReport, RebuildError> {
    let settings: &Settings = &settings.narrow();
    let held = acquire(store, settings, wait).await?;
    // Asked under the lock: the keys of archived periods are dropped under it too
    // (periods.rs), so no archive can slip in between the check and the build.
    let mut result = match ledgerboard_core::board::periods::is_archived(db, board).await {
        Ok(true) => Err(RebuildError::Archived(board.to_string())),
        Ok(false) => build_and_switch(db, store, settings, board, &held).await,
        Err(e) => Err(PassError::from(e).into()),
    };
    if let (Ok(report), Verify::Pass) = (&mut result, verify) {
        let options = PassOptions {
            dry_run: false,
            board: Some(board.clone()),
            ..PassOptions::from_settings(&settings.reconciler)
        };
        let pass = run_pass(db, store, Some(&held), &options).await;
        pass.log();
        report.verify = Some(pass);
    }
    held.release().await;
    result
}

/// The rebuild itself, under a lock the caller holds (the requested rebuilds take it once for
/// all the boards they serve in a round).
pub(crate) async fn build_and_switch(
    db: &Database,
    store: &Store,
    settings: &Settings,
    board: &BoardId,
    held: &HeldLock,
) -> Result<RebuildReport, RebuildError> {
    build_and_switch_sealing(db, store, settings, board, held, false).await
}

/// As [`build_and_switch`]; `seal_empty` seals the board even when it has no source rows (a
/// period that has not started: it exists, and is empty).
pub(crate) async fn build_and_switch_sealing(
    db: &Database,
    store: &Store,
    settings: &Settings,
    board: &BoardId,
    held: &HeldLock,
    seal_empty: bool,
) -> Result<RebuildReport, RebuildError> {
    // The build's seal lives while chunks keep coming; if this process dies, it expires and
    // the projector stops writing the abandoned generation.
    let build_ttl_ms = settings.reconciler.lock_ttl_ms.ms().max(1_000);
    // Leftovers of a rebuild that died half-way go first; then the seal that makes the
    // projector write the new generation too, before anything is read from PostgreSQL.
    let mut build = Build::begin(store, board, build_ttl_ms)
        .await
        .map_err(PassError::from)?;
    let generation = build.generation().to_owned();

    let started = Instant::now();
    let chunk_size = settings.reconciler.chunk_size.get();
    let mut rows_read = 0_u64;
    // Each chunk's Redis write overlaps the read of the next chunk from PostgreSQL: the
    // build takes about the longer of the two, not their sum.
    let mut rows = source::chunk(db, board, "", chunk_size)
        .await
        .map_err(PassError::from)?;
    while !rows.is_empty() {
        if !held.confirm().await {
            return Err(PassError::LockLost.into());
        }
        let write = build.write_chunk(rows.iter());
        let cursor = source::next_cursor(&rows, chunk_size);
        let next = source::chunk_after(db, board, cursor.as_deref(), chunk_size);
        let (written, next) = tokio::join!(write, next);
        written.map_err(PassError::from)?;
        rows_read += rows.len() as u64;
        rows = next.map_err(PassError::from)?;
    }
    let build_seconds = started.elapsed().as_secs_f64();

    if !held.confirm().await {
        return Err(PassError::LockLost.into());
    }
    // A board with no source rows is switched but not sealed: reads of a board that does not
    // exist must leave nothing behind in Redis (unless the caller knows it exists).
    // The seal states the board's order, read now: its rule cannot change while it has entries
    // (board/definition/), so the order stays true for as long as the seal lives.
    // A board whose every entry is hidden exists, and is empty: sealed, or each pass would
    // find it unsealed and ask for the same rebuild again, for ever.
    let exists = rows_read > 0
        || seal_empty
        || source::board_exists(db, board)
            .await
            .map_err(PassError::from)?;
    let order = if exists {
        Some(
            ledgerboard_core::board::definition::get(db, board)
                .await
                .map_err(PassError::from)?
                .order(),
        )
    } else {
        None
    };
    let unlinked = build.switch(store, order).await.map_err(PassError::from)?;
    // The new generation is live already: a failure to delete the retired one leaves
    // garbage, not a wrong board.
    if let Err(e) = unlinked {
        tracing::warn!(error = %e, key = store.keys().retired_scores(board), "could not delete the retired generation; the next rebuild of this board replaces it");
    }
    tracing::info!(board = %board, rows = rows_read, build_seconds, generation, sealed = exists, "rebuilt generation is live");
    let rows_written = rows_read;
    Ok(RebuildReport {
        board: board.to_string(),
        rows: rows_written,
        build_seconds,
        rows_per_s: if build_seconds > 0.0 {
            rows_written as f64 / build_seconds
        } else {
            0.0
        },
        verify: None,
    })
}
