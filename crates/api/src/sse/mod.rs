//! Serving live updates (`crate::live` holds their state): the route
//! `GET /v1/boards/{board}/live` (`route.rs`), each hub's loop (`hub.rs`: the board read once per
//! change, at most once per `api.live_min_interval_ms`, through the reads' own path) and each
//! connection's stream (`stream.rs`: the shared message, the player's own part, heartbeats,
//! the resume rule, the end at shutdown). docs/api.md "Live updates" is the contract.

mod hub;
pub mod route;
mod stream;

use axum::body::Body;

use crate::live::hub::HubKey;
use crate::live::{Request, Slot};
use crate::state::AppState;

/// The body of one stream: joins (or starts) the hub of `request`, and starts the process's
/// subscriber if this is its first stream.
pub(crate) fn join(state: &AppState, request: Request, slot: Slot) -> Body {
    let live = &state.live;
    live.start_feed(&state.store);
    let key = HubKey {
        board: request.board.clone(),
        period: request.period.clone(),
        cohort: request.cohort,
        top: request.top,
    };
    let (hub, rx, new) = live.hub(key);
    if new {
        tokio::spawn(hub::run(hub.clone(), live.clone(), state.clone()));
    }
    Body::from_stream(stream::body(stream::Conn::new(
        state.clone(),
        live.settings,
        hub,
        rx,
        request,
        live.stop.clone(),
        slot,
    )))
}
