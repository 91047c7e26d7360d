//! `GET /v1/boards/{board}/periods/{period}/standings`: a closed period's frozen standings, the
//! payout-grade read. Always from PostgreSQL (`period_standings`), never from Redis, with the
//! close's digest so that a payout can name exactly what it paid from (`lbctl period verify`
//! checks it). Periods close after they end, once the reconciler (or `lbctl period close`)
//! has frozen them (`board/periods.rs`).
//!
//! `GET /v1/boards/{board}/periods/{period}/verification` (admin): the same check as `lbctl
//! period verify`, from core's one `Verification` (its outcome, description and counts).

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use ledgerboard_core::board::periods::{self, MAX_STANDINGS_PAGE, Outcome, Standing, Verification};
use ledgerboard_core::model::{BoardId, is_period_id};
use serde::{Deserialize, Serialize};

use super::path_error;
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StandingsQuery {
    /// The `next` of the previous page: this page starts after that position (default 0).
    #[param(minimum = 0)]
    after: Option<i64>,
    /// 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
}

/// A page of a closed period's frozen standings, with the close that froze them.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Standings {
    board: String,
    period: String,
    /// When the period was closed (UTC, database clock).
    closed_at: String,
    /// The order the standings were ranked in.
    sort: String,
    tie_break: String,
    /// Entries frozen (every page's total).
    entries: i64,
    /// SHA-256 (hex) of every line `position TAB user_id TAB score TAB tie`, in position order,
    /// joined by newlines: what a payout names, and `lbctl period verify` recomputes.
    digest: String,
    /// In position order.
    standings: Vec<Standing>,
    /// Pass as `after` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<i64>,
}

/// A closed period's frozen standings, from PostgreSQL only.
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/periods/{period}/standings",
    params(
        ("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
        ("period" = String, Path, description = "a period id: its start in UTC, YYYYMMDDTHHMMSSZ", pattern = r"^[0-9]{8}T[0-9]{6}Z$"),
        StandingsQuery
    ),
    responses(
        (status = 200, description = "a page of the frozen standings", body = Standings),
        (status = 400, description = "a malformed path or parameter", body = ErrorBody),
        (status = 401, description = "reads need a token (`auth.reads = token`)", body = ErrorBody),
        (status = 403, description = "the token may not read", body = ErrorBody),
        (status = 404, description = "`period_not_closed`: the period is open, or not closed yet, or never existed", body = ErrorBody),
        (status = 422, description = "`invalid_period`, `invalid_board_id`, `out_of_range`", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "periods",
    security((), ("bearer" = []))
)]
pub async fn standings(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
    query: Result<Query<StandingsQuery>, QueryRejection>,
) -> Result<Json<Standings>, ApiError> {
    let Path((board, period)) = path.map_err(path_error)?;
    let Query(q) = query.map_err(|r| ApiError::BadQuery(r.body_text()))?;
    let board = BoardId::parse(&board)?;
    if !is_period_id(&period) {
        return Err(ApiError::InvalidPeriod(
            "period must be a period id (YYYYMMDDTHHMMSSZ)".into(),
        ));
    }
    let after = q.after.unwrap_or(0);
    let limit = q.limit.unwrap_or(100);
    if after < 0 {
        return Err(ApiError::OutOfRange("after must be 0 or more".into()));
    }
    if !(1..=MAX_STANDINGS_PAGE).contains(&limit) {
        return Err(ApiError::OutOfRange(format!(
            "limit must be between 1 and {MAX_STANDINGS_PAGE}"
        )));
    }
    let db = &state.read_db;
    let closed = periods::closed(db, &board, &period)
        .await?
        .ok_or_else(|| ApiError::PeriodNotClosed(format!("{board}~{period}")))?;
    let rows = periods::standings(db, &board, &period, after, limit).await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.position))
        .flatten();
    Ok(Json(Standings {
        board: board.to_string(),
        period,
        closed_at: closed.closed_at,
        sort: closed.sort,
        tie_break: closed.tie_break,
        entries: closed.entries,
        digest: closed.digest,
        standings: rows,
        next,
    }))
}

/// A closed period's verification: the outcome a payout keys on, in words, and its counts.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PeriodVerification {
    board: String,
    period: String,
    /// `holds`, `holds_with_explained_changes` (rows re-keyed or left out for reasons the
    /// records explain: an erasure, a ban at the close, a removal) or `does_not_hold`.
    outcome: Outcome,
    /// False only for `does_not_hold` (`lbctl period verify` exits 1 then).
    holds: bool,
    /// The outcome and its counts in one sentence (as the console shows it).
    description: String,
    verification: Verification,
}

/// Checks a closed period's frozen standings against their digest (the close's, or an
/// erasure's re-seal) and against the events (admin scope: it reads the whole period).
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/periods/{period}/verification",
    // Unique in the document (the SDKs name their functions after it).
    operation_id = "period_verification",
    params(
        ("board" = String, Path, description = "1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
        ("period" = String, Path, description = "a period id: its start in UTC, YYYYMMDDTHHMMSSZ", pattern = r"^[0-9]{8}T[0-9]{6}Z$"),
    ),
    responses(
        (status = 200, description = "the verification, whatever its outcome", body = PeriodVerification),
        (status = 400, description = "a malformed path", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token lacks the admin scope", body = ErrorBody),
        (status = 404, description = "`period_not_closed`: the period is open, or not closed yet, or never existed", body = ErrorBody),
        (status = 422, description = "`invalid_period`, `invalid_board_id`", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "periods",
    security(("bearer" = []))
)]
pub async fn verification(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<PeriodVerification>, ApiError> {
    let Path((board, period)) = path.map_err(path_error)?;
    identity.require_admin()?;
    let board = BoardId::parse(&board)?;
    if !is_period_id(&period) {
        return Err(ApiError::InvalidPeriod(
            "period must be a period id (YYYYMMDDTHHMMSSZ)".into(),
        ));
    }
    let v = periods::verify(&state.read_db, &board, &period)
        .await?
        .ok_or_else(|| ApiError::PeriodNotClosed(format!("{board}~{period}")))?;
    let outcome = v.outcome();
    Ok(Json(PeriodVerification {
        board: board.to_string(),
        period,
        outcome,
        holds: outcome.holds(),
        description: v.describe(),
        verification: v,
    }))
}
