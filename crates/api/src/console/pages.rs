//! The console's pages (GET): each reads what it shows through the same functions the api's
//! reads, the reconciler and `lbctl` use, from the read pool (a slow page never takes a
//! command's connection), within the api's request bound.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::board::{moderation, periods};
use ledgerboard_core::db::{self, history, outbox, source};
use ledgerboard_core::definition::{BoardDefinition, Reset};
use ledgerboard_core::domain::{BoardId, UserId};
use ledgerboard_core::projection::classify::{Classification, verdict};
use ledgerboard_core::projection::inspect::{self, Observed};
use ledgerboard_core::projection::{Seal, read};
use ledgerboard_core::ranking::RankMode;
use ledgerboard_core::telemetry::metrics::Label;
use serde::Deserialize;
use serde_json::Value;

use super::session::{self, Session};
use super::views::*;
use super::{ConsoleError, render};
use crate::error::ApiError;
use crate::freshness::ProjectionState;
use crate::routes::reads::{Target, period_board};
use crate::state::AppState;

/// Boards per page of the boards list, and entries per board page: each board on the list
/// costs a few queries, so the page stays small.
const BOARDS_PER_PAGE: usize = 50;
const ENTRIES_SHOWN: u64 = 20;
const PASSES_SHOWN: i64 = 50;
const PARKED_SHOWN: usize = 200;
const AUDIT_SHOWN: i64 = 100;

#[derive(Deserialize, Default)]
pub struct Notice {
    notice: Option<String>,
}

pub(super) fn chrome(session: &Session, nav: &'static str, notice: Option<String>) -> Chrome {
    Chrome {
        actor: session.actor().to_owned(),
        csrf: session.csrf.clone(),
        nav,
        // A notice is the action's own message, passed through the redirect; it is escaped
        // like everything else, and bounded so that a crafted link cannot fill the page.
        notice: notice.map(|n| n.chars().take(300).collect()),
    }
}

pub async fn login(State(state): State<AppState>, headers: HeaderMap) -> Response {
    // Already signed in: straight to the boards.
    if session::session(&state, &headers).is_ok() {
        return axum::response::Redirect::to("/console").into_response();
    }
    render(&LoginPage { error: None })
}

#[derive(Deserialize)]
pub struct BoardsQuery {
    after: Option<String>,
    notice: Option<String>,
}

pub async fn boards(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<BoardsQuery>,
) -> Result<Response, ConsoleError> {
    let session = session::session(&state, &headers)?;
    let after = q
        .after
        .as_deref()
        .filter(|a| !a.is_empty())
        .map(BoardId::parse)
        .transpose()
        .map_err(ApiError::from)?;
    let defs =
        ledgerboard_core::board::definitions::list(&state.read_db, after.as_ref(), BOARDS_PER_PAGE)
            .await
            .map_err(ApiError::from)?;
    let mut targets = Vec::with_capacity(defs.len());
    for def in &defs {
        targets.push(period_board(&state, def.board.clone(), None).await?);
    }
    let names: Vec<&str> = targets.iter().map(|t| t.board.as_str()).collect();
    let last = last_passes(&state, &names).await;
    let mut rows = Vec::with_capacity(defs.len());
    for (def, target) in defs.iter().zip(&targets) {
        let lag = db::reads::lag(&state.read_db, &target.board).await;
        let entries = db::reads::top(
            &state.read_db,
            &target.board,
            def.order(),
            RankMode::Ordinal,
            0,
            1,
        )
        .await
        .map(|p| p.total.to_string())
        .unwrap_or_else(|e| format!("unknown ({e})"));
        let seal = read::board_seal(&state.store, &target.board).await;
        rows.push(BoardRow {
            board: def.board.to_string(),
            display_name: def.display_name.clone(),
            definition: describe(def),
            period: target
                .period
                .clone()
                .unwrap_or_else(|| "never resets".into()),
            entries,
            lag: lag
                .as_ref()
                .map_or_else(|e| format!("unknown ({e})"), |l| format!("{} ms", l.lag_ms)),
            pending: lag
                .as_ref()
                .map_or_else(|_| "unknown".into(), |l| l.pending.to_string()),
            parked: lag
                .as_ref()
                .map_or_else(|_| "unknown".into(), |l| l.parked.to_string()),
            projection: seal_name(seal.as_ref().ok()),
            last_pass: last
                .get(target.board.as_str())
                .cloned()
                .unwrap_or_else(|| "not in the last passes' reports".into()),
        });
    }
    let next = (defs.len() == BOARDS_PER_PAGE)
        .then(|| defs.last().map(|d| d.board.to_string()))
        .flatten();
    Ok(render(&BoardsPage {
        chrome: chrome(&session, "boards", q.notice),
        rows,
        next,
    }))
}

#[derive(Deserialize)]
pub struct BoardQuery {
    user: Option<String>,
    notice: Option<String>,
}

pub async fn board(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(board): Path<String>,
    Query(q): Query<BoardQuery>,
) -> Result<Response, ConsoleError> {
    let session = session::session(&state, &headers)?;
    let board = BoardId::parse(&board).map_err(ApiError::from)?;
    let def = state
        .definitions
        .get(&state.read_db, &board)
        .await
        .map_err(ApiError::from)?;
    let target = period_board(&state, board.clone(), None).await?;
    let order = def.order();
    let t = &target.board;

    let freshness = freshness(&state, &target).await;
    let last = last_passes(&state, &[t.as_str()]).await;
    let page = db::reads::top(
        &state.read_db,
        t,
        order,
        RankMode::Ordinal,
        0,
        ENTRIES_SHOWN,
    )
    .await
    .map_err(ApiError::from)?;
    let users: Vec<String> = page.entries.iter().map(|e| e.user_id.clone()).collect();
    let judged = judge(&state, t, &users).await?;
    let rows = page
        .entries
        .iter()
        .zip(&judged)
        .map(|(e, (version, seen, class))| MemberRow {
            rank: e.rank.to_string(),
            user_id: e.user_id.clone(),
            source_score: e.score.to_string(),
            source_version: version.map_or_else(|| "—".into(), |v| v.to_string()),
            redis_score: seen
                .score
                .map_or_else(|| "absent".into(), |s| format!("{s:.0}")),
            redis_version: seen.version.clone().unwrap_or_else(|| "absent".into()),
            verdict: class.map_or("changed", Classification::as_str),
        })
        .collect();
    let (projected, projected_seal) =
        match read::top(&state.store, t, order, RankMode::Ordinal, 0, ENTRIES_SHOWN).await {
            Ok(p) => (
                p.value
                    .entries
                    .into_iter()
                    .map(|e| ProjectedRow {
                        rank: e.rank,
                        user_id: e.user_id,
                        score: e.score,
                    })
                    .collect(),
                seal_name(Some(&p.seal)),
            ),
            Err(_) => (Vec::new(), "unreadable"),
        };
    let query_user = q.user.clone().unwrap_or_default();
    let user = match q.user.as_deref().filter(|u| !u.is_empty()) {
        Some(raw) => Some(user_view(&state, t, &def, raw).await?),
        None => None,
    };
    let periods = period_view(&state, &board, &def).await;
    Ok(render(&BoardPage {
        chrome: chrome(&session, "boards", q.notice),
        board: board.to_string(),
        target: t.to_string(),
        display_name: def.display_name.clone(),
        definition: describe(&def),
        freshness,
        last_pass: last
            .get(t.as_str())
            .cloned()
            .unwrap_or_else(|| "not in the last passes' reports".into()),
        entries: page.total,
        rows,
        projected,
        projected_seal,
        query_user,
        user,
        periods,
    }))
}

/// The figures the page's script refreshes (`assets/console.js`).
pub async fn board_freshness(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(board): Path<String>,
) -> Result<Response, ConsoleError> {
    session::session(&state, &headers)?;
    let board = BoardId::parse(&board).map_err(ApiError::from)?;
    let target = period_board(&state, board, None).await?;
    let f = freshness(&state, &target).await;
    Ok(Json(serde_json::json!({
        "lag": f.lag_ms,
        "pending": f.pending,
        "parked": f.parked,
        "projected_through": f.projected_through,
        "projection": f.projection,
    }))
    .into_response())
}

async fn freshness(state: &AppState, target: &Target) -> Freshness {
    let lag = db::reads::lag(&state.read_db, &target.board).await;
    let seal = read::board_seal(&state.store, &target.board).await;
    // A figure that cannot be measured says so: never a zero that looks fresh.
    let unknown = |e: &dyn std::fmt::Display| format!("unknown ({e})");
    match lag {
        Ok(l) => Freshness {
            lag_ms: format!("{} ms", l.lag_ms),
            pending: format!("{}{}", l.pending, if l.capped() { "+" } else { "" }),
            parked: l.parked.to_string(),
            projected_through: l.projected_through.to_string(),
            projection: seal_name(seal.as_ref().ok()),
        },
        Err(e) => Freshness {
            lag_ms: unknown(&e),
            pending: unknown(&e),
            parked: unknown(&e),
            projected_through: unknown(&e),
            projection: seal_name(seal.as_ref().ok()),
        },
    }
}

/// For each of `users`: its source version, what Redis holds, and the reconciler's verdict
/// (None: no visible source row any more, as the reconciler would skip it). The source is
/// re-read after Redis, as the reconciler's pass re-reads its suspects: a command committed
/// between the two reads shows as lagging (pending), not as drift.
async fn judge(
    state: &AppState,
    board: &BoardId,
    users: &[String],
) -> Result<Vec<(Option<i64>, Observed, Option<Classification>)>, ApiError> {
    let seen = inspect::observe(&state.store, board, users.iter().map(String::as_str))
        .await
        .unwrap_or_else(|_| vec![Observed::default(); users.len()]);
    let mut fresh = source::recheck(&state.read_db, board, users).await?;
    Ok(users
        .iter()
        .zip(seen)
        .map(|(u, seen)| match fresh.remove(u) {
            Some(row) => {
                let class = verdict(&row, &seen);
                (Some(row.row.version), seen, Some(class))
            }
            None => {
                let orphan = seen.score.is_some() || seen.version.is_some();
                (None, seen, orphan.then_some(Classification::Orphan))
            }
        })
        .collect())
}

async fn user_view(
    state: &AppState,
    board: &BoardId,
    def: &BoardDefinition,
    raw: &str,
) -> Result<UserView, ApiError> {
    let user = UserId::parse(raw)?;
    let order = def.order();
    let (standing, _) =
        db::reads::member(&state.read_db, board, order, RankMode::Ordinal, &user).await?;
    let banned = moderation::is_banned(&state.read_db, &user).await?;
    let users = [user.as_str().to_owned()];
    let judged = judge(state, board, &users).await?;
    let (_, seen, class) = judged.into_iter().next().unwrap_or_default();
    let projected = read::member(&state.store, board, order, RankMode::Ordinal, &user).await;
    let source = match &standing {
        Some(s) => format!(
            "rank {} with {} (version {})",
            s.entry.rank, s.entry.score, s.version
        ),
        None if banned => "no visible entry: the user is banned".into(),
        None => "no visible entry".into(),
    };
    let projection = match &projected {
        Ok(p) => match &p.value.0 {
            Some(s) => format!(
                "rank {} with {} (version {}); projection {}",
                s.entry.rank,
                s.entry.score,
                s.version,
                seal_name(Some(&p.seal))
            ),
            None => format!("no entry; projection {}", seal_name(Some(&p.seal))),
        },
        Err(e) => format!("unreadable ({e})"),
    };
    let seal = projected.as_ref().ok().map(|p| p.seal);
    let why = explain(class, &seen, seal, banned, standing.is_some());
    Ok(UserView {
        user_id: user.to_string(),
        source,
        projection,
        verdict: class.map_or("none", Classification::as_str),
        why,
        banned,
    })
}

/// The answer to "why is this player's rank wrong?", from the verdict.
fn explain(
    class: Option<Classification>,
    seen: &Observed,
    seal: Option<Seal>,
    banned: bool,
    visible: bool,
) -> String {
    let seal_note = match seal {
        Some(Seal::Whole) | None => "",
        Some(_) => {
            " The board's projection is not whole, so bounded reads answer from PostgreSQL and a rebuild has been asked for."
        }
    };
    let text = match class {
        Some(Classification::Current) => {
            "Redis holds exactly PostgreSQL's score, version, tie and metadata: readers of the projection see the right rank.".to_owned()
        }
        Some(Classification::Lagging) => {
            "The newest version is still pending in the outbox: the projector has yet to write it. Normal progress; reads that allow no lag answer from PostgreSQL meanwhile.".to_owned()
        }
        Some(Classification::Stale) => {
            "Redis holds an older version and nothing is pending for the newer one: its outbox row was parked (see Parked rows) or lost. Requeue the row, or rebuild the board.".to_owned()
        }
        Some(Classification::Missing) => {
            "Redis lacks this member (or half of it): evicted or deleted. The next reconciler pass repairs it; a rebuild does it now.".to_owned()
        }
        Some(Classification::Corrupt) => format!(
            "Redis holds the same version with another score, tie or metadata (stored: {}): edited by hand. Readers of the projection see a wrong rank; rebuild the board (or let the next pass repair it).",
            seen.version.as_deref().unwrap_or("nothing")
        ),
        Some(Classification::Ahead) => {
            "Redis holds a newer version than PostgreSQL: a projection of another database, or a restored database. PostgreSQL is authoritative; rebuild the board.".to_owned()
        }
        Some(Classification::Orphan) if banned => {
            "The user is banned and still in Redis: the hiding row has not been projected yet, or was parked.".to_owned()
        }
        Some(Classification::Orphan) => {
            "Redis holds this member and PostgreSQL has no visible entry: removed, erased or never written. The next pass removes it; a rebuild does it now.".to_owned()
        }
        None if banned => "The user is banned: hidden on every board, in PostgreSQL and in Redis.".to_owned(),
        None if visible => "The entry changed while the page was read; look again.".to_owned(),
        None => "No entry on this board, in PostgreSQL or in Redis.".to_owned(),
    };
    format!("{text}{seal_note}")
}

async fn period_view(
    state: &AppState,
    board: &BoardId,
    def: &BoardDefinition,
) -> Option<PeriodView> {
    if matches!(def.reset, Reset::Never) {
        return None;
    }
    let p = state.periods.get(&state.read_db, board).await.ok()??;
    let closed = match &p.previous {
        Some(previous) => closed_view(state, board, previous).await,
        None => None,
    };
    Some(PeriodView {
        current: p.current.clone(),
        previous: p.previous.clone().unwrap_or_else(|| "none yet".into()),
        ends_in: p.ends_in_ms.map_or_else(
            || "only by hand".into(),
            |ms| format!("{} s", ms.max(0) / 1000),
        ),
        closed,
    })
}

async fn closed_view(state: &AppState, board: &BoardId, period: &str) -> Option<ClosedView> {
    let closed = periods::closed(&state.read_db, board, period)
        .await
        .ok()??;
    let check = periods::verify(&state.read_db, board, period).await;
    let (check, holds) = match check {
        // The one wording of core's `Verification` (`lbctl period verify` and the api say the
        // same): an erasure, a ban at the close or a removal still holds, counted.
        Ok(Some(v)) => (v.describe(), v.holds()),
        Ok(None) => ("not closed".into(), false),
        Err(e) => (format!("could not be checked ({e})"), false),
    };
    let standings = periods::standings(&state.read_db, board, period, 0, ENTRIES_SHOWN as i64)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|s| StandingRow {
            position: s.position,
            rank: s.rank,
            user_id: s.user_id,
            score: s.score,
            version: s.version,
        })
        .collect();
    Some(ClosedView {
        period: period.to_owned(),
        closed_at: closed.closed_at,
        entries: closed.entries,
        digest: closed.digest,
        check,
        holds,
        standings,
    })
}

pub async fn drift(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Notice>,
) -> Result<Response, ConsoleError> {
    let session = session::session(&state, &headers)?;
    let namespace = state.store.keys().namespace();
    let passes = history::passes(&state.read_db, namespace, PASSES_SHOWN)
        .await
        .map_err(ApiError::from)?;
    let passes = passes.iter().map(pass_row).collect();
    Ok(render(&DriftPage {
        chrome: chrome(&session, "drift", q.notice),
        passes,
    }))
}

fn pass_row(p: &history::Pass) -> PassRow {
    let r = &p.report;
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let totals = r.get("totals").cloned().unwrap_or(Value::Null);
    let classes = ["missing", "stale", "ahead", "corrupt", "orphan", "lagging"]
        .iter()
        .filter(|k| n(&totals, k) > 0)
        .map(|k| format!("{k} {}", n(&totals, k)))
        .collect::<Vec<_>>()
        .join(", ");
    let drift: u64 = ["missing", "stale", "ahead", "corrupt", "orphan"]
        .iter()
        .map(|k| n(&totals, k))
        .sum();
    let listed = r
        .get("boards")
        .and_then(Value::as_array)
        .map(|boards| {
            boards
                .iter()
                .filter_map(|b| {
                    let summary = board_summary(b)?;
                    Some(ListedBoard {
                        board: b.get("board")?.as_str()?.to_owned(),
                        summary,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let outcome = match r.get("aborted").and_then(Value::as_str) {
        Some(why) => format!("stopped early: {why}"),
        None if r.get("completed").and_then(Value::as_bool) == Some(true) => "completed".into(),
        None => "partial (more boards next pass)".into(),
    };
    PassRow {
        id: p.id,
        finished: utc(p.finished_at_ms),
        kind: if r.get("dry_run").and_then(Value::as_bool) == Some(true) {
            "dry run".into()
        } else {
            "repairing".into()
        },
        outcome,
        boards: n(r, "boards_visited").to_string(),
        checked: n(&totals, "checked").to_string(),
        drift: drift.to_string(),
        classes: if classes.is_empty() {
            "none".into()
        } else {
            classes
        },
        repaired: format!("{} / {}", n(&totals, "repaired"), n(&totals, "removed")),
        listed,
    }
}

/// A board's entry in a pass report, in words; None for a clean board.
fn board_summary(b: &Value) -> Option<String> {
    let n = |k: &str| b.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut parts: Vec<String> = ["missing", "stale", "ahead", "corrupt", "orphan"]
        .iter()
        .filter(|k| n(k) > 0)
        .map(|k| format!("{k} {}", n(k)))
        .collect();
    if n("repaired") + n("removed") > 0 {
        parts.push(format!(
            "repaired {}, removed {}",
            n("repaired"),
            n("removed")
        ));
    }
    if n("failed") > 0 {
        parts.push(format!("failed {}", n("failed")));
    }
    if let Some(e) = b.get("error").and_then(Value::as_str) {
        parts.push(format!("error: {e}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Each board's last reconcile result in words, from the newest pass that listed it.
async fn last_passes(state: &AppState, boards: &[&str]) -> HashMap<String, String> {
    let namespace = state.store.keys().namespace();
    match history::last_board_results(&state.read_db, namespace, boards).await {
        Ok(found) => found
            .into_iter()
            .map(|(board, pass)| {
                let what = board_summary(&pass.report).unwrap_or_else(|| {
                    format!(
                        "clean ({} checked)",
                        pass.report
                            .get("checked")
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    )
                });
                (
                    board,
                    format!("pass {} at {}: {what}", pass.id, utc(pass.finished_at_ms)),
                )
            })
            .collect(),
        Err(e) => boards
            .iter()
            .map(|b| ((*b).to_owned(), format!("unknown ({e})")))
            .collect(),
    }
}

pub async fn parked(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Notice>,
) -> Result<Response, ConsoleError> {
    let session = session::session(&state, &headers)?;
    let rows = outbox::list_parked(&state.read_db, PARKED_SHOWN)
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .map(|r| ParkedView {
            id: r.id,
            board: r.board,
            user_id: r.user_id,
            score: r.score,
            version: r.version,
            attempts: r.attempts,
            error: r.last_error.unwrap_or_default(),
            parked_at: utc(r.parked_at_ms),
        })
        .collect();
    Ok(render(&ParkedPage {
        chrome: chrome(&session, "parked", q.notice),
        rows,
    }))
}

#[derive(Deserialize)]
pub struct ModerationQuery {
    user: Option<String>,
    board: Option<String>,
    notice: Option<String>,
}

pub async fn moderation(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ModerationQuery>,
) -> Result<Response, ConsoleError> {
    let session = session::session(&state, &headers)?;
    let log = history::actions(&state.read_db, AUDIT_SHOWN)
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .map(|a| AuditRow {
            at: utc(a.at_ms),
            actor: a.actor,
            action: a.action,
            board: a.board.unwrap_or_default(),
            user_id: a.user_id.unwrap_or_default(),
            detail: a.detail.to_string(),
        })
        .collect();
    Ok(render(&ModerationPage {
        chrome: chrome(&session, "moderation", q.notice),
        user_id: q.user.unwrap_or_default(),
        board: q.board.unwrap_or_default(),
        log,
    }))
}

fn describe(def: &BoardDefinition) -> String {
    format!(
        "{}, {}, ties {}, reset {}{}, revision {}{}",
        def.operator.as_str(),
        def.sort.as_str(),
        if def.tie_break.as_str() == "user_id" {
            "by user id"
        } else {
            "to the earliest"
        },
        def.reset.as_string(),
        if matches!(def.reset, Reset::Never) {
            String::new()
        } else {
            format!(" ({})", def.time_zone)
        },
        def.revision,
        if def.declared { "" } else { " (undeclared)" }
    )
}

/// The seal as the api's `freshness.projection` names it; "unreadable" when Redis did not say.
fn seal_name(seal: Option<&Seal>) -> &'static str {
    seal.map_or("unreadable", |s| ProjectionState::from(*s).as_str())
}

/// Milliseconds since the epoch as a UTC time, to the second.
pub(super) fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}
