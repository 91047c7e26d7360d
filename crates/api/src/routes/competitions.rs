//! Competitions (issue 39, tournaments): `PUT /v1/competitions/{id}` (admin) declares one over a
//! declared board, `GET /v1/competitions[/{id}]` lists and reads them, `POST
//! /v1/competitions/{id}/entries` enters a player (a player token for itself, a service token
//! for any). The rules are core's (`competition/`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use ledgerboard_core::competition::{self, Competition, Declaration, Entry, Prize};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::generation;
use serde::{Deserialize, Serialize};

use super::{json_body, path_error};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// A competition as declared.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompetitionBody {
    /// A one-off competition's window, RFC 3339 times in whole seconds: scores and entries are
    /// taken from `starts_at` (absent: the next whole second; it must be ahead) until `ends_at`,
    /// on a board declared with `reset: manual`. Neither: a recurring competition, whose runs
    /// are its board's periods (a board with a schedule).
    #[schema(example = "2026-12-07T18:00:00Z")]
    starts_at: Option<String>,
    #[schema(example = "2026-12-07T20:00:00Z")]
    ends_at: Option<String>,
    /// A recurring competition's runs take scores and entries for this many seconds from their
    /// start (absent: the whole period).
    #[schema(minimum = 1)]
    duration_s: Option<i32>,
    /// Whether a score needs an entry (default true; cohorts need it).
    entry_required: Option<bool>,
    /// The most entrants of one run (absent: no cap).
    #[schema(minimum = 1)]
    max_size: Option<i32>,
    /// The most entrants of one cohort: each entrant ranks in a cohort of its run (absent: no
    /// cohorts, the run is one board).
    #[schema(minimum = 2, maximum = 10000)]
    cohort_size: Option<i32>,
    /// With `cohort_size`: an entry with a `rating` joins the open cohort whose first entrant's
    /// rating is nearest its own within this band, else opens a new one.
    #[schema(minimum = 0, maximum = 9007199254740991_i64)]
    rating_band: Option<i64>,
    /// A league's tiers, lowest first (needs `cohort_size`): at each run's close the first
    /// `promote` of every cohort move up a tier, the last `relegate` down.
    #[schema(max_items = 10)]
    tiers: Option<Vec<competition::Tier>>,
    /// Up to 64 characters, for listing (`GET /v1/competitions?category=`).
    #[schema(max_length = 64)]
    category: Option<String>,
    /// A JSON object of at most 4096 bytes, given back as it is.
    #[schema(value_type = Option<Object>)]
    metadata: Option<serde_json::Value>,
    /// Rank ranges and what they earn, ascending and not overlapping (a tier's own table
    /// replaces it for that tier's cohorts).
    #[schema(max_items = 100)]
    prizes: Option<Vec<Prize>>,
}

/// Declares the competition `{id}` over the board of that id (declared with a reset: `manual`
/// for a one-off window, a schedule for recurring runs), or changes it (its window, duration,
/// cohorts, rating band and tiers only before it has entrants).
#[utoipa::path(
    put,
    path = "/v1/competitions/{id}",
    params(("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    request_body = CompetitionBody,
    responses(
        (status = 201, description = "declared", body = Competition),
        (status = 200, description = "changed", body = Competition),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 409, description = "`competition_below_entrants`: max_size under the entrants it has; `competition_started`: a change of what its entrants entered", body = ErrorBody),
        (status = 422, description = "`invalid_window`, `invalid_duration`, `invalid_max_size`, `invalid_cohort_size`, `invalid_rating_band`, `invalid_tiers`, `invalid_category`, `invalid_metadata`, `invalid_prizes`, `competition_board` (the board cannot hold it: undeclared, never resets, or its reset does not fit), `invalid_board_id`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security(("bearer" = []))
)]
pub async fn put_competition(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Competition>), ApiError> {
    identity.require_admin()?;
    let Path(id) = id.map_err(path_error)?;
    let id = BoardId::parse(&id)?;
    let raw: CompetitionBody = json_body(
        body,
        "{\"starts_at\"?, \"ends_at\"?, \"duration_s\"?, \"entry_required\"?, \"max_size\"?, \"cohort_size\"?, \"rating_band\"?, \"tiers\"?, \"category\"?, \"metadata\"?, \"prizes\"?}",
    )?;
    let declaration = Declaration {
        category: raw.category,
        starts_at: raw.starts_at,
        ends_at: raw.ends_at,
        duration_s: raw.duration_s,
        entry_required: raw.entry_required,
        max_size: raw.max_size,
        cohort_size: raw.cohort_size,
        rating_band: raw.rating_band,
        tiers: raw.tiers.unwrap_or_default(),
        metadata: raw.metadata,
        prizes: raw.prizes.unwrap_or_default(),
    };
    let (competition, created) =
        competition::declare(&state.db, &state.definitions, &id, &declaration).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(competition)))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CompetitionQuery {
    /// Only this category's.
    #[param(max_length = 64)]
    category: Option<String>,
    /// `upcoming`, `open` or `ended`, by the database clock.
    #[param(pattern = "^(upcoming|open|ended)$")]
    state: Option<String>,
    /// The `next` of the previous page.
    #[param(pattern = r"^[A-Za-z0-9_.-]{1,64}$")]
    after: Option<String>,
    /// 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u64>,
}

/// A page of competitions.
#[derive(Serialize, utoipa::ToSchema)]
pub struct CompetitionPage {
    competitions: Vec<Competition>,
    /// The `after` of the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// Competitions in id order, with their windows, entrants and state.
#[utoipa::path(
    get,
    path = "/v1/competitions",
    // Unique in the document (the SDKs name their functions after it).
    operation_id = "list_competitions",
    params(CompetitionQuery),
    responses(
        (status = 200, description = "a page of competitions", body = CompetitionPage),
        (status = 400, description = "an unknown or malformed parameter", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 422, description = "`out_of_range` limit or state, an invalid id in `after`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security((), ("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    query: Result<Query<CompetitionQuery>, QueryRejection>,
) -> Result<Json<CompetitionPage>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::BadQuery(e.body_text()))?;
    let limit = i64::try_from(q.limit.unwrap_or(50)).unwrap_or(i64::MAX);
    if !(1..=competition::MAX_PAGE).contains(&limit) {
        return Err(ApiError::OutOfRange(format!(
            "limit must be 1 to {}",
            competition::MAX_PAGE
        )));
    }
    let state_filter = q
        .state
        .as_deref()
        .map(|s| {
            competition::State::parse(s)
                .ok_or_else(|| ApiError::OutOfRange("state must be upcoming, open or ended".into()))
        })
        .transpose()?;
    if q.category
        .as_ref()
        .is_some_and(|c| c.chars().count() > 64 || c.contains('\0'))
    {
        return Err(ApiError::OutOfRange(
            "category is at most 64 characters".into(),
        ));
    }
    let after = q.after.as_deref().map(BoardId::parse).transpose()?;
    let competitions = competition::list(
        &state.read_db,
        q.category.as_deref(),
        state_filter,
        after.as_ref(),
        limit,
    )
    .await?;
    let next = (competitions.len() as i64 == limit)
        .then(|| competitions.last().map(|c| c.id.clone()))
        .flatten();
    Ok(Json(CompetitionPage { competitions, next }))
}

/// One competition.
#[utoipa::path(
    get,
    path = "/v1/competitions/{id}",
    params(("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    responses(
        (status = 200, description = "the competition", body = Competition),
        (status = 400, description = "malformed path", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 404, description = "`competition_unknown`", body = ErrorBody),
        (status = 422, description = "`invalid_board_id`", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security((), ("bearer" = []))
)]
pub async fn get_competition(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Competition>, ApiError> {
    let Path(id) = id.map_err(path_error)?;
    let id = BoardId::parse(&id)?;
    let found = competition::get(&state.read_db, &id).await?;
    Ok(Json(found.ok_or(
        ledgerboard_core::competition::CompetitionError::Unknown,
    )?))
}

/// An entry as sent.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryBody {
    /// The player: a player token's own user id (which it may leave out); required of a
    /// service token.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"
    )]
    user_id: Option<String>,
    /// The player's rating, when the competition places cohorts by rating (`rating_band`).
    #[schema(minimum = -9007199254740991_i64, maximum = 9007199254740991_i64)]
    rating: Option<i64>,
}

/// Enters a player into the run open now: once per run (again: the same entry), inside the
/// window, never past `max_size`; with cohorts, into a cohort of the player's tier, never past
/// `cohort_size` (all decided in one call under the run's lock, whatever the concurrency). A
/// cohort's first entry seals its new board's projection empty, so its reads come from Redis
/// at once.
#[utoipa::path(
    post,
    path = "/v1/competitions/{id}/entries",
    params(("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$")),
    request_body = EntryBody,
    responses(
        (status = 201, description = "entered", body = Entry),
        (status = 200, description = "entered before: that entry, `duplicate: true`", body = Entry),
        (status = 400, description = "malformed body or path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "`forbidden`, `player_board`, `player_user`", body = ErrorBody),
        (status = 404, description = "`competition_unknown`", body = ErrorBody),
        (status = 409, description = "`competition_not_started`, `competition_ended`, `competition_full`, `competition_closing` (a league's previous run is still closing: try again)", body = ErrorBody),
        (status = 422, description = "`invalid_user_id`, `invalid_board_id`, `invalid_rating`", body = ErrorBody),
        (status = 429, description = "past a rate limit; see Retry-After", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security(("player" = []), ("bearer" = []))
)]
pub async fn post_entry(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Entry>), ApiError> {
    let Path(id) = id.map_err(path_error)?;
    let id = BoardId::parse(&id)?;
    identity.require_write(&id)?;
    let raw: EntryBody = json_body(body, "{\"user_id\"?: \"<string>\", \"rating\"?: <integer>}")?;
    let user = identity.acting_user(raw.user_id)?;
    let enter = || state.entries.enter(id.clone(), user.clone(), raw.rating);
    let entered = match enter().await {
        // A league's next run waits for the previous run's close, which this entry makes
        // rather than wait for the reconciler's next pass.
        Err(competition::CompetitionError::Closing) => {
            competition::close_ended(&state.db, &id).await?;
            enter().await?
        }
        other => other?,
    };
    if let Some(board) = &entered.new_cohort {
        seal_cohort(&state, &id, board).await;
    }
    let entry = entered.entry;
    let status = if entry.duplicate {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(entry)))
}

/// Seals a new cohort's empty projection (`projection::generation::seal_new`). A failure only
/// costs its first reads a rebuild: logged, never the entry's answer.
async fn seal_cohort(state: &AppState, id: &BoardId, board: &BoardId) {
    let order = match state.definitions.get(&state.db, id).await {
        Ok(definition) => definition.order(),
        Err(e) => {
            tracing::warn!(%board, error = %e, "new cohort not sealed: its definition did not answer");
            return;
        }
    };
    match generation::seal_new(&state.store, board, order).await {
        Ok(true) => tracing::debug!(%board, "new cohort sealed"),
        Ok(false) => {
            tracing::info!(%board, "new cohort not sealed: its keys exist (a rebuild seals it)")
        }
        Err(e) => {
            tracing::warn!(%board, error = %e, "new cohort not sealed; its first reads ask for a rebuild")
        }
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ResultsQuery {
    /// The run (a period id; default: the run now, or a one-off competition's only run).
    #[param(max_length = 16, pattern = "^[0-9]{8}T[0-9]{6}Z$")]
    run: Option<String>,
    /// The cohort (with cohorts, results are per cohort).
    #[param(minimum = 1, maximum = 999_999)]
    cohort: Option<u32>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
    /// 0 to 10,000,000 (default 0).
    #[param(minimum = 0, maximum = 10_000_000)]
    offset: Option<u64>,
    /// How ties share ranks, and so prizes (default `ordinal`).
    #[serde(default)]
    #[param(inline)]
    rank_mode: ledgerboard_core::ranking::RankMode,
}

/// A page of a run's standings (of one cohort, with cohorts) from PostgreSQL, each entry with
/// the prize its rank earns in `rank_mode`: the frozen standings and prizes once the run is
/// closed (`final`: pay from those), else the live ones.
#[utoipa::path(
    get,
    path = "/v1/competitions/{id}/results",
    params(("id" = String, Path, description = "its board's id", pattern = r"^[A-Za-z0-9_.-]{1,64}$"), ResultsQuery),
    responses(
        (status = 200, description = "a page of results", body = competition::Results),
        (status = 400, description = "malformed path or query", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 404, description = "`competition_unknown`, `competition_run_unknown`", body = ErrorBody),
        (status = 422, description = "`out_of_range`, `invalid_board_id`, `cohort_required` (a competition with cohorts ranks by cohort)", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "competitions",
    security((), ("bearer" = []))
)]
pub async fn results(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    query: Result<Query<ResultsQuery>, QueryRejection>,
) -> Result<Json<competition::Results>, ApiError> {
    let Path(id) = id.map_err(path_error)?;
    let id = BoardId::parse(&id)?;
    let Query(q) = query.map_err(|e| ApiError::BadQuery(e.body_text()))?;
    let limit = q.limit.unwrap_or(100);
    let offset = q.offset.unwrap_or(0);
    if !(1..=1000).contains(&limit) || offset > 10_000_000 {
        return Err(ApiError::OutOfRange(
            "limit must be 1 to 1000, offset 0 to 10000000".into(),
        ));
    }
    if q.run
        .as_deref()
        .is_some_and(|r| !ledgerboard_core::model::is_period_id(r))
    {
        return Err(ApiError::OutOfRange(
            "run must be a period id (YYYYMMDDTHHMMSSZ)".into(),
        ));
    }
    let results = competition::results(
        &state.read_db,
        &state.definitions,
        &id,
        q.run.as_deref(),
        q.cohort,
        q.rank_mode,
        offset,
        limit,
    )
    .await?;
    Ok(Json(results))
}
