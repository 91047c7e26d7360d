//! `ledgerboard-api`: the HTTP daemon for score commands and leaderboard reads.

pub mod auth;
pub mod client;
pub mod coalesce;
mod console;
pub mod error;
pub mod freshness;
pub mod live;
pub mod metrics;
mod observe;
pub mod openapi;
pub mod rebuilds;
mod routes;
mod server;
pub mod settings;
mod sse;
pub mod state;

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

use crate::error::ApiError;
pub use crate::server::{drain_after, serve};
use crate::settings::ApiSettings;
pub use crate::state::AppState;

/// The whole HTTP surface, with the limits from `api.*` settings.
pub fn router(state: AppState, settings: &ApiSettings) -> Router {
    let request_timeout = settings.request_timeout();
    // A long poll of the event feed may wait `api.events_max_wait_ms` before it reads its page.
    let events_timeout = request_timeout + settings.events_max_wait();
    let reads = Router::new()
        .route("/v1/boards", get(routes::boards::list_boards))
        .route("/v1/boards/{board}", get(routes::boards::get_board))
        .route("/v1/boards/{board}/top", get(routes::reads::top))
        .route("/v1/boards/{board}/users", get(routes::reads::users))
        .route(
            "/v1/boards/{board}/users/{user_id}",
            get(routes::reads::user),
        )
        .route(
            "/v1/boards/{board}/users/{user_id}/around",
            get(routes::reads::around),
        )
        // Server-sent events: the response's body streams until the client goes or the api
        // stops (`sse`); the request's bound covers only its start.
        .route("/v1/boards/{board}/live", get(sse::route::live))
        .route(
            "/v1/boards/{board}/periods/{period}/standings",
            get(routes::periods::standings),
        )
        .route("/v1/competitions", get(routes::competitions::list))
        .route(
            "/v1/competitions/{id}",
            get(routes::competitions::get_competition),
        )
        .route(
            "/v1/competitions/{id}/results",
            get(routes::competitions::results),
        )
        .route(
            "/v1/competitions/{id}/players/{user_id}",
            get(routes::competition_runs::player),
        )
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::require_read,
        ));
    Router::new()
        .route(
            "/v1/boards/{board}/scores",
            post(routes::commands::post_score),
        )
        // Admin only (checked in the handler); the GET of the same path is a read.
        .route("/v1/boards/{board}", put(routes::boards::put_board))
        // Admin only (checked in the handler).
        .route("/v1/boards/{board}/reset", post(routes::boards::post_reset))
        .route(
            "/v1/boards/{board}/attempts",
            post(routes::attempts::post_attempt),
        )
        // Admin only (checked in the handler).
        .route("/v1/moderation", post(routes::moderation::post_moderation))
        // Admin only (checked in the handler); the GET of the same path is a read.
        .route(
            "/v1/competitions/{id}",
            put(routes::competitions::put_competition),
        )
        .route(
            "/v1/competitions/{id}/entries",
            post(routes::competitions::post_entry),
        )
        // Admin only (checked in the handlers): a close writes, a verification reads every run.
        .route(
            "/v1/competitions/{id}/runs/{run}/close",
            post(routes::competition_runs::close),
        )
        .route(
            "/v1/competitions/{id}/verification",
            get(routes::competition_runs::verification),
        )
        // Moderate scope (checked in the handlers).
        .route("/v1/reviews", get(routes::reviews::list))
        .route(
            "/v1/reviews/{event_id}/approve",
            post(routes::reviews::approve),
        )
        .route(
            "/v1/reviews/{event_id}/reject",
            post(routes::reviews::reject),
        )
        // Admin only (checked in the handler): it reads the whole period.
        .route(
            "/v1/boards/{board}/periods/{period}/verification",
            get(routes::periods::verification),
        )
        // The events or admin scope (checked in the handler), whatever `auth.reads` says.
        .route("/v1/events", get(routes::events::list_events))
        // Admin only (checked in the handlers): webhook subscriptions and their parked
        // deliveries.
        .route(
            "/v1/webhooks",
            post(routes::webhooks::create).get(routes::webhooks::list),
        )
        .route(
            "/v1/webhooks/{id}",
            get(routes::webhooks::get_webhook)
                .patch(routes::webhooks::update)
                .delete(routes::webhooks::delete),
        )
        .route(
            "/v1/webhooks/{id}/parked",
            get(routes::webhooks::parked_list),
        )
        .route(
            "/v1/webhooks/{id}/parked/requeue",
            post(routes::webhooks::requeue),
        )
        .merge(reads)
        .merge(console::routes(state.clone()))
        .merge(utoipa_swagger_ui::SwaggerUi::new("/docs").url(
            "/openapi.json",
            <openapi::ApiDoc as utoipa::OpenApi>::openapi(),
        ))
        .fallback(async || ApiError::NotFound)
        .method_not_allowed_fallback(async || ApiError::MethodNotAllowed)
        .layer(middleware::from_fn_with_state(state.clone(), auth::guard))
        .layer(DefaultBodyLimit::max(settings.body_limit_bytes.get()))
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            let limit = if req.uri().path() == "/v1/events" {
                events_timeout
            } else {
                request_timeout
            };
            bounded_request(req, next, limit)
        }))
        // Outermost, so that the latency includes a request the bound ended.
        .layer(middleware::from_fn(observe::observe))
        .with_state(state)
}

/// Ends any request that runs past the bound with a JSON 503 instead of letting it hang.
async fn bounded_request(req: Request, next: Next, limit: Duration) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}
