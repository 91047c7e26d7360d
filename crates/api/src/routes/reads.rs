//! Leaderboard reads. Every answer says where it came from and how far behind the projection
//! is; the `consistency` parameter chooses the source:
//!
//! - `eventual`: the projection, always (503 when Redis cannot answer), with `freshness`
//!   saying whether the board's projection is whole;
//! - `bounded` (default): the projection while the board's lag is within `api.max_lag_ms` and
//!   its seal says the projection is whole, else PostgreSQL, with the reason in `freshness`
//!   (an unknown lag counts as too large; 503 when PostgreSQL cannot answer);
//! - `strong`: PostgreSQL only, for rewards and payouts (503 when it cannot answer; never the
//!   projection).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use ledgerboard_core::board::definition::TieBreak;
use ledgerboard_core::db::StoreError;
use ledgerboard_core::db::reads;
use ledgerboard_core::model::{BoardId, MemberStanding, UserId};
use ledgerboard_core::projection::ReadModelError;
use ledgerboard_core::projection::read::{self, Seal, Sealed};
use ledgerboard_core::ranking::Cursor;
use ledgerboard_core::telemetry::metrics::Label;
use serde::Deserialize;

use super::path_error;
pub use super::read_shapes::{AroundQuery, Member, Page, TopQuery, UserQuery, Users, UsersQuery};
use super::target::order;
pub(crate) use super::target::{Target, period_board};
use crate::coalesce::{Start, TopRequest};
use crate::error::{ApiError, ErrorBody};
use crate::freshness::{Freshness, ProjectionState, Reason, Source};
use crate::metrics::metrics;
use crate::state::AppState;

pub const MAX_LIMIT: u64 = 1_000;
pub const MAX_OFFSET: u64 = 10_000_000;
pub const MAX_RADIUS: u64 = 100;
/// Ids in one `users?ids=` read (a friends board).
pub const MAX_IDS: usize = 100;

/// Where a read may come from (see the module's documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Consistency {
    Eventual,
    #[default]
    Bounded,
    Strong,
}

fn query_error(rejection: QueryRejection) -> ApiError {
    ApiError::BadQuery(rejection.body_text())
}

/// The ids of `users?ids=`: 1 to [`MAX_IDS`] distinct valid user ids.
fn parse_ids(raw: &str) -> Result<Vec<UserId>, ApiError> {
    let mut ids = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for part in raw.split(',') {
        let id =
            UserId::parse(part).map_err(|e| ApiError::InvalidIds(format!("ids: {part:?}: {e}")))?;
        if !seen.insert(part) {
            return Err(ApiError::InvalidIds(format!(
                "ids: {part:?} is given twice"
            )));
        }
        ids.push(id);
        if ids.len() > MAX_IDS {
            return Err(ApiError::InvalidIds(format!(
                "ids must hold 1 to {MAX_IDS} user ids"
            )));
        }
    }
    Ok(ids)
}

fn in_range(name: &'static str, value: u64, min: u64, max: u64) -> Result<u64, ApiError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ApiError::OutOfRange(format!(
            "{name} must be between {min} and {max}"
        )))
    }
}

/// Reads from the source `consistency` allows. `accept` may refuse a projection answer (too
/// old for read-your-writes), which then comes from PostgreSQL. `has_members` says whether an
/// answer shows the board has members: a board whose projection is not whole is only asked to
/// be rebuilt then, so reads of boards that do not exist create nothing in Redis.
pub(crate) async fn read<T>(
    state: &AppState,
    target: &Target,
    consistency: Consistency,
    from_projection: impl AsyncFnOnce() -> Result<Sealed<T>, ReadModelError>,
    from_database: impl AsyncFnOnce() -> Result<T, StoreError>,
    accept: impl FnOnce(&T) -> bool,
    has_members: impl Fn(&T) -> bool,
) -> Result<(T, Freshness), ApiError> {
    let board = &target.board;
    let lag = state.freshness.get(&state.read_db, board).await;
    // `Seen(state)`: the projection was read and is stated as it was found. `Unread`: the
    // fallback comes before any look at Redis (a lag over the bound, or unknown), so the seal
    // is read beside the database's answer, in the same time: a board lost or broken while
    // it lags (rows held back at a corrupt member, a backlog) is stated, and asked to be
    // rebuilt, by this read, not left to the reconciler's next pass. `Skipped`: Redis is not
    // asked (strong reads, archived periods, Redis failing).
    // A broken seal always means a board with keys; a missing one may be a board that does
    // not exist, so only an answer with members asks for a rebuild.
    let ask_if_not_whole = |projection: ProjectionState, value: &T| {
        if projection == ProjectionState::Broken
            || (projection == ProjectionState::Missing && has_members(value))
        {
            state.rebuilds.request(&state.store, board);
        }
    };
    let database = async |reason: Reason, projection: Looked| {
        metrics().read_fallbacks.add(1, &[reason.key_value()]);
        let (value, projection) = match projection {
            Looked::Unread => {
                let (value, seal) =
                    tokio::join!(from_database(), read::board_seal(&state.store, board));
                // A seal Redis could not give is `projection: null`, the documented unknown
                // (never `missing`), and asks for no rebuild.
                (value, seal.ok().map(ProjectionState::from))
            }
            Looked::Seen(p) => (from_database().await, Some(p)),
            Looked::Skipped => (from_database().await, None),
        };
        let value = value.map_err(ApiError::from)?;
        if let Some(p) = projection {
            ask_if_not_whole(p, &value);
        }
        Ok((
            value,
            Freshness::new(Source::Database, Some(reason), projection, lag),
        ))
    };
    // An archived period's keys are dropped (or about to be): PostgreSQL is its only source,
    // whatever the consistency asked, and nothing asks for a rebuild.
    if target.archived {
        return database(Reason::PeriodArchived, Looked::Skipped).await;
    }
    match consistency {
        Consistency::Strong => return database(Reason::Strong, Looked::Skipped).await,
        Consistency::Eventual => {}
        // An unknown lag may be any lag: a bounded read never takes the projection on trust.
        Consistency::Bounded => match lag {
            None => return database(Reason::LagUnknown, Looked::Unread).await,
            Some(l) if l.lag_ms > state.settings.max_lag_ms.ms() as i64 => {
                return database(Reason::Lag, Looked::Unread).await;
            }
            Some(_) => {}
        },
    }
    let projected = match from_projection().await {
        Ok(projected) => projected,
        Err(e) if consistency == Consistency::Bounded => {
            tracing::warn!(error = %e, "projection unreadable; answering from the database");
            return database(Reason::RedisError, Looked::Skipped).await;
        }
        Err(e) => return Err(ApiError::Unavailable(e.to_string())),
    };
    let projection = ProjectionState::from(projected.seal);
    if projected.seal != Seal::Whole {
        if consistency == Consistency::Bounded {
            let reason = if projected.seal == Seal::Broken {
                Reason::ProjectionBroken
            } else {
                Reason::ProjectionMissing
            };
            return database(reason, Looked::Seen(projection)).await;
        }
        ask_if_not_whole(projection, &projected.value);
    }
    let value = projected.value;
    if accept(&value) {
        Ok((
            value,
            Freshness::new(Source::Projection, None, Some(projection), lag),
        ))
    } else if consistency == Consistency::Eventual {
        Err(ApiError::Stale)
    } else {
        database(Reason::MinVersion, Looked::Seen(projection)).await
    }
}

/// What a fallback to PostgreSQL knows of the projection (see `read`).
#[derive(Clone, Copy)]
enum Looked {
    Seen(ProjectionState),
    Unread,
    Skipped,
}

/// A page of the board in rank order: by position (`offset`) or just after a cursor (`after`).
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/top",
    params(("board" = String, Path, description = "the board id: 1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"), TopQuery),
    responses(
        (status = 200, body = Page),
        (status = 400, description = "an unreadable or unknown parameter", body = ErrorBody),
        (status = 401, description = "auth.reads = token, and no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 429, description = "past the rate limit; see Retry-After", body = ErrorBody),
        (status = 422, description = "a parameter out of range, or a cursor that is not one a page gave", body = ErrorBody),
        (status = 503, description = "no allowed source can answer", body = ErrorBody),
    ),
    tag = "reads",
    security((), ("bearer" = []))
)]
pub async fn top(
    State(state): State<AppState>,
    board: Result<Path<String>, PathRejection>,
    query: Result<Query<TopQuery>, QueryRejection>,
) -> Result<Json<Page>, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    let Query(q) = query.map_err(query_error)?;
    let target = period_board(
        &state,
        BoardId::parse(&board)?,
        q.period.as_deref(),
        q.cohort,
    )
    .await?;
    let (board, period) = (target.board.clone(), target.period.clone());
    let limit = in_range("limit", q.limit.unwrap_or(10), 1, MAX_LIMIT)?;
    let offset = in_range("offset", q.offset.unwrap_or(0), 0, MAX_OFFSET)?;
    let start = match q.after {
        None => Start::Offset(offset),
        Some(_) if q.offset.is_some() => {
            return Err(ApiError::InvalidCursor(
                "after and offset cannot be used together".into(),
            ));
        }
        Some(text) => {
            let cursor = Cursor::decode(&text)
                .filter(|c| UserId::parse(&c.user_id).is_ok())
                .ok_or_else(|| {
                    ApiError::InvalidCursor("after must be a next cursor of a page".into())
                })?;
            Start::After(cursor)
        }
    };
    let order = order(&state, &board, q.consistency).await?;
    // Every tie on a user_id board is 0 and none on an earliest board is, and a board's
    // cursors carry its columns: a cursor of another kind came from no page of this board, and
    // the two paths would place it apart (Redis spells tie 0 of a one-column board without a
    // key, which sorts after every keyed member).
    if let Start::After(c) = &start
        && ((c.key.tie == 0) != (order.tie_break == TieBreak::UserId)
            || c.key.column_count() != order.columns.count())
    {
        return Err(ApiError::InvalidCursor(
            "after is not a cursor of this board".into(),
        ));
    }
    let request = TopRequest {
        board: board.clone(),
        order,
        mode: q.rank_mode,
        start,
        limit,
    };
    let (page, freshness) = read(
        &state,
        &target,
        q.consistency,
        async || state.top_reads.top(&state.store, &request).await,
        async || {
            let (db, mode) = (&state.read_db, q.rank_mode);
            match &request.start {
                Start::Offset(offset) => reads::top(db, &board, order, mode, *offset, limit).await,
                Start::After(c) => reads::after(db, &board, order, mode, c, limit).await,
            }
            .map(Arc::new)
        },
        |_| true,
        |page| page.total > 0,
    )
    .await?;
    Ok(Json(Page::new(
        Arc::unwrap_or_clone(page),
        period,
        target.cohort,
        freshness,
    )))
}

/// One member's score, version and rank.
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/users/{user_id}",
    params(("board" = String, Path, description = "the board id: 1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"), ("user_id" = String, Path, description = "1 to 128 bytes of UTF-8 without control characters", min_length = 1, max_length = 128, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"), UserQuery),
    responses(
        (status = 200, body = Member),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 429, body = ErrorBody),
        (status = 404, description = "unknown member", body = ErrorBody),
        (status = 409, description = "consistency=eventual, and the projection does not hold min_version yet", body = ErrorBody),
        (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody),
    ),
    tag = "reads",
    security((), ("bearer" = []))
)]
pub async fn user(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<UserQuery>, QueryRejection>,
) -> Result<Json<Member>, ApiError> {
    let Path((board, user)) = path.map_err(path_error)?;
    let Query(q) = query.map_err(query_error)?;
    let target = period_board(
        &state,
        BoardId::parse(&board)?,
        q.period.as_deref(),
        q.cohort,
    )
    .await?;
    let (board, period) = (target.board.clone(), target.period.clone());
    let user = UserId::parse(&user)?;
    let min_version = q.min_version.unwrap_or(0);
    let order = order(&state, &board, q.consistency).await?;
    let mode = q.rank_mode;
    // A projection that does not hold the caller's write yet is never used to answer: not
    // its score, and not a rank computed from it.
    let accept = |(m, _): &(Option<MemberStanding>, u64)| match m {
        Some(m) => m.version >= min_version,
        None => min_version <= 0,
    };
    let ((standing, total), freshness) = read(
        &state,
        &target,
        q.consistency,
        async || read::member(&state.store, &board, order, mode, &user).await,
        async || reads::member(&state.read_db, &board, order, mode, &user).await,
        accept,
        |(m, _)| m.is_some(),
    )
    .await?;
    let MemberStanding { entry, version } = standing.ok_or(ApiError::NotFound)?;
    Ok(Json(Member {
        user_id: entry.user_id,
        score: entry.score,
        scores: entry.scores,
        version,
        rank: entry.rank,
        percentile: entry.percentile,
        total,
        metadata: entry.metadata,
        period,
        cohort: target.cohort,
        freshness,
    }))
}

/// Several members by user id (a friends board), each with its rank: one Redis round trip,
/// or one PostgreSQL statement.
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/users",
    params(("board" = String, Path, description = "the board id: 1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"), UsersQuery),
    responses(
        (status = 200, body = Users),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 429, body = ErrorBody),
        (status = 422, description = "ids empty, more than 100, repeated or invalid", body = ErrorBody),
        (status = 503, body = ErrorBody),
    ),
    tag = "reads",
    security((), ("bearer" = []))
)]
pub async fn users(
    State(state): State<AppState>,
    board: Result<Path<String>, PathRejection>,
    query: Result<Query<UsersQuery>, QueryRejection>,
) -> Result<Json<Users>, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    let Query(q) = query.map_err(query_error)?;
    let target = period_board(
        &state,
        BoardId::parse(&board)?,
        q.period.as_deref(),
        q.cohort,
    )
    .await?;
    let (board, period) = (target.board.clone(), target.period.clone());
    let ids = parse_ids(&q.ids)?;
    let order = order(&state, &board, q.consistency).await?;
    let mode = q.rank_mode;
    let (standings, freshness) = read(
        &state,
        &target,
        q.consistency,
        async || read::users(&state.store, &board, order, mode, &ids).await,
        async || reads::users(&state.read_db, &board, order, mode, &ids).await,
        |_| true,
        |s| s.total > 0,
    )
    .await?;
    let found: std::collections::HashSet<&str> = standings
        .members
        .iter()
        .map(|m| m.entry.user_id.as_str())
        .collect();
    let missing = ids
        .iter()
        .map(UserId::as_str)
        .filter(|id| !found.contains(id))
        .map(str::to_owned)
        .collect();
    Ok(Json(Users {
        entries: standings.members.into_iter().map(|m| m.entry).collect(),
        missing,
        total: standings.total,
        period,
        cohort: target.cohort,
        freshness,
    }))
}

/// The members ranked around one member, the member included, as one snapshot.
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/users/{user_id}/around",
    params(("board" = String, Path, description = "the board id: 1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"), ("user_id" = String, Path, description = "1 to 128 bytes of UTF-8 without control characters", min_length = 1, max_length = 128, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$"), AroundQuery),
    responses(
        (status = 200, body = Page),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 429, body = ErrorBody),
        (status = 404, description = "unknown member", body = ErrorBody),
        (status = 422, body = ErrorBody),
        (status = 503, body = ErrorBody),
    ),
    tag = "reads",
    security((), ("bearer" = []))
)]
pub async fn around(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<AroundQuery>, QueryRejection>,
) -> Result<Json<Page>, ApiError> {
    let Path((board, user)) = path.map_err(path_error)?;
    let Query(q) = query.map_err(query_error)?;
    let target = period_board(
        &state,
        BoardId::parse(&board)?,
        q.period.as_deref(),
        q.cohort,
    )
    .await?;
    let (board, period) = (target.board.clone(), target.period.clone());
    let user = UserId::parse(&user)?;
    let radius = in_range("radius", q.radius.unwrap_or(5), 0, MAX_RADIUS)?;
    let order = order(&state, &board, q.consistency).await?;
    let mode = q.rank_mode;
    let (page, freshness) = read(
        &state,
        &target,
        q.consistency,
        async || read::around(&state.store, &board, order, mode, &user, radius).await,
        async || reads::around(&state.read_db, &board, order, mode, &user, radius).await,
        |_| true,
        Option::is_some,
    )
    .await?;
    let page = page.ok_or(ApiError::NotFound)?;
    Ok(Json(Page::new(page, period, target.cohort, freshness)))
}
