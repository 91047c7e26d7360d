//! Board definitions: `PUT /v1/boards/{board}` declares or replaces one (admin scope),
//! `GET /v1/boards/{board}` shows one (an undeclared board's implicit definition too),
//! `GET /v1/boards` lists the declared ones. The rules are core's (`board/definition/`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ledgerboard_core::board::definition::{
    self, Declaration, DefinitionError, Expect, parse_operator, parse_reset, parse_sort,
    parse_tie_break,
};
use ledgerboard_core::board::definition::{
    AttemptRule, BoardDefinition, Column, ReviewRules, WritePolicy,
};
use ledgerboard_core::board::periods;
use ledgerboard_core::model::BoardId;
use serde::{Deserialize, Serialize};

use super::{json_body, path_error};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A board's definition as declared. Left out: descending, ties by user id, scores within
/// ±(2^53 − 1), deltas within ±1000 (add boards), no display name. A PUT replaces the whole
/// definition, so what it leaves out takes these defaults, not the previous values.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DefinitionBody {
    /// Up to 128 characters, no control characters.
    #[schema(max_length = 128)]
    pub(crate) display_name: Option<String>,
    /// `add` (commands carry a `delta`), `best` (keep the best `score`), `latest` (keep the last).
    #[schema(example = "best")]
    pub(crate) operator: Option<String>,
    /// `descending` (default: the highest score ranks first) or `ascending` (a time trial).
    pub(crate) sort: Option<String>,
    /// `user_id` (default: equal scores by user id) or `earliest` (the first to reach a score
    /// ranks first).
    pub(crate) tie_break: Option<String>,
    #[schema(value_type = Option<i64>, minimum = -9007199254740991i64, maximum = 9007199254740991i64)]
    pub(crate) min_score: Option<serde_json::Number>,
    #[schema(value_type = Option<i64>, minimum = -9007199254740991i64, maximum = 9007199254740991i64)]
    pub(crate) max_score: Option<serde_json::Number>,
    /// Add boards only (default -1000).
    #[schema(value_type = Option<i64>)]
    pub(crate) min_delta: Option<serde_json::Number>,
    /// Add boards only (default 1000).
    #[schema(value_type = Option<i64>)]
    pub(crate) max_delta: Option<serde_json::Number>,
    /// When the board starts a new period: `never` (default), `manual`, `daily`, `weekly`
    /// (Mondays), `monthly`, `every <n>s` (n from 1 to 99999999), or a five-field cron
    /// expression in the board's time zone (`0 18 * * FRI`). Each period is read with
    /// `period=`; the first opens when the board is declared.
    #[schema(example = "weekly")]
    pub(crate) reset: Option<String>,
    /// The IANA time zone whose midnights start daily, weekly and monthly periods, and whose
    /// wall clock a cron schedule reads (default `UTC`).
    #[schema(example = "Europe/Paris", max_length = 64)]
    pub(crate) time_zone: Option<String>,
    /// Up to 3 columns the board ranks by, column by column, each in its own order (a racing
    /// board: laps descending, then time ascending); commands then carry one integer per
    /// column. The first column is the score: its order and bounds are the board's `sort`,
    /// `min_score` and `max_score`, which are then left out. Absent: one column, the score.
    #[schema(max_items = 3)]
    pub(crate) columns: Option<Vec<Column>>,
    /// Up to 7 boards that every command to this board also applies to, in the same
    /// transaction, under each one's own rule, bounds and period, with one event id (a
    /// daily, weekly and all-time set). Each must be declared, rank by the same columns, take
    /// the same value field (`delta` for add boards, `score` for best and latest ones) and
    /// feed no board itself.
    #[schema(max_items = 7)]
    pub(crate) feeds: Option<Vec<String>>,
    /// Who may post scores: `server` (service tokens only; the default) or `player` (player
    /// tokens too, each for its own user id). May change at any time.
    #[schema(example = "player")]
    pub(crate) write_policy: Option<String>,
    /// Whether a player's score must come from an attempt (`POST .../attempts`), and the
    /// attempts' rule: `{"min_duration_ms"?, "max_per_period"?, "ttl_s"?}`; null or absent:
    /// no attempts.
    #[schema(value_type = Option<AttemptRule>)]
    pub(crate) attempts: Option<serde_json::Value>,
    /// Review rules: a score past one is held for review, its sender answered as though it
    /// was applied: `{"ceiling"?: [one per column, or null], "max_jump"?, "max_per_minute"?}`;
    /// null or absent: none.
    #[schema(value_type = Option<ReviewRules>)]
    pub(crate) review: Option<serde_json::Value>,
}

impl DefinitionBody {
    fn declaration(&self) -> Result<Declaration, DefinitionError> {
        // A bound that is not an integer (1.5, 1e300) is the bound's error, as one out of range.
        let int = |n: &Option<serde_json::Number>, e: DefinitionError| {
            n.as_ref()
                .map(|n| n.as_i64().ok_or_else(|| e.clone()))
                .transpose()
        };
        Ok(Declaration {
            display_name: self.display_name.clone(),
            operator: Some(parse_operator(
                self.operator.as_deref().ok_or(DefinitionError::Operator)?,
            )?),
            sort: self.sort.as_deref().map(parse_sort).transpose()?,
            tie_break: self.tie_break.as_deref().map(parse_tie_break).transpose()?,
            min_score: int(&self.min_score, DefinitionError::ScoreBounds)?,
            max_score: int(&self.max_score, DefinitionError::ScoreBounds)?,
            min_delta: int(&self.min_delta, DefinitionError::DeltaBounds)?,
            max_delta: int(&self.max_delta, DefinitionError::DeltaBounds)?,
            reset: self.reset.as_deref().map(parse_reset).transpose()?,
            time_zone: self.time_zone.clone(),
            columns: self.columns.clone(),
            feeds: self
                .feeds
                .as_ref()
                .map(|feeds| {
                    feeds
                        .iter()
                        .map(|f| BoardId::parse(f).map_err(|_| DefinitionError::Feeds))
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?,
            write_policy: self
                .write_policy
                .as_deref()
                .map(|p| WritePolicy::parse(p).ok_or(DefinitionError::WritePolicy))
                .transpose()?,
            attempts: Some(
                self.attempts
                    .as_ref()
                    .map(AttemptRule::from_json)
                    .transpose()?
                    .flatten(),
            ),
            review: Some(
                self.review
                    .as_ref()
                    .map(ReviewRules::from_json)
                    .transpose()?
                    .flatten(),
            ),
        })
    }
}

/// Declares the board, or replaces its definition. A change of operator, sort, tie_break, reset
/// or time_zone is refused while the board has entries; bounds and display_name may change at
/// any time. A
/// body equal to the stored definition changes nothing (the revision stays).
#[utoipa::path(
    put,
    path = "/v1/boards/{board}",
    params(("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    request_body = DefinitionBody,
    responses(
        (status = 201, description = "declared (the board had no definition)", body = BoardDefinition),
        (status = 200, description = "replaced, or already as stated (then the revision is unchanged)", body = BoardDefinition),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 409, description = "`board_has_entries`: the operator, sort, tie_break, reset, time_zone or the columns' number or orders of a board with entries", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 422, description = "an invalid value: `invalid_operator`, `invalid_sort`, `invalid_tie_break`, `invalid_score_bounds`, `invalid_delta_bounds`, `delta_bounds_not_allowed`, `invalid_display_name`, `invalid_reset`, `invalid_time_zone`, `invalid_columns`, `invalid_column_bounds`, `columns_and_score`, `invalid_feeds`, `feeds_unknown`, `feeds_columns`, `feeds_value`, `feeds_loop`, `invalid_write_policy`, `invalid_attempts`, `invalid_review`, `invalid_board_id`", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable, or commands in flight held the change up too long", body = ErrorBody),
    ),
    tag = "boards",
    security(("bearer" = []))
)]
pub async fn put_board(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    board: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    // Who may change definitions comes before anything about the body is said.
    identity.require_admin()?;
    let board = BoardId::parse(&board)?;
    let raw: DefinitionBody = json_body(
        body,
        "{\"operator\": \"add|best|latest\", \"sort\"?, \"tie_break\"?, \"min_score\"?, \"max_score\"?, \"min_delta\"?, \"max_delta\"?, \"display_name\"?, \"reset\"?, \"time_zone\"?, \"columns\"?: [{\"name\", \"order\", \"min\"?, \"max\"?}], \"feeds\"?: [\"<board>\"], \"write_policy\"?: \"server|player\", \"attempts\"?: {…}|null, \"review\"?: {…}|null}",
    )?;
    let defined = define(&state, &board, &raw).await?;
    let status = if defined.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(defined.definition)).into_response())
}

/// Declares or replaces `board`'s definition as `raw` states it: `PUT /v1/boards/{board}` and
/// the console's form both come here (the caller checked the admin scope).
pub(crate) async fn define(
    state: &AppState,
    board: &BoardId,
    raw: &DefinitionBody,
) -> Result<definition::Defined, ApiError> {
    let def = raw.declaration()?.definition(board.clone())?;
    let defined = definition::define(&state.db, &def, Expect::Any).await;
    // Forgotten whatever the outcome: a failed attempt may have committed before its answer
    // was lost, and a re-read costs one query.
    state.definitions.forget(board);
    state.periods.forget(board);
    let defined = defined?;
    if defined.order_changed {
        // The board had no entries; a seal left from earlier ones states the old order.
        state.rebuilds.request(&state.store, board);
    }
    Ok(defined)
}

/// The board's definition as this api applies it (kept up to `api.definition_cache_ms`); an
/// undeclared board's is the implicit one (`declared: false`, revision 0).
#[utoipa::path(
    get,
    path = "/v1/boards/{board}",
    params(("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    responses(
        (status = 200, description = "the definition", body = BoardDefinition),
        (status = 400, description = "malformed path", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 422, description = "an invalid board id", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "boards",
    security((), ("bearer" = []))
)]
pub async fn get_board(
    State(state): State<AppState>,
    board: Result<Path<String>, PathRejection>,
) -> Result<Json<BoardDefinition>, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    let board = BoardId::parse(&board)?;
    let def = state.definitions.get(&state.read_db, &board).await?;
    Ok(Json(BoardDefinition::clone(&def)))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// The `next` of the previous page: boards after this id (byte order).
    after: Option<String>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct BoardList {
    /// Declared boards in board id order (byte order).
    boards: Vec<BoardDefinition>,
    /// The `after` of the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// The declared boards, a page at a time (undeclared boards are not listed).
#[utoipa::path(
    get,
    path = "/v1/boards",
    params(ListQuery),
    responses(
        (status = 200, description = "a page of definitions", body = BoardList),
        (status = 400, description = "an unknown or malformed parameter", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 422, description = "`out_of_range` limit, or an invalid board id in `after`", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "boards",
    security((), ("bearer" = []))
)]
pub async fn list_boards(
    State(state): State<AppState>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<BoardList>, ApiError> {
    let Query(query) = query.map_err(|r| ApiError::BadQuery(r.body_text()))?;
    let limit = query.limit.unwrap_or(100);
    if !(1..=definition::MAX_PAGE as u64).contains(&limit) {
        return Err(ApiError::OutOfRange(format!(
            "limit must be between 1 and {}",
            definition::MAX_PAGE
        )));
    }
    let after = query.after.as_deref().map(BoardId::parse).transpose()?;
    let boards = definition::list(&state.read_db, after.as_ref(), limit as usize).await?;
    // A full page may have a successor; a short one is the last.
    let next = (boards.len() as u64 == limit)
        .then(|| boards.last().map(|d| d.board.to_string()))
        .flatten();
    Ok(Json(BoardList { boards, next }))
}

/// What a manual reset did.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ResetOutcome {
    board: String,
    /// The period it opens (its start in UTC, `YYYYMMDDTHHMMSSZ`): the next whole second by
    /// the database clock. Commands committed before the reset stay in the period they landed
    /// in.
    period: String,
    /// False when a reset within the same second had already opened this period.
    opened: bool,
}

/// Opens the board's next period (admin scope): for boards declared with a `reset`, whose
/// scheduled periods a manual reset also cuts short. Idempotent within a second.
#[utoipa::path(
    post,
    path = "/v1/boards/{board}/reset",
    params(("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    responses(
        (status = 200, description = "the period that opens", body = ResetOutcome),
        (status = 400, description = "malformed path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 422, description = "`board_never_resets`: the board is not declared with a reset; `invalid_board_id`", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "boards",
    security(("bearer" = []))
)]
pub async fn post_reset(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    board: Result<Path<String>, PathRejection>,
) -> Result<Json<ResetOutcome>, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    identity.require_admin()?;
    let board = BoardId::parse(&board)?;
    let reset = periods::reset(&state.db, &board, identity.name()).await;
    state.periods.forget(&board);
    let reset = reset?.ok_or_else(|| ApiError::NeverResets(board.to_string()))?;
    Ok(Json(ResetOutcome {
        board: board.to_string(),
        period: reset.period,
        opened: reset.opened,
    }))
}
