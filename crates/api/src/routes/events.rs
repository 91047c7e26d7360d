//! `GET /v1/events`: the event feed (`events` or `admin` scope): the event log (core `events/`,
//! migration V20) after a cursor, in position order, filtered by kind and board; with `wait`, a
//! long poll. docs/api.md, "Events", says what each kind's `data` holds.
//!
//! Cursors are positions: integers that only grow. `next` is the `after` of the next page: past
//! every event the page returned or skipped (a page reads a window of at most
//! `events::feed::WINDOW` positions, however few of them its filter matches), and never past the
//! log's head as the page read it, so resuming from it neither misses nor repeats an event. A
//! cursor older than what retention kept is refused (410 `cursor_expired`), one past the head
//! too (400 `invalid_after`: no page of this log gave it).
//!
//! The long poll: a page with no event whose cursor has reached the head waits, up to `wait`
//! seconds (at most `api.events_max_wait_ms`), for the log's head to pass the cursor, then reads
//! again. The polls waiting in a process share one `watch` of the head, which its event upkeep
//! sets after each sequencer turn (`AppState::start_event_upkeep`): a waiting poll costs no
//! query until the log moves, then one page (a filtered poll whose page is still empty waits on
//! from the new cursor). The wait is the request's own future: a client that goes away drops it,
//! and nothing is left running.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use ledgerboard_core::events::feed::{self, Filter, Page};
use ledgerboard_core::events::{Event, Kind};
use ledgerboard_core::model::BoardId;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 1_000;
/// The longest `wait` a request may ask for, in seconds (`api.events_max_wait_ms` may cut it).
pub const MAX_WAIT_S: i64 = 30;
/// Boards one filter names at most.
pub const MAX_BOARDS: usize = 100;

/// The feed's parameters. Each is read here, not by serde, so that a bad one is answered with
/// its own code; the document states their types.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// The cursor: the `next` of the previous page (a position). Absent: from the oldest event
    /// kept.
    #[param(value_type = Option<i64>, minimum = 0)]
    after: Option<String>,
    /// Only these kinds, comma-separated. Absent: every kind.
    #[param(
        pattern = r"^(score\.accepted|rank\.top_changed|period\.closed|competition\.closed|moderation\.(removed|banned|unbanned|erased)|review\.(held|approved|rejected))(,(score\.accepted|rank\.top_changed|period\.closed|competition\.closed|moderation\.(removed|banned|unbanned|erased)|review\.(held|approved|rejected)))*$"
    )]
    kinds: Option<String>,
    /// Only these boards (as declared: a period's events are its board's), 1 to 100,
    /// comma-separated. Absent: every board.
    #[param(pattern = r"^[A-Za-z0-9_.-]{1,64}(,[A-Za-z0-9_.-]{1,64}){0,99}$")]
    boards: Option<String>,
    /// Events on one page: 1 to 1000 (default 100).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
    /// Seconds to wait for an event when none follows the cursor yet: 0 (the default: answer at
    /// once) to 30, cut to the server's `api.events_max_wait_ms`.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 30)]
    wait: Option<String>,
}

/// A page of the event log.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventPage {
    /// In position order (the order they happened in for each board; a member's events in the
    /// order of its versions).
    events: Vec<Event>,
    /// The cursor to send as `after` next: the last event's position, or past the positions
    /// this page skipped, never past `head`. An empty page whose `next` is below `head` skipped
    /// events its filter does not match: ask again at once.
    next: i64,
    /// The log's last position when the page was read.
    head: i64,
}

impl From<Page> for EventPage {
    fn from(page: Page) -> Self {
        Self {
            events: page.events,
            next: page.next,
            head: page.head,
        }
    }
}

/// The parameters, read.
struct Asked {
    after: Option<i64>,
    filter: Filter,
    limit: i64,
    wait: Duration,
}

fn refused(code: &'static str, message: String) -> ApiError {
    ApiError::Coded(StatusCode::BAD_REQUEST, code, message)
}

/// `raw` as an integer in `min..=max`, or the parameter's own 400.
fn integer(raw: &str, code: &'static str, what: &str, min: i64, max: i64) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| refused(code, format!("{what}, not {raw:?}")))
}

impl Asked {
    fn read(q: &EventsQuery) -> Result<Self, ApiError> {
        let after = q
            .after
            .as_deref()
            .map(|a| {
                integer(
                    a,
                    "invalid_after",
                    "after must be a position (an integer from 0): a page's next",
                    0,
                    i64::MAX,
                )
            })
            .transpose()?;
        let mut kinds = Vec::new();
        if let Some(raw) = q.kinds.as_deref() {
            for name in raw.split(',') {
                let kind = Kind::parse(name).ok_or_else(|| {
                    let known: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
                    refused(
                        "invalid_kinds",
                        format!(
                            "kinds must be comma-separated kinds; {name:?} is none of {}",
                            known.join(", ")
                        ),
                    )
                })?;
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
        }
        let mut boards = Vec::new();
        if let Some(raw) = q.boards.as_deref() {
            for name in raw.split(',') {
                let board = BoardId::parse(name).map_err(|e| {
                    refused(
                        "invalid_boards",
                        format!("boards must be comma-separated board ids; {name:?}: {e}"),
                    )
                })?;
                if !boards.contains(&board) {
                    boards.push(board);
                }
            }
            if boards.len() > MAX_BOARDS {
                return Err(refused(
                    "invalid_boards",
                    format!("boards names at most {MAX_BOARDS} boards"),
                ));
            }
        }
        let limit = match q.limit.as_deref() {
            None => DEFAULT_LIMIT,
            Some(raw) => integer(
                raw,
                "invalid_limit",
                "limit must be an integer from 1 to 1000",
                1,
                MAX_LIMIT,
            )?,
        };
        let wait = match q.wait.as_deref() {
            None => 0,
            Some(raw) => integer(
                raw,
                "invalid_wait",
                "wait must be a number of seconds from 0 to 30",
                0,
                MAX_WAIT_S,
            )?,
        };
        Ok(Self {
            after,
            filter: Filter { kinds, boards },
            limit,
            wait: Duration::from_secs(wait.unsigned_abs()),
        })
    }
}

/// One long poll waiting, counted in [`crate::state::Shared::events_waiting`] until dropped:
/// when the wait ends, or when its request is dropped because its client went away.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn start(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The event log after a cursor: scores, closes, moderation and review decisions, in the order
/// they happened; with `wait`, a long poll that answers as soon as an event follows the cursor.
#[utoipa::path(
    get,
    path = "/v1/events",
    // Unique in the document (the SDKs name their functions after it).
    operation_id = "list_events",
    params(EventsQuery),
    responses(
        (status = 200, description = "a page of events (empty when none followed the cursor within the wait)", body = EventPage),
        (status = 400, description = "a bad parameter: `invalid_after` (not a position, or past the log's head), `invalid_kinds`, `invalid_boards`, `invalid_limit`, `invalid_wait`; `invalid_query` (an unknown or repeated parameter)", body = ErrorBody),
        (status = 401, description = "no valid bearer token", body = ErrorBody),
        (status = 403, description = "the token has neither the events nor the admin scope (`forbidden`); a player token (`player_scope`)", body = ErrorBody),
        (status = 410, description = "`cursor_expired`: retention deleted events after the cursor; start again without `after` (from the oldest kept)", body = ErrorBody),
        (status = 429, description = "past the rate limit", body = ErrorBody),
        (status = 503, description = "the database is unavailable", body = ErrorBody),
    ),
    tag = "events",
    security(("bearer" = []))
)]
pub async fn list_events(
    State(state): State<AppState>,
    Extension(identity): Extension<Identity>,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Json<EventPage>, ApiError> {
    // Who may read the feed comes before anything about the parameters is said.
    identity.require_events()?;
    let Query(q) = query.map_err(|e| ApiError::BadQuery(e.body_text()))?;
    let asked = Asked::read(&q)?;
    let deadline = Instant::now() + asked.wait.min(state.settings.events_max_wait());
    // Subscribed before the first read: a turn that moves the head after it is not missed.
    let mut head = state.event_head.subscribe();
    let mut after = asked.after;
    loop {
        let page = feed::page(
            &state.read_db,
            &state.definitions,
            after,
            &asked.filter,
            asked.limit,
        )
        .await?;
        if let Some(a) = after
            && a > page.head
        {
            return Err(refused(
                "invalid_after",
                format!(
                    "after {a} is past the log's head {}: no page of this log gave it",
                    page.head
                ),
            ));
        }
        if !page.events.is_empty() || page.next < page.head || Instant::now() >= deadline {
            return Ok(Json(page.into()));
        }
        let cursor = page.next;
        let _waiting = Waiting::start(&state.events_waiting);
        let moved = tokio::time::timeout_at(deadline, head.wait_for(|h| *h > cursor))
            .await
            .is_ok_and(|changed| changed.is_ok());
        if !moved {
            // The wait is over (or the upkeep stopped: the process is going away): nothing
            // came, and the cursor stays where it was.
            return Ok(Json(page.into()));
        }
        after = Some(cursor);
    }
}
