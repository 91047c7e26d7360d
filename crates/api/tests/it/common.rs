//! What the api's router tests share: the settings of the daemons they run in one process,
//! the router on a test's settings, a GET that decodes JSON, and the real rebuild that seals a
//! board.

#![allow(dead_code)] // each test file uses its own part

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use ledgerboard_api::{AppState, router};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_testkit::{Process, TestDb, TestRedis, daemon_env, settings_for};
use serde_json::Value;
use tower::ServiceExt;

/// The daemons' sections, the one copy in the testkit.
pub use ledgerboard_testkit::stack::Stack;
pub type Settings = ledgerboard_testkit::stack::StackSettings;
pub type TestEnv = ledgerboard_testkit::TestEnv<Stack>;

/// A router on a database and a Redis namespace of the test's own, with `auth.tokens` =
/// `tokens`, then `tweak`, validated and migrated.
pub struct TestApi {
    pub db: TestDb,
    pub redis: TestRedis,
    pub app: Router,
}

pub async fn test_api(tokens: String, tweak: impl FnOnce(&mut Settings)) -> TestApi {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let mut settings: Settings = settings_for(&db.url, &redis, &[]);
    settings.auth.tokens = tokens.into();
    tweak(&mut settings);
    settings.validate().expect("valid settings");
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate");
    let app = app_with(&settings);
    TestApi { db, redis, app }
}

pub fn app_with(settings: &Settings) -> Router {
    let db = Database::connect(&settings.database, "api-test").expect("pool");
    let store = Store::connect(&settings.redis).expect("redis pool");
    router(AppState::new(db, store, settings), &settings.api)
}

pub async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    send(app, Request::get(uri).body(Body::empty()).expect("request")).await
}

/// A score command for `board` with the test token (`admin` scope) and `body` as sent.
pub fn command(board: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(format!("/v1/boards/{board}/scores"))
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .header(
            axum::http::header::AUTHORIZATION,
            format!("Bearer {}", ledgerboard_testkit::TEST_TOKEN),
        )
        .body(body.into())
        .expect("request")
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
    let (status, _, text) = send_with_headers(app, request).await;
    (status, text)
}

/// As [`send_text`], with the answer's headers.
pub async fn send_with_headers(
    app: &Router,
    request: Request<Body>,
) -> (StatusCode, HeaderMap, String) {
    let response = app.clone().oneshot(request).await.expect("router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// Rebuilds `board` from PostgreSQL with the reconciler's own rebuild, which seals it, as a
/// board read with dense ranks (marked first, as its first dense read would: the tests that
/// seal read every rank mode from Redis), so it keeps its distinct scores.
pub async fn seal(env: &TestEnv, board: &str) {
    let board = BoardId::parse_stored(board).expect("board");
    ledgerboard_core::projection::generation::want_distinct(&env.store(), &board)
        .await
        .expect("mark dense");
    ledgerboard_reconciler::rebuild::rebuild(
        &env.database(),
        &env.store(),
        &env.settings,
        &board,
        std::time::Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await
    .expect("rebuild");
}

/// The api binary on `db` (migrated by the caller) with a Redis namespace of its own, on ports
/// of its own choice, with `extra` settings: the process, its public address and its admin
/// address (`api.admin_listen`), each read from its log.
pub fn api_process(
    db: &TestDb,
    extra: &[(&str, &str)],
) -> (Process, std::net::SocketAddr, std::net::SocketAddr) {
    let mut env = daemon_env(db, &TestRedis::new());
    env.push(("LEDGERBOARD__API__LISTEN".into(), "127.0.0.1:0".into()));
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let env = ledgerboard_testkit::env_refs(&env);
    let mut api = Process::start(env!("CARGO_BIN_EXE_ledgerboard-api"), &[], &env);
    let admin = api.wait_for_addr("admin server (healthz", std::time::Duration::from_secs(20));
    let public = api.wait_for_addr(
        "ledgerboard-api started",
        std::time::Duration::from_secs(20),
    );
    (api, public, admin)
}

/// The read at `uri` from both sources (`consistency=strong`, then `eventual`): both 200, the
/// eventual one from a whole projection, with the same entries (ranks, scores, percentiles,
/// metadata), total and period. Answers the strong one.
pub async fn both(app: &Router, uri: &str) -> Value {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let (s1, strong) = get(app, &format!("{uri}{sep}consistency=strong")).await;
    let (s2, eventual) = get(app, &format!("{uri}{sep}consistency=eventual")).await;
    assert_eq!(
        (s1, s2),
        (StatusCode::OK, StatusCode::OK),
        "{strong} {eventual}"
    );
    assert_eq!(
        eventual["freshness"]["source"], "projection",
        "{uri}: {eventual}"
    );
    assert_eq!(
        eventual["freshness"]["projection"], "whole",
        "{uri}: {eventual}"
    );
    assert_eq!(strong["entries"], eventual["entries"], "{uri}");
    assert_eq!(strong["total"], eventual["total"], "{uri}");
    assert_eq!(strong["period"], eventual["period"], "{uri}");
    strong
}

/// The same read from both paths: both 200, the projection's from a whole projection, and equal
/// answers but for `freshness` (every field: entries, `scores`, `next`, `total`, …). Answers
/// PostgreSQL's.
pub async fn same_answer(app: &Router, uri: &str) -> Value {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let (s1, mut projection) = get(app, &format!("{uri}{sep}consistency=eventual")).await;
    let (s2, mut database) = get(app, &format!("{uri}{sep}consistency=strong")).await;
    assert_eq!(
        (s1, s2),
        (StatusCode::OK, StatusCode::OK),
        "{uri}: {projection} {database}"
    );
    assert_eq!(projection["freshness"]["source"], "projection", "{uri}");
    assert_eq!(projection["freshness"]["projection"], "whole", "{uri}");
    assert_eq!(database["freshness"]["source"], "database", "{uri}");
    projection["freshness"].take();
    database["freshness"].take();
    assert_eq!(projection, database, "{uri}");
    database
}

/// A path segment or query value percent-encoded byte by byte (every byte but ASCII letters
/// and digits).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A page's entries in rank order, as (user, score) (the page must have entries).
pub fn entries(page: &Value) -> Vec<(String, i64)> {
    page["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {page}"))
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().expect("user").to_owned(),
                e["score"].as_i64().expect("score"),
            )
        })
        .collect()
}

/// A page's entries as user → score.
pub fn entry_scores(page: &Value) -> std::collections::BTreeMap<String, i64> {
    entries(page).into_iter().collect()
}
