//! Online rebuild of one board: build a new generation of its keys from PostgreSQL while
//! readers keep reading the live one, switch the two atomically, delete the old one, then run
//! a catch-up pass over the board. The projector keeps writing to the live keys during the
//! build; whatever it wrote there after the build read a row is lost by the switch and put
//! back by the catch-up pass (classified stale or missing, repaired).

use std::time::{Duration, Instant};

use ledgerboard_core::cache::Cache;
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::Database;
use ledgerboard_core::db::source;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::scripts::SWITCH_GENERATION;
use serde::Serialize;

use crate::lock::{self, HeldLock};
use crate::pass::{PassError, PassOptions, run_pass};
use crate::report::PassReport;

#[derive(Debug, Serialize)]
pub struct RebuildReport {
    pub board: String,
    /// Rows written to the new generation.
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

pub async fn rebuild(
    db: &Database,
    cache: &Cache,
    settings: &Settings,
    board: &BoardId,
    wait: Duration,
) -> Result<RebuildReport, RebuildError> {
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
    let (new_scores, new_versions) = (keys.rebuild_scores(board), keys.rebuild_versions(board));
    let mut conn = cache.connection().await.map_err(PassError::from)?;
    // Leftovers of a rebuild that died half-way.
    let _: i64 = redis::cmd("UNLINK")
        .arg(&new_scores)
        .arg(&new_versions)
        .query_async(&mut conn)
        .await
        .map_err(PassError::from)?;

    let started = Instant::now();
    let chunk_size = settings.reconciler.chunk_size;
    let mut rows_written = 0_u64;
    // Each chunk's Redis write overlaps the read of the next chunk from PostgreSQL: the
    // build takes about the longer of the two, not their sum.
    let mut rows = source::chunk(db, board, "", chunk_size)
        .await
        .map_err(PassError::from)?;
    while !rows.is_empty() {
        if !held.confirm().await {
            return Err(PassError::LockLost.into());
        }
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(&new_scores);
        let mut hset = redis::cmd("HSET");
        hset.arg(&new_versions);
        for row in &rows {
            zadd.arg(row.score).arg(&row.user_id);
            hset.arg(&row.user_id).arg(row.version);
        }
        let mut pipe = redis::pipe();
        pipe.add_command(zadd).add_command(hset);
        let write = pipe.query_async::<()>(&mut conn);
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
        rows_written += rows.len() as u64;
        rows = next.map_err(PassError::from)?;
    }
    let build_seconds = started.elapsed().as_secs_f64();

    if !held.confirm().await {
        return Err(PassError::LockLost.into());
    }
    let (retired_scores, retired_versions) =
        (keys.retired_scores(board), keys.retired_versions(board));
    let (live_scores, live_versions) = (keys.scores(board), keys.versions(board));
    let _: String = SWITCH_GENERATION
        .key(&live_scores)
        .key(&live_versions)
        .key(&new_scores)
        .key(&new_versions)
        .key(&retired_scores)
        .key(&retired_versions)
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
    tracing::info!(board = %board, rows = rows_written, build_seconds, "rebuilt generation is live; catching up");

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
