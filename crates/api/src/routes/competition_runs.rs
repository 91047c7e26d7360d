//! A competition's runs after the fact: `POST /v1/competitions/{id}/runs/{run}/close` (admin:
//! close an ended run now rather than at the reconciler's next pass), `GET
//! /v1/competitions/{id}/verification` (admin: every closed run verified, oldest first, as
//! `lbctl competition verify`), `GET /v1/competitions/{id}/players/{user_id}` (a player's tier
//! and runs). The rules are core's (`competition/`).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path, State};
use ledgerboard_core::competition::{self, CloseOutcome, CompetitionError, RunClosed};
use ledgerboard_core::model::{BoardId, UserId, is_period_id};
use serde::Serialize;

use super::path_error;
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// What a close did.
#[derive(Serialize, utoipa::ToSchema)]
pub struct RunClose {
    /// `closed` (by this call), `already_closed`, `not_ended`, `pending` (rows of the run still
    /// on their way to Redis: try later) or `waiting` (an earlier run closes first).
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunClosed>,
}

/// Closes an ended run of the competition: its cohorts' standings, prizes and moves frozen
/// under one digest chained to the previous run's. Idempotent.
#[utoipa::path(
    post,
    path = "/v1/competitions/{id}/runs/{run}/close",
    params(
        ("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
        ("run" = String, Path, description = "the run's period id", pattern = "^[0-9]{8}T[0-9]{6}Z$"),
    ),
    responses(
        (status = 200, description = "what the close did", body = RunClose),
        (status = 400, description = "malformed path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`competition_unknown`, `competition_run_unknown`", body = ErrorBody),
        (status = 422, description = "`invalid_board_id`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security(("bearer" = []))
)]
pub async fn close(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<RunClose>, ApiError> {
    let Path((id, run)) = path.map_err(path_error)?;
    identity.require_admin()?;
    let id = BoardId::parse(&id)?;
    if !is_period_id(&run) {
        return Err(CompetitionError::UnknownRun.into());
    }
    let (outcome, run) = match competition::close(&state.db, &id, &run).await? {
        CloseOutcome::Closed(c) => ("closed", Some(c)),
        CloseOutcome::AlreadyClosed(c) => ("already_closed", Some(c)),
        CloseOutcome::NotEnded => ("not_ended", None),
        CloseOutcome::Pending => ("pending", None),
        CloseOutcome::Waiting => ("waiting", None),
    };
    Ok(Json(RunClose { outcome, run }))
}

/// Verifies every closed run of the competition, oldest first: each run's digest, its chain to
/// the run before, its moves against the frozen standings, and each cohort's standings as a
/// period's (the same three outcomes as a period's verification).
#[utoipa::path(
    get,
    path = "/v1/competitions/{id}/verification",
    // Unique in the document (the SDKs name their functions after it).
    operation_id = "competition_verification",
    params(("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    responses(
        (status = 200, description = "the verification", body = competition::Verification),
        (status = 400, description = "malformed path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`competition_unknown`", body = ErrorBody),
        (status = 422, description = "`invalid_board_id`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security(("bearer" = []))
)]
pub async fn verification(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<competition::Verification>, ApiError> {
    let Path(id) = id.map_err(path_error)?;
    identity.require_admin()?;
    let id = BoardId::parse(&id)?;
    competition::get(&state.read_db, &id)
        .await?
        .ok_or(CompetitionError::Unknown)?;
    Ok(Json(competition::verify(&state.read_db, &id).await?))
}

/// A player's tier now and runs entered, newest first (the last 100), each with its cohort,
/// frozen place and the move its close made.
#[utoipa::path(
    get,
    path = "/v1/competitions/{id}/players/{user_id}",
    params(
        ("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
        ("user_id" = String, Path, description = "the player", min_length = 1, max_length = 128),
    ),
    responses(
        (status = 200, description = "the player's history", body = competition::History),
        (status = 400, description = "malformed path", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 404, description = "`competition_unknown`", body = ErrorBody),
        (status = 422, description = "`invalid_board_id`, `invalid_user_id`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security((), ("bearer" = []))
)]
pub async fn player(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<competition::History>, ApiError> {
    let Path((id, user)) = path.map_err(path_error)?;
    let id = BoardId::parse(&id)?;
    let user = UserId::parse(&user)?;
    Ok(Json(
        competition::history(&state.read_db, &id, &user, competition::MAX_HISTORY).await?,
    ))
}
