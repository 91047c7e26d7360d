//! The console's board pages (GET): the boards list and a board's page. Each reads what it
//! shows through the same functions the api's reads, the reconciler and `lbctl` use, from the
//! read pool (a slow page never takes a command's connection), within the api's request
//! bound.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::board::definition::{BoardDefinition, Reset};

use super::columns;
use ledgerboard_core::board::{moderation, periods};
use ledgerboard_core::db::{self, source};
use ledgerboard_core::model::{BoardId, UserId};
use ledgerboard_core::projection::classify::{Classification, verdict};
use ledgerboard_core::projection::inspect::{self, Observed};
use ledgerboard_core::projection::{ReadModelError, Seal, read};
use ledgerboard_core::ranking::RankMode;
use serde::Deserialize;

use super::drift::last_passes;
use super::guard::{ConsolePath, ConsoleQuery};
use super::session::{self, Session};
use super::unanswered;
use super::verdict::{Verdict, explain};
use super::views::*;
use super::{ConsoleError, render};
use crate::error::ApiError;
use crate::freshness::ProjectionState;
use crate::routes::target::{PeriodsRead, Target, period_board};
use crate::state::AppState;

/// Boards per page of the boards list, and entries per board page: each board on the list
/// costs a few queries, so the page stays small.
const BOARDS_PER_PAGE: usize = 50;
const ENTRIES_SHOWN: u64 = 20;

#[derive(Deserialize, Default)]
pub struct Notice {
    pub(super) notice: Option<String>,
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
    session: Session,
    ConsoleQuery(q): ConsoleQuery<BoardsQuery>,
) -> Result<Response, ConsoleError> {
    let after = q
        .after
        .as_deref()
        .filter(|a| !a.is_empty())
        .map(BoardId::parse)
        .transpose()
        .map_err(ApiError::from)?;
    let defs =
        ledgerboard_core::board::definition::list(&state.read_db, after.as_ref(), BOARDS_PER_PAGE)
            .await
            .map_err(unanswered::page_in_postgres)?;
    let mut targets = Vec::with_capacity(defs.len());
    for def in &defs {
        targets.push(period_board(&state, def.board.clone(), None, None).await?);
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
        .map_or_else(
            |e| unanswered::unknown(unanswered::postgres(&e)),
            |p| p.total.to_string(),
        );
        let seal = read::board_seal(&state.store, &target.board).await;
        let lag = lag.map_err(|e| unanswered::unknown(unanswered::postgres(&e)));
        rows.push(BoardRow {
            board: def.board.to_string(),
            display_name: def.display_name.clone(),
            definition: describe(def),
            period: period_name(target),
            entries,
            lag: lag
                .as_ref()
                .map_or_else(Clone::clone, |l| format!("{} ms", l.lag_ms)),
            pending: lag
                .as_ref()
                .map_or_else(Clone::clone, |l| l.pending.to_string()),
            parked: lag
                .as_ref()
                .map_or_else(Clone::clone, |l| l.parked.to_string()),
            projection: seal_view(&seal),
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

/// The period commands land in, as far as PostgreSQL said: a board whose periods it could not
/// state is not shown as one that never resets.
fn period_name(target: &Target) -> String {
    let name = target
        .period
        .clone()
        .unwrap_or_else(|| "never resets".into());
    match target.periods {
        PeriodsRead::Read => name,
        PeriodsRead::LastKnown => format!("{name} (as last read: {})", unanswered::POSTGRES),
        PeriodsRead::Unknown => unanswered::unknown(unanswered::POSTGRES),
    }
}

#[derive(Deserialize)]
pub struct BoardQuery {
    user: Option<String>,
    notice: Option<String>,
}

pub async fn board(
    State(state): State<AppState>,
    session: Session,
    ConsolePath(board): ConsolePath<String>,
    ConsoleQuery(q): ConsoleQuery<BoardQuery>,
) -> Result<Response, ConsoleError> {
    let board = BoardId::parse(&board).map_err(ApiError::from)?;
    let def = state
        .definitions
        .get(&state.read_db, &board)
        .await
        .map_err(unanswered::page_in_postgres)?;
    let target = period_board(&state, board.clone(), None, None).await?;
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
    .map_err(unanswered::page_in_postgres)?;
    let users: Vec<String> = page.entries.iter().map(|e| e.user_id.clone()).collect();
    let judged = judge(&state, t, &users).await?;
    let rows = page
        .entries
        .iter()
        .zip(&judged)
        .map(|(e, j)| {
            let (redis_score, redis_version) = match &j.seen {
                Ok(seen) => (
                    columns::stored(order.columns, seen),
                    seen.version.clone().unwrap_or_else(|| "absent".into()),
                ),
                Err(why) => ((*why).to_owned(), (*why).to_owned()),
            };
            MemberRow {
                rank: e.rank.to_string(),
                user_id: e.user_id.clone(),
                source_score: columns::entry(e),
                source_version: j.version.map_or_else(|| "—".into(), |v| v.to_string()),
                redis_score,
                redis_version,
                verdict: j.verdict.text("changed"),
                verdict_class: j.verdict.class("changed"),
            }
        })
        .collect();
    let projected = read::top(&state.store, t, order, RankMode::Ordinal, 0, ENTRIES_SHOWN).await;
    let (projected, projected_unread, projected_seal) = match projected {
        Ok(p) => (
            p.value
                .entries
                .into_iter()
                .map(|e| ProjectedRow {
                    rank: e.rank,
                    score: columns::entry(&e),
                    user_id: e.user_id,
                })
                .collect(),
            None,
            seal_view(&Ok(p.seal)),
        ),
        Err(e) => {
            let seal = seal_view(&Err(e));
            (Vec::new(), Some(seal.text.clone()), seal)
        }
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
        projected_unread,
        projected_seal,
        query_user,
        user,
        periods,
    }))
}

/// The figures the page's script refreshes (`assets/console.js`).
pub async fn board_freshness(
    State(state): State<AppState>,
    _: Session,
    ConsolePath(board): ConsolePath<String>,
) -> Result<Response, ConsoleError> {
    let board = BoardId::parse(&board).map_err(ApiError::from)?;
    let target = period_board(&state, board, None, None).await?;
    let f = freshness(&state, &target).await;
    Ok(Json(serde_json::json!({
        "lag": f.lag_ms,
        "pending": f.pending,
        "parked": f.parked,
        "projected_through": f.projected_through,
        "projection": f.projection.text,
        "projection_class": f.projection.class,
    }))
    .into_response())
}

async fn freshness(state: &AppState, target: &Target) -> Freshness {
    let lag = db::reads::lag(&state.read_db, &target.board).await;
    let seal = read::board_seal(&state.store, &target.board).await;
    let projection = seal_view(&seal);
    // A figure that cannot be measured says so: never a zero that looks fresh.
    match lag {
        Ok(l) => Freshness {
            lag_ms: format!("{} ms", l.lag_ms),
            pending: format!("{}{}", l.pending, if l.capped() { "+" } else { "" }),
            parked: l.parked.to_string(),
            projected_through: l.projected_through.to_string(),
            projection,
        },
        Err(e) => {
            let unknown = unanswered::unknown(unanswered::postgres(&e));
            Freshness {
                lag_ms: unknown.clone(),
                pending: unknown.clone(),
                parked: unknown.clone(),
                projected_through: unknown,
                projection,
            }
        }
    }
}

/// One member judged: its source version (None: no visible source row any more), what Redis
/// holds (or which store did not answer), and the verdict.
struct Judged {
    version: Option<i64>,
    seen: Result<Observed, &'static str>,
    verdict: Verdict,
}

/// Each of `users` judged as the reconciler would (a member without a visible source row is
/// skipped by it: `Nothing`, or `orphan` if Redis holds it). The source is re-read after
/// Redis, as the reconciler's pass re-reads its suspects: a command committed between the two
/// reads shows as lagging (pending), not as drift. Redis not answering leaves every verdict
/// unknown: an empty observation would be judged `missing`, a false verdict.
async fn judge(
    state: &AppState,
    board: &BoardId,
    users: &[String],
) -> Result<Vec<Judged>, ConsoleError> {
    let seen = inspect::observe(&state.store, board, users.iter().map(String::as_str))
        .await
        .map_err(|e| unanswered::redis(&e));
    let mut fresh = source::recheck(&state.read_db, board, users)
        .await
        .map_err(unanswered::page_in_postgres)?;
    let seen: Vec<Result<Observed, &'static str>> = match seen {
        Ok(seen) => seen.into_iter().map(Ok).collect(),
        Err(why) => vec![Err(why); users.len()],
    };
    Ok(users
        .iter()
        .zip(seen)
        .map(|(u, seen)| {
            let row = fresh.remove(u);
            let verdict = match (&row, &seen) {
                (_, Err(why)) => Verdict::Unknown(why),
                (Some(row), Ok(seen)) => Verdict::Class(verdict(row, seen)),
                (None, Ok(seen)) if seen.score.is_some() || seen.version.is_some() => {
                    Verdict::Class(Classification::Orphan)
                }
                (None, Ok(_)) => Verdict::Nothing,
            };
            Judged {
                version: row.map(|r| r.row.version),
                seen,
                verdict,
            }
        })
        .collect())
}

async fn user_view(
    state: &AppState,
    board: &BoardId,
    def: &BoardDefinition,
    raw: &str,
) -> Result<UserView, ConsoleError> {
    let user = UserId::parse(raw).map_err(ApiError::from)?;
    let order = def.order();
    let (standing, _) = db::reads::member(&state.read_db, board, order, RankMode::Ordinal, &user)
        .await
        .map_err(unanswered::page_in_postgres)?;
    let banned = moderation::is_banned(&state.read_db, &user)
        .await
        .map_err(unanswered::page_in_postgres)?;
    let users = [user.as_str().to_owned()];
    let judged = judge(state, board, &users).await?;
    let (seen, verdict) = match judged.into_iter().next() {
        Some(j) => (j.seen.ok(), j.verdict),
        // judge answers one verdict per user asked.
        None => (None, Verdict::Nothing),
    };
    let projected = read::member(&state.store, board, order, RankMode::Ordinal, &user).await;
    let source = match &standing {
        Some(s) => format!(
            "rank {} with {} (version {})",
            s.entry.rank,
            columns::entry(&s.entry),
            s.version
        ),
        None if banned => "no visible entry: the user is banned".into(),
        None => "no visible entry".into(),
    };
    let (projection, seal) = match projected {
        Ok(p) => {
            let seal = seal_view(&Ok(p.seal)).text;
            let text = match &p.value.0 {
                Some(s) => format!(
                    "rank {} with {} (version {}); projection {seal}",
                    s.entry.rank,
                    columns::entry(&s.entry),
                    s.version,
                ),
                None => format!("no entry; projection {seal}"),
            };
            (text, Some(p.seal))
        }
        Err(e) => (unanswered::unknown(unanswered::redis(&e)), None),
    };
    let why = explain(verdict, seen.as_ref(), seal, banned, standing.is_some());
    Ok(UserView {
        user_id: user.to_string(),
        source,
        projection,
        verdict: verdict.text("none"),
        verdict_class: verdict.class("none"),
        why,
        banned,
    })
}

async fn period_view(
    state: &AppState,
    board: &BoardId,
    def: &BoardDefinition,
) -> Option<PeriodView> {
    if matches!(def.reset, Reset::Never) {
        return None;
    }
    let p = match state.periods.get(&state.read_db, board).await {
        Ok(p) => p?,
        // Not "no period": the section says PostgreSQL did not answer.
        Err(e) => {
            let unknown = unanswered::unknown(unanswered::postgres(&e));
            return Some(PeriodView {
                current: unknown.clone(),
                previous: unknown.clone(),
                ends_in: unknown,
                closed: None,
                closed_unread: None,
            });
        }
    };
    let (closed, closed_unread) = match &p.previous {
        Some(previous) => match closed_view(state, board, previous).await {
            Ok(closed) => (closed, None),
            Err(why) => (None, Some(unanswered::unknown(why))),
        },
        None => (None, None),
    };
    Some(PeriodView {
        current: p.current.clone(),
        previous: p.previous.clone().unwrap_or_else(|| "none yet".into()),
        ends_in: p.ends_in_ms.map_or_else(
            || "only by hand".into(),
            |ms| format!("{} s", ms.max(0) / 1000),
        ),
        closed,
        closed_unread,
    })
}

/// The previous period's close; None when it is not closed, Err when PostgreSQL could not say
/// whether it is.
async fn closed_view(
    state: &AppState,
    board: &BoardId,
    period: &str,
) -> Result<Option<ClosedView>, &'static str> {
    let Some(closed) = periods::closed(&state.read_db, board, period)
        .await
        .map_err(|e| unanswered::postgres(&e))?
    else {
        return Ok(None);
    };
    let check = periods::verify(&state.read_db, board, period).await;
    let (check, holds) = match check {
        // The one wording of core's `Verification` (`lbctl period verify` and the api say the
        // same): an erasure, a ban at the close or a removal still holds, counted.
        Ok(Some(v)) => (v.describe(), v.holds()),
        Ok(None) => ("not closed".into(), false),
        Err(e) => (
            format!("could not be checked: {}", unanswered::postgres(&e)),
            false,
        ),
    };
    let (standings, standings_unread) =
        match periods::standings(&state.read_db, board, period, 0, ENTRIES_SHOWN as i64).await {
            Ok(rows) => (
                rows.into_iter()
                    .map(|s| StandingRow {
                        position: s.position,
                        rank: s.rank,
                        score: columns::values(s.score, s.scores.as_deref()),
                        user_id: s.user_id,
                        version: s.version,
                    })
                    .collect(),
                None,
            ),
            // Not an empty table: the standings exist, PostgreSQL did not give them.
            Err(e) => (
                Vec::new(),
                Some(unanswered::unknown(unanswered::postgres(&e))),
            ),
        };
    Ok(Some(ClosedView {
        period: period.to_owned(),
        closed_at: closed.closed_at,
        entries: closed.entries,
        digest: closed.digest,
        check,
        holds,
        standings,
        standings_unread,
    }))
}

fn describe(def: &BoardDefinition) -> String {
    format!(
        "{}, {}, ties {}, reset {}{}{}, revision {}{}",
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
        columns::describe(def),
        def.revision,
        if def.declared { "" } else { " (undeclared)" }
    )
}

/// The seal as the api's `freshness.projection` names it, or which store did not say (never
/// `missing`, which would ask the operator to rebuild a board that may be whole).
fn seal_view(seal: &Result<Seal, ReadModelError>) -> SealView {
    match seal {
        Ok(s) => {
            let name = ProjectionState::from(*s).as_str();
            SealView {
                class: name,
                text: name.to_owned(),
            }
        }
        Err(e) => SealView {
            class: "unknown",
            text: unanswered::unknown(unanswered::redis(e)),
        },
    }
}

/// Milliseconds since the epoch as a UTC time, to the second.
pub(super) fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}
