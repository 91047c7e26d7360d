//! The review queue (moderate or admin scope): held scores (`board/guard/review.rs`), listed
//! oldest first, approved (applied then) or rejected (kept hidden), each decision recorded
//! with who, when and why.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use ledgerboard_core::board::guard::review::{self, Decided, Held, State as HeldState};
use ledgerboard_core::model::{BoardId, EventId};
use serde::{Deserialize, Serialize};

use super::{json_body, path_error};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReviewQuery {
    /// `pending` (the default), `approved` or `rejected`.
    #[param(pattern = "^(pending|approved|rejected)$")]
    state: Option<String>,
    /// Only this board's (as the score was sent to it).
    #[param(pattern = r"^[A-Za-z0-9_.-]{1,64}$")]
    board: Option<String>,
    /// The `next` of the previous page.
    after: Option<String>,
    /// 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u64>,
}

/// A page of held scores.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ReviewPage {
    held: Vec<Held>,
    /// Where the next page starts (absent on the last page).
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// Held scores in one state, oldest first.
#[utoipa::path(
    get,
    path = "/v1/reviews",
    // Unique in the document (the SDKs name their functions after it).
    operation_id = "list_reviews",
    params(ReviewQuery),
    responses(
        (status = 200, description = "a page of held scores", body = ReviewPage),
        (status = 400, description = "an unknown query parameter", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the moderate scope", body = ErrorBody),
        (status = 422, description = "`invalid_query`-like values: `out_of_range`, `invalid_cursor`", body = ErrorBody),
    ),
    tag = "moderation",
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    query: Result<Query<ReviewQuery>, QueryRejection>,
) -> Result<Json<ReviewPage>, ApiError> {
    identity.require_moderator()?;
    let Query(q) = query.map_err(|e| ApiError::BadQuery(e.body_text()))?;
    let held_state = match q.state.as_deref() {
        None => HeldState::Pending,
        Some(s) => HeldState::parse(s).ok_or_else(|| {
            ApiError::OutOfRange("state must be pending, approved or rejected".into())
        })?,
    };
    let limit = i64::try_from(q.limit.unwrap_or(50)).unwrap_or(i64::MAX);
    if !(1..=review::MAX_PAGE).contains(&limit) {
        return Err(ApiError::OutOfRange(format!(
            "limit must be 1 to {}",
            review::MAX_PAGE
        )));
    }
    let board = q.board.as_deref().map(BoardId::parse).transpose()?;
    let after = q
        .after
        .as_deref()
        .map(|a| {
            a.split_once('/')
                .filter(|(at, id)| {
                    chrono::DateTime::parse_from_rfc3339(at).is_ok()
                        && uuid::Uuid::parse_str(id).is_ok()
                })
                .ok_or_else(|| ApiError::InvalidCursor("after must be a page's next".into()))
        })
        .transpose()?;
    let held = review::list(&state.db, held_state, after, limit, board.as_ref()).await?;
    let next = (held.len() as i64 == limit)
        .then(|| held.last().map(|h| format!("{}/{}", h.held_at, h.event_id)))
        .flatten();
    Ok(Json(ReviewPage { held, next }))
}

/// A decision as sent.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// Why (kept with the held score): 1 to 512 characters, no control character.
    #[schema(
        min_length = 1,
        max_length = 512,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"
    )]
    reason: String,
}

/// Approves a held score: applied now as the command it was (its event id and fields), in the
/// period it was held in while that period is open. Approving it again answers the same.
#[utoipa::path(
    post,
    path = "/v1/reviews/{event_id}/approve",
    params(("event_id" = String, Path, description = "the held score's event id", format = Uuid)),
    request_body = DecisionBody,
    responses(
        (status = 200, description = "approved: the score's outcome", body = Decided),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the moderate scope", body = ErrorBody),
        (status = 404, description = "`review_unknown`: no held score has this event id", body = ErrorBody),
        (status = 409, description = "`review_decided` (it was rejected), `review_period_over` (its period is over: its standings are frozen)", body = ErrorBody),
        (status = 422, description = "`invalid_reason`, or the score as its board's definition judges it now", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "moderation",
    security(("bearer" = []))
)]
pub async fn approve(
    state: State<AppState>,
    identity: Extension<Identity>,
    event: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Decided>), ApiError> {
    decide(state, identity, event, body, true).await
}

/// Rejects a pending held score: it stays hidden, with the reason.
#[utoipa::path(
    post,
    path = "/v1/reviews/{event_id}/reject",
    params(("event_id" = String, Path, description = "the held score's event id", format = Uuid)),
    request_body = DecisionBody,
    responses(
        (status = 200, description = "rejected", body = Decided),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the moderate scope", body = ErrorBody),
        (status = 404, description = "`review_unknown`", body = ErrorBody),
        (status = 409, description = "`review_decided`: it was decided already", body = ErrorBody),
        (status = 422, description = "`invalid_reason`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "moderation",
    security(("bearer" = []))
)]
pub async fn reject(
    state: State<AppState>,
    identity: Extension<Identity>,
    event: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Decided>), ApiError> {
    decide(state, identity, event, body, false).await
}

/// A decision, as the api's approve and reject and the console take it.
pub(crate) async fn decide(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    event: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
    approve: bool,
) -> Result<(StatusCode, Json<Decided>), ApiError> {
    identity.require_moderator()?;
    let Path(event) = event.map_err(path_error)?;
    let event = EventId::parse(&event)?;
    let raw: DecisionBody = json_body(body, "{\"reason\": \"<1 to 512 characters>\"}")?;
    let decided = decision(&state, &identity, &event, &raw.reason, approve).await?;
    Ok((StatusCode::OK, Json(decided)))
}

/// Approves or rejects `event` as `identity`.
pub(crate) async fn decision(
    state: &AppState,
    identity: &Identity,
    event: &EventId,
    reason: &str,
    approve: bool,
) -> Result<Decided, ApiError> {
    Ok(if approve {
        review::approve(
            &state.commands,
            &state.definitions,
            &state.db,
            event,
            identity.name(),
            reason,
        )
        .await?
    } else {
        review::reject(&state.db, event, identity.name(), reason).await?
    })
}
