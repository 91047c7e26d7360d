//! `POST /v1/moderation`: the idempotent moderation command (admin scope): remove a user's
//! entry from a board, ban or unban a user, erase a user. The rules are core's
//! (`board/moderation.rs`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::board::moderation::{self, Action, Command, Moderated};
use ledgerboard_core::model::{BoardId, EventId, UserId, is_period_id};
use serde::{Deserialize, Serialize};

use super::json_body;
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A moderation command as sent.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModerationBody {
    /// The caller's stable id for this command (the idempotency key): a non-nil UUID. A
    /// repeat with the same payload answers the first run's outcome; with another, 409.
    #[schema(format = Uuid)]
    pub(crate) action_id: String,
    /// `remove` (the user's entry on `board`), `ban`, `unban` or `erase` (every board).
    #[schema(example = "ban")]
    pub(crate) action: String,
    /// The user, as score commands name them.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"
    )]
    pub(crate) user_id: String,
    /// The board: required by `remove`, refused by the others.
    #[schema(pattern = r"^[A-Za-z0-9_.-]{1,64}$")]
    pub(crate) board: Option<String>,
    /// `remove` on a board that resets: the period the entry is removed from (its id,
    /// `YYYYMMDDTHHMMSSZ`, as reads and command answers name it); without it, the board
    /// itself (where a board that resets holds no entries).
    #[schema(pattern = r"^[0-9]{8}T[0-9]{6}Z$")]
    pub(crate) period: Option<String>,
    /// Why (kept in the audit row): 1 to 512 characters.
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) reason: String,
}

/// What a moderation command did (for a repeat: what it did the first time).
#[derive(Serialize, utoipa::ToSchema)]
pub struct ModerationOutcome {
    #[schema(format = Uuid)]
    action_id: String,
    action: &'static str,
    /// True when this id was applied before: nothing was written now.
    duplicate: bool,
    /// When it was applied, by the database clock (RFC 3339, UTC).
    at: String,
    /// The name of the token that applied it.
    actor: String,
    /// What it changed: `entries` and `boards`; for an erasure also `removed_entries`, `ban`,
    /// `events`, `outbox_rows`, `audit_rows` (rows removed or given a pseudonym).
    #[schema(value_type = Object)]
    result: serde_json::Value,
}

impl From<Moderated> for ModerationOutcome {
    fn from(m: Moderated) -> Self {
        Self {
            action_id: m.action_id.to_string(),
            action: m.action,
            duplicate: m.duplicate,
            at: m.at,
            actor: m.actor,
            result: m.result,
        }
    }
}

fn action(body: &ModerationBody) -> Result<Action, ApiError> {
    let user = UserId::parse(&body.user_id)?;
    let mut board = body.board.as_deref().map(BoardId::parse).transpose()?;
    if let Some(period) = &body.period {
        if body.action != "remove" {
            return Err(ApiError::InvalidModeration(
                "period_not_allowed",
                format!("`{}` applies to every period: no `period`", body.action),
            ));
        }
        if !is_period_id(period) {
            return Err(ApiError::InvalidPeriod(
                "period must be a period id (YYYYMMDDTHHMMSSZ)".into(),
            ));
        }
        board = board.map(|b| b.in_period(period)).transpose()?;
    }
    match (body.action.as_str(), board) {
        ("remove", Some(board)) => Ok(Action::Remove { board, user }),
        ("remove", None) => Err(ApiError::InvalidModeration(
            "board_required",
            "`remove` takes the board the entry is removed from".into(),
        )),
        ("ban" | "unban" | "erase", Some(_)) => Err(ApiError::InvalidModeration(
            "board_not_allowed",
            format!("`{}` applies to every board: no `board`", body.action),
        )),
        ("ban", None) => Ok(Action::Ban { user }),
        ("unban", None) => Ok(Action::Unban { user }),
        ("erase", None) => Ok(Action::Erase { user }),
        _ => Err(ApiError::InvalidModeration(
            "invalid_action",
            "`action` must be remove, ban, unban or erase".into(),
        )),
    }
}

/// Validates and applies one moderation command as `identity` (who checked the scope):
/// `POST /v1/moderation` and the console's form both come here.
pub(crate) async fn moderate(
    state: &AppState,
    identity: &Identity,
    raw: ModerationBody,
) -> Result<Moderated, ApiError> {
    let action_id = EventId::parse(&raw.action_id).map_err(|_| {
        ApiError::InvalidModeration(
            "invalid_action_id",
            "`action_id` must be a non-nil UUID".into(),
        )
    })?;
    let action = action(&raw)?;
    let cmd = Command {
        action_id: action_id.as_uuid(),
        action,
        reason: raw.reason,
        actor: identity.name().to_owned(),
    };
    Ok(moderation::moderate(&state.db, &cmd).await?)
}

/// Applies a moderation command exactly once per action id, with its audit row (who: the
/// token's name, when: the database clock, why: the reason).
#[utoipa::path(
    post,
    path = "/v1/moderation",
    request_body = ModerationBody,
    responses(
        (status = 201, description = "applied", body = ModerationOutcome),
        (status = 200, description = "the same command again: the first run's outcome, `duplicate: true`", body = ModerationOutcome),
        (status = 400, description = "malformed body", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token has neither the moderate nor the admin scope", body = ErrorBody),
        (status = 409, description = "`action_id_reused`: the action id was used for another command", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 422, description = "an invalid value: `invalid_action_id`, `invalid_action`, `invalid_user_id`, `invalid_board_id`, `board_required`, `board_not_allowed`, `period_not_allowed`, `invalid_period`, `invalid_reason`", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable, or commands in flight held a ban up too long", body = ErrorBody),
    ),
    tag = "moderation",
    security(("bearer" = []))
)]
pub async fn post_moderation(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // Who may moderate comes before anything about the body is said.
    identity.require_moderator()?;
    let raw: ModerationBody = json_body(
        body,
        "{\"action_id\", \"action\": \"remove|ban|unban|erase\", \"user_id\", \"board\"?, \"period\"?, \"reason\"}",
    )?;
    let done = moderate(&state, &identity, raw).await?;
    let status = if done.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(ModerationOutcome::from(done))).into_response())
}
