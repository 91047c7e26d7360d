//! `ledgerboard-api`: the HTTP daemon for score commands and leaderboard reads.

pub mod auth;
pub mod coalesce;
pub mod error;
pub mod freshness;
pub mod metrics;
mod observe;
pub mod openapi;
pub mod rebuilds;
mod routes;
pub mod settings;
pub mod state;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::settings::ApiSettings;
pub use crate::state::AppState;

/// The whole HTTP surface, with the limits from `api.*` settings.
pub fn router(state: AppState, settings: &ApiSettings) -> Router {
    let request_timeout = settings.request_timeout();
    let reads = Router::new()
        .route("/v1/boards/{board}/top", get(routes::reads::top))
        .route(
            "/v1/boards/{board}/users/{user_id}",
            get(routes::reads::user),
        )
        .route(
            "/v1/boards/{board}/users/{user_id}/around",
            get(routes::reads::around),
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
        .merge(reads)
        .merge(utoipa_swagger_ui::SwaggerUi::new("/docs").url(
            "/openapi.json",
            <openapi::ApiDoc as utoipa::OpenApi>::openapi(),
        ))
        .fallback(async || ApiError::NotFound)
        .method_not_allowed_fallback(async || ApiError::MethodNotAllowed)
        .layer(middleware::from_fn_with_state(state.clone(), auth::guard))
        .layer(DefaultBodyLimit::max(settings.body_limit_bytes.get()))
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            bounded_request(req, next, request_timeout)
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

/// Serves until `cancel` fires, then stops accepting and lets in-flight requests finish for at
/// most `grace`. At most `api.max_connections` connections are open at once (more clients
/// wait in the listen backlog), and a client that does not send its headers within
/// `api.header_timeout_ms` is disconnected, so slow or many clients cannot exhaust the daemon.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    settings: &ApiSettings,
    cancel: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(settings.max_connections.get()));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(settings.header_timeout());
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = cancel.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, say: wait a little instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = cancel.cancelled() => break,
        };
        let service = tower::ServiceExt::map_request(app.clone(), move |mut req: Request<_>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            req
        });
        let connection = http.serve_connection(
            hyper_util::rt::TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that goes away or times out ends its connection; nothing to report.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(grace) => {
            tracing::warn!(?grace, "requests still running after the shutdown grace; exiting");
        }
    }
    Ok(())
}
