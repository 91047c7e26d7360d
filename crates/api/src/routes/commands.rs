//! `POST /v1/boards/{board}/scores`: the idempotent score command.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::db::apply_score_command;
use ledgerboard_core::domain::{BoardId, Delta, EventId, ScoreCommand, UserId};
use serde::Deserialize;

use super::path_error;
use crate::error::ApiError;
use crate::state::AppState;

/// The body as sent: strings and a raw number, validated into domain types afterwards so each
/// bad field gets its own error code.
#[derive(Deserialize)]
struct CommandBody {
    event_id: String,
    user_id: String,
    delta: serde_json::Number,
}

pub async fn post_score(
    State(state): State<AppState>,
    board: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge
        } else {
            ApiError::MalformedBody(rejection.body_text())
        }
    })?;
    let command = parse_command(&board, &body)?;
    let outcome = apply_score_command(&state.db, &command).await?;
    let status = if outcome.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(outcome)).into_response())
}

fn parse_command(board: &str, body: &[u8]) -> Result<ScoreCommand, ApiError> {
    let board = BoardId::parse(board)?;
    let raw: CommandBody = serde_json::from_slice(body).map_err(|e| {
        ApiError::MalformedBody(format!(
            "expected {{\"event_id\": \"<uuid>\", \"user_id\": \"<string>\", \"delta\": <integer>}}: {e}"
        ))
    })?;
    Ok(ScoreCommand {
        event_id: EventId::parse(&raw.event_id)?,
        board,
        user_id: UserId::parse(&raw.user_id)?,
        delta: Delta::from_json(&raw.delta)?,
    })
}
