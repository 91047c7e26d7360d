//! Online rebuild of one board: build a new generation of its keys from PostgreSQL while
//! readers keep reading the live one (or PostgreSQL, when the live one is not whole), switch
//! the two atomically and seal the new one, delete the old one, then run a catch-up pass over
//! the board.
//!
//! The build's seal (`:m:rebuild`) is written before the first row is read from PostgreSQL.
//! From then on the projector writes every row to both generations (`lua/project.lua`), and the
//! build writes each source row only where the new generation holds no newer version
//! (`lua/rebuild_chunk.lua`). So every version the live generation shows at the switch is in
//! the new one too: a row projected before the build started was committed before PostgreSQL
//! was read, and one projected after it reached both. A reader never sees a score go back.

use std::time::{Duration, Instant};

use ledgerboard_core::cache::Cache;
use ledgerboard_core::config::{self, Holds};
use ledgerboard_core::db::Database;
use ledgerboard_core::db::source;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::scripts::{REBUILD_CHUNK, SWITCH_GENERATION};
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
    /// The pass run right after the switch.
    pub catch_up: PassReport,
}

#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("the reconciler lock stayed taken for {0:?}: a pass or another rebuild is running")]
    Busy(Duration),
    #[error(transparent)]
    Pass(#[from] PassError),
}

/// Waits up to `wait` for the reconciler lock (a rebuild and a pass must not overlap).
async fn acquire(
    cache: &Cache,
    settings: &Settings,
    wait: Duration,
) -> Result<HeldLock, RebuildError> {
    let started = Instant::now();
    loop {
        let r = &settings.reconciler;
        if let Some(held) = lock::try_acquire(cache, r.lock_ttl(), r.lock_renew())
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

/// `settings` may hold other daemons' sections too (`lbctl`, tests).
pub async fn rebuild<D: Holds<Sections>>(
    db: &Database,
    cache: &Cache,
    settings: &config::Settings<D>,
    board: &BoardId,
    wait: Duration,
) -> Result<RebuildReport, RebuildError> {
    let settings: &Settings = &settings.narrow();
    let held = acquire(cache, settings, wait).await?;
    let result = build_and_switch(db, cache, settings, board, &held).await;
    held.release().await;
    result
}

async fn build_and_switch(
    db: &Database,
    cache: &Cache,
    settings: &Settings,
    board: &BoardId,
    held: &HeldLock,
) -> Result<RebuildReport, RebuildError> {
    let keys = cache.keys();
    let (new_scores, new_versions, new_meta) = (
        keys.rebuild_scores(board),
        keys.rebuild_versions(board),
        keys.rebuild_meta(board),
    );
    let mut conn = cache.connection().await.map_err(PassError::from)?;
    // The build's seal lives while chunks keep coming; if this process dies, it expires and
    // the projector stops writing the abandoned generation.
    let build_ttl_ms = settings.reconciler.lock_ttl_ms.ms().max(1_000);
    let generation = uuid::Uuid::new_v4().simple().to_string();
    let built_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    // Leftovers of a rebuild that died half-way go first; then the seal that makes the
    // projector write the new generation too, before anything is read from PostgreSQL.
    redis::pipe()
        .atomic()
        .cmd("UNLINK")
        .arg(&new_scores)
        .arg(&new_versions)
        .arg(&new_meta)
        .ignore()
        .cmd("HSET")
        .arg(&new_meta)
        .arg("gen")
        .arg(&generation)
        .arg("built_at")
        .arg(built_at)
        .ignore()
        .cmd("PEXPIRE")
        .arg(&new_meta)
        .arg(build_ttl_ms)
        .ignore()
        .query_async::<()>(&mut conn)
        .await
        .map_err(PassError::from)?;

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
        let mut call = REBUILD_CHUNK.prepare_invoke();
        call.key(&new_scores)
            .key(&new_versions)
            .key(&new_meta)
            .arg(build_ttl_ms);
        for row in &rows {
            call.arg(&row.user_id).arg(row.score).arg(row.version);
        }
        let write = call.invoke_async::<i64>(&mut conn);
        let next = async {
            match rows.last() {
                Some(last) if rows.len() == chunk_size => {
                    source::chunk(db, board, &last.user_id, chunk_size).await
                }
                _ => Ok(Vec::new()),
            }
        };
        let (written, next) = tokio::join!(write, next);
        written.map_err(PassError::from)?;
        rows_read += rows.len() as u64;
        rows = next.map_err(PassError::from)?;
    }
    let build_seconds = started.elapsed().as_secs_f64();

    if !held.confirm().await {
        return Err(PassError::LockLost.into());
    }
    let (retired_scores, retired_versions) =
        (keys.retired_scores(board), keys.retired_versions(board));
    let (live_scores, live_versions) = (keys.scores(board), keys.versions(board));
    // A board with no source rows is switched but not sealed: reads of a board that does not
    // exist must leave nothing behind in Redis.
    let seal = if rows_read > 0 { "seal" } else { "unseal" };
    let _: String = SWITCH_GENERATION
        .key(&live_scores)
        .key(&live_versions)
        .key(&new_scores)
        .key(&new_versions)
        .key(&retired_scores)
        .key(&retired_versions)
        .key(keys.meta(board))
        .key(&new_meta)
        .arg(seal)
        .invoke_async(&mut conn)
        .await
        .map_err(PassError::from)?;
    // UNLINK frees a large set off Redis's main thread. The new generation is live already:
    // a failure here leaves garbage, not a wrong board, so the catch-up still runs.
    let unlinked: redis::RedisResult<i64> = redis::cmd("UNLINK")
        .arg(&retired_scores)
        .arg(&retired_versions)
        .query_async(&mut conn)
        .await;
    if let Err(e) = unlinked {
        tracing::warn!(error = %e, key = retired_scores, "could not delete the retired generation; the next rebuild of this board replaces it");
    }
    tracing::info!(board = %board, rows = rows_read, build_seconds, generation, sealed = rows_read > 0, "rebuilt generation is live; catching up");
    let rows_written = rows_read;

    let options = PassOptions {
        dry_run: false,
        board: Some(board.clone()),
        ..PassOptions::from_settings(&settings.reconciler)
    };
    let catch_up = run_pass(db, cache, Some(held), &options).await;
    catch_up.log();
    Ok(RebuildReport {
        board: board.to_string(),
        rows: rows_written,
        build_seconds,
        rows_per_s: if build_seconds > 0.0 {
            rows_written as f64 / build_seconds
        } else {
            0.0
        },
        catch_up,
    })
}
