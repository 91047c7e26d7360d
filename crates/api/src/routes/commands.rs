//! `POST /v1/boards/{board}/scores`: the idempotent score command.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::board;
use ledgerboard_core::model::{BoardId, Submitted};
use ledgerboard_core::telemetry::metrics::Label;
use ledgerboard_core::telemetry::trace_context;
use serde::Deserialize;

use super::path_error;
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::metrics::{CommandResult, metrics};
use crate::state::AppState;
#[allow(unused_imports)] // named in the OpenAPI attributes
use ledgerboard_core::model::CommandOutcome;

/// The body as sent: strings and a raw number, validated into domain types afterwards so each
/// bad field gets its own error code.
#[derive(Deserialize, utoipa::ToSchema)]
pub struct CommandBody {
    /// The caller's stable id for this command (the idempotency key): a non-nil UUID.
    #[schema(format = Uuid)]
    event_id: String,
    /// 1 to 128 bytes of UTF-8 without control characters (`maxLength` counts characters; the
    /// limit is in bytes).
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"
    )]
    user_id: String,
    /// On `add` boards (every undeclared board): the score change, an integer within the
    /// board's delta bounds (-1000 to 1000 unless declared otherwise); on a board with columns,
    /// one change per column, as an array in the columns' order or an object by column name.
    /// Absent on `best` and `latest` boards.
    delta: Option<Submitted>,
    /// On `best` and `latest` boards: the submitted score, an integer within the board's score
    /// bounds; on a board with columns, one value per column within its bounds, as an array
    /// in the columns' order (`[12, 93120]`) or an object by column name
    /// (`{"laps": 12, "time_ms": 93120}`). Absent on `add` boards.
    score: Option<Submitted>,
    /// Optional per-entry metadata: a JSON object of at most 1024 bytes (compact JSON), kept
    /// with the score by the command that sets it (on add and latest boards a command without
    /// it keeps the prior; on best boards the improving submission's).
    #[schema(value_type = Option<Object>)]
    metadata: Option<serde_json::Value>,
    /// The attempt this score comes from (`POST /v1/boards/{board}/attempts`): required of a
    /// player token on a board that declares attempts; used up by this command.
    #[schema(format = Uuid)]
    attempt_id: Option<String>,
}

/// Applies a score command exactly once per event id.
#[utoipa::path(
    post,
    path = "/v1/boards/{board}/scores",
    params(("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    request_body = CommandBody,
    responses(
        (status = 201, description = "applied", body = CommandOutcome),
        (status = 200, description = "the same command again: the first application's outcome, `duplicate: true`", body = CommandOutcome),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token: with a player token, `token_malformed`, `token_key_unknown`, `token_signature`, `token_expired`, `token_not_yet_valid`, `token_audience` or `token_claims`", body = ErrorBody),
        (status = 403, description = "the token may not write to this board (`forbidden`); with a player token, `player_board` (a board it does not name), `player_user` (another user id), `board_server_only` (the board's write policy is `server`)", body = ErrorBody),
        (status = 409, description = "the event id was used with another board, user, operator, value or metadata (on a board that feeds others, by any of them: the body's `board` names a fed board)", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 429, description = "past the rate limit of this token (or, without one, of this address); see Retry-After", body = ErrorBody),
        (status = 422, description = "an invalid value; on a board that feeds others, a value one of them refuses (the body's `board` names it): nothing is written on any board", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "commands",
    security(("bearer" = []), ("player" = []))
)]
pub async fn post_score(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    board: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // Everything that can refuse the command runs inside, so every answer is counted.
    let result = async {
        let Path(board) = board.map_err(path_error)?;
        // Who may write comes before anything about the body is said.
        identity.require_write(&BoardId::parse(&board)?)?;
        let body = body?;
        let (board, raw) = parse_body(&board, &body)?;
        identity.require_user(&raw.user_id)?;
        // The request's trace context travels in the outbox row, so the projection's span can
        // link back to this request.
        let traceparent = trace_context::current_traceparent();
        let fields = board::Fields {
            event_id: &raw.event_id,
            user_id: &raw.user_id,
            score: raw.score.as_ref(),
            delta: raw.delta.as_ref(),
            metadata: raw.metadata.as_ref(),
            writer: identity.writer(),
            attempt: raw.attempt_id.as_deref(),
        };
        board::submit(
            &state.commands,
            &state.definitions,
            &state.db,
            &board,
            &fields,
            traceparent,
        )
        .await
        .map_err(ApiError::from)
    }
    .await;
    let outcome = match &result {
        Ok(o) if o.duplicate => CommandResult::Duplicate,
        Ok(_) => CommandResult::Created,
        Err(e) if e.status().is_client_error() => CommandResult::Refused,
        Err(_) => CommandResult::Failed,
    };
    metrics().commands.add(1, &[outcome.key_value()]);
    let outcome = result?;
    let status = if outcome.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(outcome)).into_response())
}

fn parse_body(board: &str, body: &[u8]) -> Result<(BoardId, CommandBody), ApiError> {
    let board = BoardId::parse(board)?;
    let raw: CommandBody = serde_json::from_slice(body).map_err(|e| {
        ApiError::MalformedBody(format!(
            "expected {{\"event_id\": \"<uuid>\", \"user_id\": \"<string>\", \"delta\" or \"score\": <integer, or one per column>, \"metadata\"?: {{…}}}}: {e}"
        ))
    })?;
    Ok((board, raw))
}
