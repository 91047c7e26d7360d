//! What the api's router tests share: the router on a test's settings, a GET that decodes
//! JSON, and the real rebuild that seals a board.

#![allow(dead_code)] // each test file uses its own part

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use ledgerboard_api::{AppState, router};
use ledgerboard_core::config::Settings;
use ledgerboard_core::db::Database;
use ledgerboard_core::domain::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_testkit::TestEnv;
use serde_json::Value;
use tower::ServiceExt;

pub fn app_with(settings: &Settings) -> Router {
    let db = Database::connect(&settings.database, "api-test").expect("pool");
    let cache = Store::connect(&settings.redis).expect("redis pool");
    router(AppState::new(db, cache, settings), &settings.api)
}

pub async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

/// Sends `request` through the router; the answer must be JSON.
pub async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let uri = request.uri().clone();
    let (status, text) = send_text(app, request).await;
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{uri}: {status} not JSON ({e}): {text:?}"));
    (status, body)
}

/// Sends `request` through the router and returns the body as text (lossy UTF-8).
pub async fn send_text(app: &Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.clone().oneshot(request).await.expect("router answers");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// Rebuilds `board` from PostgreSQL with the reconciler's own rebuild, which seals it.
pub async fn seal(env: &TestEnv, board: &str) {
    ledgerboard_reconciler::rebuild::rebuild(
        &env.database(),
        &env.cache(),
        &env.settings,
        &BoardId::parse(board).expect("board"),
        std::time::Duration::from_secs(10),
    )
    .await
    .expect("rebuild");
}
