//! `POST /v1/boards/{board}/attempts`: a player starts a run whose score the board will take
//! (`board/guard/attempt.rs`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::board::guard::{self, Attempt};
use ledgerboard_core::model::BoardId;
use serde::Deserialize;

use super::{json_body, path_error};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// An attempt's start as sent.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptBody {
    /// The caller's stable id for this start (the idempotency key): a non-nil UUID. A repeat
    /// answers the attempt the first one started.
    #[schema(format = Uuid)]
    request_id: String,
    /// The player: a player token's own user id (which it may leave out); required of a
    /// service token.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"
    )]
    user_id: Option<String>,
}

/// Starts an attempt: its id goes with the score (`attempt_id`), which must come within the
/// board's `ttl_s`, no sooner than its `min_duration_ms`, in the same period, from the same
/// player; an attempt is used by one score.
#[utoipa::path(
    post,
    path = "/v1/boards/{board}/attempts",
    params(("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    request_body = AttemptBody,
    responses(
        (status = 201, description = "started", body = Attempt),
        (status = 200, description = "the same request again: the attempt it started, `duplicate: true`", body = Attempt),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token (a player token's own codes, as for scores)", body = ErrorBody),
        (status = 403, description = "`forbidden`, `player_board`, `player_user`, or `board_server_only`", body = ErrorBody),
        (status = 409, description = "`attempt_limit`: the player started the most attempts the board allows in this period", body = ErrorBody),
        (status = 422, description = "`attempts_not_used` (the board declares no attempts), `invalid_request_id`, `invalid_user_id`", body = ErrorBody),
        (status = 429, description = "past a rate limit; see Retry-After", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "commands",
    security(("player" = []), ("bearer" = []))
)]
pub async fn post_attempt(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    board: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    let board = BoardId::parse(&board)?;
    identity.require_write(&board)?;
    let raw: AttemptBody = json_body(
        body,
        "{\"request_id\": \"<uuid>\", \"user_id\"?: \"<string>\"}",
    )?;
    let request = uuid::Uuid::parse_str(&raw.request_id)
        .ok()
        .filter(|u| !u.is_nil())
        .ok_or_else(|| {
            ApiError::Coded(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request_id",
                "request_id must be a non-nil UUID".into(),
            )
        })?;
    let user = identity.acting_user(raw.user_id)?;
    // The write policy judges an attempt as it judges the score it leads to.
    let definition = state.definitions.get(&state.db, &board).await?;
    ledgerboard_core::board::check_write_policy(&definition, identity.writer())?;
    let attempt = guard::start(&state.definitions, &state.db, &board, &user, &request).await?;
    let status = if attempt.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(attempt)).into_response())
}
