//! What a read reads: the board or the period of it a read names, and the board's order,
//! each with what it falls back to while PostgreSQL cannot say (shared by the reads and the
//! console).

use ledgerboard_core::board::definition::{BoardDefinition, Order};
use ledgerboard_core::model::{BoardId, is_period_id};
use ledgerboard_core::projection::read;

use super::reads::Consistency;
use crate::error::ApiError;
use crate::state::AppState;

/// What a read reads: the board (or the period of it), the period it names, and whether that
/// period is archived (read from PostgreSQL only: its projection's keys are dropped).
pub(crate) struct Target {
    pub(crate) board: BoardId,
    pub(crate) period: Option<String>,
    /// The cohort of the period (a competition's run) it names.
    pub(crate) cohort: Option<u32>,
    pub(crate) archived: bool,
    /// Whether PostgreSQL stated the board's periods: the console says when it did not,
    /// rather than show the fallback as the board's state ("never resets").
    pub(crate) periods: PeriodsRead,
}

/// How [`period_board`] knew the board's periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeriodsRead {
    /// PostgreSQL said (or this process's cache of what it said, within its TTL).
    Read,
    /// PostgreSQL did not answer: the last answer read stands.
    LastKnown,
    /// PostgreSQL did not answer and no answer was read before: read as a board that never
    /// resets.
    Unknown,
}

/// The board a read of `board` reads, and the period it names: the board itself when it never
/// resets, else the period asked for (`current` by default, `previous`, or a period id), each
/// period being a board of its own (`BoardId::in_period`). The current period is the database
/// clock's (`board/periods.rs`), cached as definitions are; while PostgreSQL cannot say, the
/// last answer read stands, else the board is read as one that never resets (the answer then
/// names no period), as `order` assumes the implicit definition. With `cohort`, the read is of
/// that cohort of the period (a competition's run, `BoardId::in_cohort`).
pub(crate) async fn period_board(
    state: &AppState,
    board: BoardId,
    period: Option<&str>,
    cohort: Option<u32>,
) -> Result<Target, ApiError> {
    let wanted = period.unwrap_or("current");
    if !is_period_id(wanted) && wanted != "current" && wanted != "previous" {
        return Err(ApiError::InvalidPeriod(
            "period must be current, previous or a period id (YYYYMMDDTHHMMSSZ)".into(),
        ));
    }
    let (periods, read) = match state.periods.get(&state.read_db, &board).await {
        Ok(periods) => (periods, PeriodsRead::Read),
        Err(e) => match state.periods.last_known(&board) {
            Some(periods) => {
                tracing::warn!(error = %e, "board periods unreadable; using the last ones read");
                (periods, PeriodsRead::LastKnown)
            }
            None => {
                tracing::warn!(error = %e, "board periods unreadable; reading the board as one that never resets");
                (None, PeriodsRead::Unknown)
            }
        },
    };
    let named = match (&periods, wanted) {
        (_, id) if is_period_id(id) => Some(id.to_owned()),
        (None, "current") => None,
        (None, _) => return Err(ApiError::NeverResets(board.to_string())),
        (Some(p), "current") => Some(p.current.clone()),
        (Some(p), _) => Some(
            p.previous
                .clone()
                .ok_or_else(|| ApiError::NoSuchPeriod(board.to_string()))?,
        ),
    };
    let Some(id) = named else {
        if cohort.is_some() {
            return Err(ApiError::NeverResets(board.to_string()));
        }
        return Ok(Target {
            board,
            period: None,
            cohort: None,
            archived: false,
            periods: read,
        });
    };
    let (read_board, key) = match cohort {
        None => (board.in_period(&id)?, id.clone()),
        Some(c) => {
            let cohort_board = board.in_cohort(&id, c)?;
            let key = cohort_board.period().unwrap_or_default().to_owned();
            (cohort_board, key)
        }
    };
    Ok(Target {
        board: read_board,
        archived: periods.as_ref().is_some_and(|p| p.archived(&key)),
        period: Some(id),
        cohort,
        periods: read,
    })
}

/// The board's order. Reads that may answer from the projection alone (`eventual`) still
/// answer while PostgreSQL cannot state the definition: with the one this process read last,
/// else the one the board's seal states (the rebuild writes it), else the implicit one (an
/// undeclared board's, the only kind before definitions existed).
pub(crate) async fn order(
    state: &AppState,
    board: &BoardId,
    consistency: Consistency,
) -> Result<Order, ApiError> {
    match state.definitions.get(&state.read_db, board).await {
        Ok(def) => Ok(def.order()),
        Err(e) => {
            if let Some(def) = state.definitions.last_known(board) {
                tracing::warn!(error = %e, "board definition unreadable; using the last one read");
                return Ok(def.order());
            }
            if consistency == Consistency::Eventual {
                match read::sealed_order(&state.store, board).await {
                    Ok(Some(order)) => {
                        tracing::warn!(error = %e, "board definition unreadable; using the order its seal states");
                        return Ok(order);
                    }
                    Ok(None) => {
                        tracing::warn!(error = %e, "board definition unreadable; assuming the implicit one");
                        return Ok(BoardDefinition::implicit(board.clone()).order());
                    }
                    // Neither store can say the order: assuming one would rank an ascending
                    // board upside down, an answer that looks whole and is false.
                    Err(redis) => {
                        tracing::warn!(error = %e, redis = %redis, "board definition unreadable, and its seal too");
                        return Err(ApiError::Unavailable(redis.to_string()));
                    }
                }
            }
            Err(ApiError::from(e))
        }
    }
}
