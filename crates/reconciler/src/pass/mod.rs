//! One reconciliation pass: walk the boards (or one board) in pages of board ids read from
//! PostgreSQL, starting after the last board the previous pass finished; walk every source row
//! of each board in keyset-paginated chunks, read the projection of each chunk in one pipelined
//! round trip, classify, repair; then walk the projection for members with no source row.
//! Memory stays bounded by the page and chunk sizes whatever the number and size of boards, and
//! Redis's key space is never scanned.

use std::time::Instant;

use crate::settings::ReconcilerSettings;
use ledgerboard_core::db::source::{self, SourceRow};
use ledgerboard_core::db::{Database, StoreError};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::inspect::{self, Observed};
use ledgerboard_core::projection::{ReadModelError, Seal, Store, read, request_rebuild};

use crate::classify::{Classification, classify, is_behind, verdict};
use crate::lock::HeldLock;
use crate::report::{BoardReport, Counts, PassReport};

mod orphans;
use orphans::orphans;

#[derive(Debug, Clone)]
pub struct PassOptions {
    pub dry_run: bool,
    /// Only this board; all boards with source rows when None.
    pub board: Option<BoardId>,
    pub repair_ahead: bool,
    pub remove_orphans: bool,
    pub chunk_size: usize,
    /// Stop after this many boards (0: every board once); the next pass continues after the
    /// last one.
    pub max_boards: usize,
    /// Boards the report lists at most (`PassReport::boards`).
    pub report_max_boards: usize,
}

/// Board ids read per round trip of the walk over boards.
const BOARDS_PAGE: usize = 500;

impl PassOptions {
    pub fn from_settings(settings: &ReconcilerSettings) -> Self {
        Self {
            dry_run: false,
            board: None,
            repair_ahead: settings.repair_ahead,
            remove_orphans: settings.remove_orphans,
            chunk_size: settings.chunk_size.get(),
            max_boards: settings.max_boards_per_pass,
            report_max_boards: settings.report_max_boards,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("the reconciler lock was lost; the pass stopped before any further repair")]
    LockLost,
    /// One of this board's keys has the wrong type: the board is reported and skipped, the
    /// pass goes on with the next board.
    #[error("a key of this board has the wrong type: {0}")]
    WrongType(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Redis(ReadModelError),
}

impl From<ReadModelError> for PassError {
    fn from(err: ReadModelError) -> Self {
        match err {
            ReadModelError::Redis(e) if e.code() == Some("WRONGTYPE") => {
                PassError::WrongType(e.to_string())
            }
            other => PassError::Redis(other),
        }
    }
}

/// Runs one pass under `lock`.
pub async fn run_pass(
    db: &Database,
    store: &Store,
    lock: Option<&HeldLock>,
    options: &PassOptions,
) -> PassReport {
    let started = Instant::now();
    let mut report = PassReport::new(options.dry_run, options.report_max_boards);
    let ctx = Ctx {
        db,
        store,
        lock,
        options,
    };
    let aborted = match &options.board {
        Some(board) => check_and_report(ctx, board, &mut report).await.err(),
        None => walk_boards(ctx, &mut report).await.err(),
    };
    report.finish(started.elapsed(), aborted);
    report
}

/// Every board once, in byte order from after the last board finished before (recorded in
/// PostgreSQL, so any replica continues the walk) to the end, then from the first board up to
/// that one; or `max_boards` of them. Progress is recorded after each page of boards and where
/// the walk stops, early or not (never in a dry run).
async fn walk_boards(ctx: Ctx<'_>, report: &mut PassReport) -> Result<(), String> {
    let namespace = ctx.store.keys().namespace();
    let resume = source::progress(ctx.db, namespace)
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    report.resumed_after = (!resume.is_empty()).then(|| resume.clone());
    let mut segments = vec![(resume.clone(), None)];
    if !resume.is_empty() {
        segments.push((String::new(), Some(resume)));
    }
    let mut finished: Option<BoardId> = None;
    let walked = walk_segments(ctx, report, segments, &mut finished).await;
    if let Some(board) = finished.filter(|_| !ctx.options.dry_run) {
        let recorded = source::record_progress(ctx.db, namespace, &board).await;
        if let (Ok(()), Err(e)) = (&walked, recorded) {
            return Err(e.to_string());
        }
    }
    walked
}

async fn walk_segments(
    ctx: Ctx<'_>,
    report: &mut PassReport,
    segments: Vec<(String, Option<String>)>,
    finished: &mut Option<BoardId>,
) -> Result<(), String> {
    let namespace = ctx.store.keys().namespace();
    let mut done = 0;
    for (mut after, upto) in segments {
        loop {
            let (page, last) = source::boards_page(ctx.db, &after, upto.as_deref(), BOARDS_PAGE)
                .await
                .map_err(|e| e.to_string())?;
            for board in page {
                if ctx.options.max_boards > 0 && done == ctx.options.max_boards {
                    report.more = true;
                    return Ok(());
                }
                check_and_report(ctx, &board, report).await?;
                done += 1;
                *finished = Some(board);
            }
            if let Some(board) = finished.take_if(|_| !ctx.options.dry_run) {
                source::record_progress(ctx.db, namespace, &board)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            match last {
                Some(last) => after = last,
                None => break,
            }
        }
    }
    Ok(())
}

/// Checks one board and adds it to the report. A board with a wrong-typed key is reported and
/// skipped; any other failure stops the pass (its reason returned).
async fn check_and_report(
    ctx: Ctx<'_>,
    board: &BoardId,
    report: &mut PassReport,
) -> Result<(), String> {
    let started = Instant::now();
    let mut counts = Counts::default();
    let (error, aborted) = match check_board(ctx, board, &mut counts).await {
        Ok(seal) => {
            if !ctx.options.dry_run {
                request_if_unsealed(ctx.db, ctx.store, board, seal).await;
            }
            (None, None)
        }
        Err(PassError::WrongType(e)) => {
            tracing::warn!(board = %board, error = %e, "board skipped: a key has the wrong type");
            (Some(e), None)
        }
        Err(e) => (None, Some(e.to_string())),
    };
    report.add_board(BoardReport {
        board: board.to_string(),
        counts,
        error,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    match aborted {
        Some(reason) => Err(reason),
        None => Ok(()),
    }
}

/// A board the walk finds without a whole seal (lost while nobody read or wrote it, or never
/// built) is asked to be rebuilt, like a reader would ask (`requests.rs` serves it after the
/// pass). Repairs do not seal a board: only a rebuild proves it holds every member. A board
/// without source rows is not asked for (its rebuild leaves no seal, so a pass over it, such as
/// a rebuild's verifying pass after its orphans were removed, would ask again for ever).
/// `known`: the seal as the walk read it, when nothing was written to the board since.
async fn request_if_unsealed(db: &Database, store: &Store, board: &BoardId, known: Option<Seal>) {
    let seal = match known {
        Some(seal) => Ok(seal),
        None => read::board_seal(store, board).await,
    };
    let outcome = match seal {
        Ok(Seal::Whole) => return,
        Ok(_) if matches!(source::board_exists(db, board).await, Ok(false)) => return,
        Ok(seal) => request_rebuild(store, board)
            .await
            .map(|()| seal)
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(seal) => tracing::info!(board = %board, ?seal, "board not sealed: rebuild requested"),
        Err(e) => tracing::warn!(board = %board, error = %e, "could not check the board's seal"),
    }
}

/// One repair to make: set `row` (normal), or overwrite an ahead member whose stored version
/// is still `expected` (force).
struct Repair<'a> {
    row: &'a SourceRow,
    force_over: Option<String>,
}

/// What every step of a pass works with.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    db: &'a Database,
    store: &'a Store,
    lock: Option<&'a HeldLock>,
    options: &'a PassOptions,
}

/// Walks the board's source rows against Redis and repairs what differs; then its orphans, if
/// the sizes say there are any. Returns the board's seal as read after the walk, or None when
/// orphans were looked for since (the seal is then read again).
async fn check_board(
    ctx: Ctx<'_>,
    board: &BoardId,
    counts: &mut Counts,
) -> Result<Option<Seal>, PassError> {
    let chunk_size = ctx.options.chunk_size;
    // Source members seen in the sorted set and in the version hash: if the keys hold exactly
    // that many entries, neither holds an orphan and the scans for them can be skipped.
    let mut seen = Seen::default();
    // Three chunks at once: this one judged here, the next read from Redis, the one after
    // from PostgreSQL, so the three processes work side by side. Each chunk is read from
    // PostgreSQL before Redis (`recheck` relies on it); chunks are disjoint.
    let mut rows = source::chunk(ctx.db, board, "", chunk_size).await?;
    let first_cursor = source::next_cursor(&rows, chunk_size);
    let (observed, following) = tokio::join!(
        observe(ctx, board, &rows),
        source::chunk_after(ctx.db, board, first_cursor.as_deref(), chunk_size)
    );
    let (mut observed, mut following) = (observed?, following?);
    while !rows.is_empty() {
        let cursor = source::next_cursor(&following, chunk_size);
        let (checked, seen_next, after) = tokio::join!(
            check_chunk(ctx, board, rows, observed, counts, &mut seen),
            observe(ctx, board, &following),
            source::chunk_after(ctx.db, board, cursor.as_deref(), chunk_size)
        );
        checked?;
        (rows, observed, following) = (following, seen_next?, after?);
    }
    // Members added by the projector during the walk make the sizes larger, never smaller, so
    // they can only cause a scan that finds nothing, not hide an orphan. (A member removed
    // during the walk could hide one until the next pass.)
    // The sizes come with the seal, in one round trip.
    let sized = read::board_seal_and_sizes(ctx.store, board).await?;
    let scan_scores = sized.scores > seen.in_scores;
    let scan_versions = sized.versions > seen.in_versions;
    if scan_scores || scan_versions {
        orphans(ctx, board, counts, scan_scores, scan_versions).await?;
        return Ok(None);
    }
    Ok(Some(sized.seal))
}

/// How many of the source members a board's walk found in each half of the projection.
#[derive(Default)]
struct Seen {
    in_scores: u64,
    in_versions: u64,
}

/// What Redis holds for a chunk's members (`inspect::observe`), in the chunk's order.
async fn observe(
    ctx: Ctx<'_>,
    board: &BoardId,
    rows: &[SourceRow],
) -> Result<Vec<Observed>, PassError> {
    Ok(inspect::observe(ctx.store, board, rows.iter().map(|r| r.user_id.as_str())).await?)
}

/// Judges one chunk of source rows against what Redis held for them, read after them
/// (`recheck` for those not current at that look), counts them and repairs the drift.
async fn check_chunk(
    ctx: Ctx<'_>,
    board: &BoardId,
    rows: Vec<SourceRow>,
    observed: Vec<Observed>,
    counts: &mut Counts,
    seen_in: &mut Seen,
) -> Result<(), PassError> {
    let Ctx {
        store,
        lock,
        options,
        ..
    } = ctx;
    let mut judged: Vec<Judged> = rows
        .into_iter()
        .zip(observed)
        .map(|(row, seen)| Judged {
            class: Some(classify(
                row.score,
                row.key,
                row.version,
                row.metadata.as_deref(),
                &seen,
            )),
            row,
            seen,
        })
        .collect();
    counts.rechecked += recheck(ctx, board, &mut judged).await?;
    let mut repairs = Vec::new();
    for Judged { row, seen, class } in &judged {
        // Gone from the source at the re-read: left to the orphan scan (which the sizes then
        // call for), since it no longer has a row to compare with.
        let Some(class) = *class else { continue };
        counts.checked += 1;
        seen_in.in_scores += u64::from(seen.score.is_some());
        seen_in.in_versions += u64::from(seen.version.is_some());
        counts.count(class);
        match class {
            Classification::Current | Classification::Lagging | Classification::Orphan => {}
            Classification::Missing | Classification::Stale | Classification::Corrupt => {
                repairs.push(Repair {
                    row,
                    force_over: None,
                });
            }
            Classification::Ahead => {
                tracing::warn!(
                    board = %board,
                    user = row.user_id,
                    source_version = row.version,
                    projected_version = seen.version.as_deref().unwrap_or(""),
                    repair = options.repair_ahead,
                    "projection is ahead of the source (wrong database? restored backup?)"
                );
                if options.repair_ahead {
                    // `row` was read after `seen`, and the script writes it only while
                    // Redis still holds the version seen: never over a newer one.
                    repairs.push(Repair {
                        row,
                        force_over: Some(seen.version.clone().unwrap_or_default()),
                    });
                }
            }
        }
    }
    if !options.dry_run && !repairs.is_empty() {
        confirm(lock).await?;
        repair(store, board, &repairs, counts).await?;
    }
    Ok(())
}

/// One member of a chunk: the source row and the observation it is judged on, and its class
/// (None once its source row is gone).
struct Judged {
    row: SourceRow,
    seen: Observed,
    class: Option<Classification>,
}

/// Judges again the members of a chunk that were not current at the first look, which read
/// PostgreSQL first and Redis second: a command projected between the two reads made its
/// member look ahead, and one still on its way made it look stale. Three batched reads of
/// those members only, one round trip each:
///
/// 1. Redis, then 2. PostgreSQL (the source row and whether the outbox row of its version is
///    still pending, in one snapshot). Whatever Redis holds was committed in PostgreSQL before
///    it was projected, so a version read in Redis that exceeds the one PostgreSQL holds
///    afterwards is invented state: only that is `ahead`. Older than PostgreSQL (or absent)
///    with the source version still pending is `lagging`.
/// 3. Redis once more, for the members still behind whose version is not pending: the
///    projector marks a row published after writing it, so it may have written it between
///    reads 1 and 2. A member still behind now was published (or parked) without being in
///    Redis: real drift.
///
/// Returns how many members it read again.
async fn recheck(ctx: Ctx<'_>, board: &BoardId, judged: &mut [Judged]) -> Result<u64, PassError> {
    let suspects: Vec<usize> = (0..judged.len())
        .filter(|&i| judged[i].class != Some(Classification::Current))
        .collect();
    let rechecked = suspects.len() as u64;
    if suspects.is_empty() {
        return Ok(0);
    }
    let users: Vec<String> = suspects
        .iter()
        .map(|&i| judged[i].row.user_id.clone())
        .collect();
    let before = inspect::observe(ctx.store, board, users.iter().map(String::as_str)).await?;
    let mut fresh = source::recheck(ctx.db, board, &users).await?;
    let mut behind = Vec::new();
    for (&i, seen) in suspects.iter().zip(before) {
        let member = &mut judged[i];
        let Some(again) = fresh.remove(&member.row.user_id) else {
            member.class = None;
            continue;
        };
        let class = verdict(&again, &seen);
        if class != Classification::Lagging && is_behind(class, &seen) {
            behind.push(i);
        }
        member.row = again.row;
        member.seen = seen;
        member.class = Some(class);
    }
    if behind.is_empty() {
        return Ok(rechecked);
    }
    let after = inspect::observe(
        ctx.store,
        board,
        behind.iter().map(|&i| judged[i].row.user_id.as_str()),
    )
    .await?;
    for (&i, seen) in behind.iter().zip(after) {
        let member = &mut judged[i];
        let class = classify(
            member.row.score,
            member.row.key,
            member.row.version,
            member.row.metadata.as_deref(),
            &seen,
        );
        member.class = Some(match class {
            // Written since the re-read: the projector's progress. Ahead of the re-read here
            // means a newer command projected meanwhile, not invented state.
            Classification::Current | Classification::Ahead => Classification::Current,
            drift => drift,
        });
        member.seen = seen;
    }
    Ok(rechecked)
}

async fn confirm(lock: Option<&HeldLock>) -> Result<(), PassError> {
    match lock {
        Some(lock) if !lock.confirm().await => Err(PassError::LockLost),
        _ => Ok(()),
    }
}

async fn repair(
    store: &Store,
    board: &BoardId,
    repairs: &[Repair<'_>],
    counts: &mut Counts,
) -> Result<(), PassError> {
    let calls: Vec<inspect::Repair<'_>> = repairs
        .iter()
        .map(|r| inspect::Repair {
            user: &r.row.user_id,
            score: r.row.score,
            version: r.row.version,
            key: r.row.key,
            metadata: r.row.metadata.as_deref(),
            force_over: r.force_over.as_deref(),
        })
        .collect();
    let replies = inspect::repair(store, board, &calls).await?;
    counts.repaired += tally(replies, "repaired", counts);
    Ok(())
}

/// Counts a script's replies: the `done_word` ones are returned, the others are skips
/// (the projection moved on) or failures (Redis refused the write), added to `counts`.
fn tally(replies: Vec<redis::RedisResult<String>>, done_word: &str, counts: &mut Counts) -> u64 {
    let mut done = 0;
    let mut first_error = None;
    for reply in replies {
        match reply {
            Ok(word) if word == done_word => done += 1,
            Ok(_) => counts.skipped += 1,
            Err(e) => {
                counts.failed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        tracing::warn!(error = %e, "Redis refused a reconciliation write");
    }
    done
}
