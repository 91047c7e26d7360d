//! The pages that list records: the parked rows (`/console/parked`), the audit log of console
//! actions and moderation commands (`/console/moderation`), and the competitions
//! (`/console/competitions`).

use axum::extract::State;
use axum::response::Response;
use ledgerboard_core::competition;
use ledgerboard_core::db::{history, outbox};
use serde::Deserialize;

use super::guard::ConsoleQuery;
use super::pages::{Notice, chrome, utc};
use super::session::Session;
use super::unanswered;
use super::views::{
    AuditRow, CompetitionView, CompetitionsPage, ModerationPage, ParkedPage, ParkedView, RunView,
};
use super::{ConsoleError, render};
use crate::state::AppState;

const PARKED_SHOWN: usize = 200;
const AUDIT_SHOWN: i64 = 100;

pub async fn parked(
    State(state): State<AppState>,
    session: Session,
    ConsoleQuery(q): ConsoleQuery<Notice>,
) -> Result<Response, ConsoleError> {
    let rows = outbox::list_parked(&state.read_db, PARKED_SHOWN)
        .await
        .map_err(unanswered::page_in_postgres)?
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
    session: Session,
    ConsoleQuery(q): ConsoleQuery<ModerationQuery>,
) -> Result<Response, ConsoleError> {
    let log = history::actions(&state.read_db, AUDIT_SHOWN)
        .await
        .map_err(unanswered::page_in_postgres)?
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

/// Closed runs the competitions page lists, newest first.
const RUNS_SHOWN: i64 = 100;

/// The competitions (the first page of 200, in id order), each with its window, state, run
/// now, entrants of its cap, cohorts and prize table; then the last closed runs, each with its
/// boards, entries, moves, prize ranges and digests.
pub async fn competitions(
    State(state): State<AppState>,
    session: Session,
    ConsoleQuery(q): ConsoleQuery<Notice>,
) -> Result<Response, ConsoleError> {
    let rows = competition::list(&state.read_db, None, None, None, competition::MAX_PAGE)
        .await
        .map_err(unanswered::page_in_postgres)?
        .into_iter()
        .map(|c| CompetitionView {
            entrants: match c.max_size {
                Some(cap) => format!("{} of {cap}", c.entrants),
                None => c.entrants.to_string(),
            },
            entry: if c.entry_required { "required" } else { "open" }.to_owned(),
            prizes: c
                .prizes
                .iter()
                .map(|p| {
                    let ranks = if p.from == p.to {
                        format!("rank {}", p.from)
                    } else {
                        format!("ranks {}-{}", p.from, p.to)
                    };
                    format!("{ranks}: {} x{}", p.reward, p.amount)
                })
                .collect::<Vec<_>>()
                .join("; "),
            id: c.id,
            category: c.category,
            state: c.state,
            window: match (&c.starts_at, &c.ends_at) {
                (Some(from), Some(to)) => format!("{from} to {to}"),
                _ => match c.duration_s {
                    Some(d) => format!("each period of its board, {d} s from its start"),
                    None => "each period of its board".to_owned(),
                },
            },
            run: c.run.clone().unwrap_or_default(),
            cohorts: match c.cohort_size {
                None => "none".to_owned(),
                Some(n) => {
                    let tiers: Vec<&str> = c.tiers.iter().map(|t| t.name.as_str()).collect();
                    let mut text = format!("{} of at most {n}", c.cohorts);
                    if let Some(band) = c.rating_band {
                        text.push_str(&format!(", rating band {band}"));
                    }
                    if !tiers.is_empty() {
                        text.push_str(&format!("; tiers {}", tiers.join(", ")));
                    }
                    text
                }
            },
        })
        .collect();
    // The digests shortened to what a person compares by eye; verify checks them whole.
    let short = |d: &str| {
        d.get(..16)
            .map_or_else(|| d.to_owned(), |d| format!("{d}…"))
    };
    let runs = competition::recent_runs(&state.read_db, RUNS_SHOWN)
        .await
        .map_err(unanswered::page_in_postgres)?
        .into_iter()
        .map(|r| RunView {
            competition: r.competition,
            closed_at: r.closed.closed_at,
            boards: r.closed.boards,
            entries: r.closed.entries,
            moves: r.closed.moves,
            prize_ranges: r.prize_ranges,
            digest: short(&r.closed.digest),
            previous: r.closed.previous.as_deref().map(short).unwrap_or_default(),
            run: r.closed.run,
        })
        .collect();
    Ok(render(&CompetitionsPage {
        chrome: chrome(&session, "competitions", q.notice),
        rows,
        runs,
    }))
}
