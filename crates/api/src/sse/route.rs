//! `GET /v1/boards/{board}/live`: the board's first N as server-sent events, a new snapshot
//! whenever the board changes (the rest of `live/` does the work; docs/api.md "Live updates").
//! It lives here, not in `routes/`, and calls the reads' functions as the console does, so
//! that `routes` never imports `live` back.
//! Also the two reads a live message is made of, through the reads' own path (`reads.rs`'s
//! `read`, `consistency=bounded`): the same sources, fallbacks and `freshness`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use ledgerboard_core::db::reads;
use ledgerboard_core::model::{BoardId, UserId};
use ledgerboard_core::projection::read as projection;
use ledgerboard_core::ranking::{Page, RankMode};
use serde::Deserialize;

use crate::auth::Identity;
use crate::client::ClientKey;
use crate::coalesce::{Start, TopRequest};
use crate::error::{ApiError, ErrorBody};
use crate::freshness::Freshness;
use crate::live::render::Snapshot;
use crate::live::{Refusal, Resume};
use crate::routes::path_error;
use crate::routes::reads::{Consistency, read};
use crate::routes::target::{PeriodsRead, Target, order, period_board};
use crate::state::AppState;

/// Most entries a stream's `top` may ask for.
pub const MAX_TOP: u64 = 100;
/// Most entries on each side of the player.
pub const MAX_LIVE_RADIUS: u64 = 10;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LiveQuery {
    /// 1 to 100 (default 10): the first N entries each message carries.
    #[param(minimum = 1, maximum = 100)]
    top: Option<u64>,
    /// 0 to 10 (default 2): with a player token, the entries on each side of the player.
    #[param(minimum = 0, maximum = 10)]
    radius: Option<u64>,
    /// `current` (default), `previous`, or a period id (`YYYYMMDDTHHMMSSZ`, its start in UTC)
    /// of a board declared with a `reset`; a board that never resets takes none. A stream of
    /// `current` moves on to the next period with the board's first change in it.
    #[param(max_length = 16, pattern = "^(current|previous|[0-9]{8}T[0-9]{6}Z)$")]
    period: Option<String>,
    /// One cohort of a competition's run (the `cohort` its entry answered): 1 to 999999.
    #[param(minimum = 1, maximum = 999_999)]
    cohort: Option<u32>,
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

/// The board's first N as a stream of server-sent events: `event: snapshot` messages, each an
/// absolute snapshot with an `id` (`<sequence>.<digest>`) and the reads' `freshness`; comment
/// lines (`: hb`) as heartbeats. With a player token, each message also carries the player's
/// own entry and neighbourhood (`me`). A client that reconnects with `Last-Event-ID` gets a
/// snapshot only if what it would show changed since that id.
#[utoipa::path(
    get,
    path = "/v1/boards/{board}/live",
    params(
        ("board" = String, Path, description = "the board id: 1 to 64 characters of A-Z a-z 0-9 _ . -", pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
        ("Last-Event-ID" = Option<String>, Header, description = "the id of the last message received: no snapshot is sent again unless it changed since"),
        LiveQuery
    ),
    responses(
        (status = 200, description = "`text/event-stream`: `id: <sequence>.<digest>`, `event: snapshot`, `data:` one LiveMessage as JSON; `: hb` comment lines as heartbeats. Headers `Cache-Control: no-cache`, `X-Accel-Buffering: no`.", content_type = "text/event-stream", body = crate::live::render::LiveEvent),
        (status = 400, description = "an unreadable or unknown parameter", body = ErrorBody),
        (status = 401, description = "a bad bearer token; with auth.reads = token, none", body = ErrorBody),
        (status = 403, description = "a player token that does not name the board (player_board)", body = ErrorBody),
        (status = 422, description = "a parameter out of range, or a period or cohort the board does not have", body = ErrorBody),
        (status = 429, description = "this client holds api.live_max_per_client streams (live_client_limit), or past the rate limit (rate_limited); see Retry-After", body = ErrorBody),
        (status = 503, description = "this api process holds api.live_max_connections streams (live_full), or it is shutting down (unavailable); see Retry-After", body = ErrorBody),
    ),
    tag = "reads",
    security((), ("bearer" = []), ("player" = []))
)]
pub async fn live(
    State(state): State<AppState>,
    board: Result<Path<String>, PathRejection>,
    query: Result<Query<LiveQuery>, QueryRejection>,
    request: Request,
) -> Response {
    match open(state, board, query, request).await {
        Ok(response) => response,
        Err(e) => {
            let refusal = matches!(e, ApiError::Coded(_, "live_full" | "live_client_limit", _));
            let mut response = e.into_response();
            if refusal {
                // Streams end when their clients go; a few seconds is a fair first wait.
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            response
        }
    }
}

async fn open(
    state: AppState,
    board: Result<Path<String>, PathRejection>,
    query: Result<Query<LiveQuery>, QueryRejection>,
    request: Request,
) -> Result<Response, ApiError> {
    let Path(board) = board.map_err(path_error)?;
    let Query(q) = query.map_err(|r| ApiError::BadQuery(r.body_text()))?;
    let board = BoardId::parse(&board)?;
    let top = in_range("top", q.top.unwrap_or(10), 1, MAX_TOP)?;
    let radius = in_range("radius", q.radius.unwrap_or(2), 0, MAX_LIVE_RADIUS)?;
    let player = match request.extensions().get::<Identity>() {
        Some(Identity::Player(p)) if p.may_use(&board) => Some(p.user.clone()),
        Some(Identity::Player(_)) => {
            return Err(ApiError::PlayerDenied(
                "player_board",
                format!("this player token does not name board {board}"),
            ));
        }
        _ => None,
    };
    // The period and cohort are checked now, so that a bad one is an answer, not a stream.
    period_board(&state, board.clone(), q.period.as_deref(), q.cohort).await?;
    let resume = request
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(Resume::parse);
    // The client as the connection caps count it: a trusted proxy's forwarded address.
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| {
            ClientKey::of(
                state
                    .auth
                    .trusted_proxies
                    .client(c.0.ip(), request.headers()),
            )
        });
    let slot = state
        .live
        .admit(client)
        .map_err(|r: Refusal| ApiError::from(r))?;
    let body = super::join(
        &state,
        crate::live::Request {
            board,
            period: q.period,
            cohort: q.cohort,
            top,
            player,
            radius,
            resume,
        },
        slot,
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        // nginx buffers responses unless told not to; a buffered stream is no stream.
        .header("x-accel-buffering", "no")
        .body(body)
        .map_err(|e| ApiError::Internal(e.to_string()))
}

/// The board's first `top` entries, as `GET …/top?limit=<top>` answers them (sharing its
/// coalesced projection reads).
pub(crate) async fn top_page(
    state: &AppState,
    target: &Target,
    top: u64,
) -> Result<(Arc<Page>, Freshness), ApiError> {
    let board = &target.board;
    let order = order(state, board, Consistency::Bounded).await?;
    let request = TopRequest {
        board: board.clone(),
        order,
        mode: RankMode::Ordinal,
        start: Start::Offset(0),
        limit: top,
    };
    read(
        state,
        target,
        Consistency::Bounded,
        async || state.top_reads.top(&state.store, &request).await,
        async || {
            reads::top(&state.read_db, board, order, RankMode::Ordinal, 0, top)
                .await
                .map(Arc::new)
        },
        |_| true,
        |page| page.total > 0,
    )
    .await
}

/// The player and up to `radius` entries on each side on the board `snapshot` read, as
/// `GET …/users/{user}/around` answers them; None while the player is not on the board.
pub(crate) async fn around_page(
    state: &AppState,
    snapshot: &Snapshot,
    user: &UserId,
    radius: u64,
) -> Result<Option<Page>, ApiError> {
    let target = Target {
        board: snapshot.target.clone(),
        period: snapshot.period.clone(),
        cohort: snapshot.cohort,
        archived: snapshot.archived,
        periods: PeriodsRead::Read,
    };
    let board = &target.board;
    let order = order(state, board, Consistency::Bounded).await?;
    let mode = RankMode::Ordinal;
    let (page, _) = read(
        state,
        &target,
        Consistency::Bounded,
        async || projection::around(&state.store, board, order, mode, user, radius).await,
        async || reads::around(&state.read_db, board, order, mode, user, radius).await,
        |_| true,
        Option::is_some,
    )
    .await?;
    Ok(page)
}
