//! The projection never lies: reads checked the moment something breaks, before any
//! reconciliation pass runs. A board whose keys vanish, an empty Redis, a hand-added member, an
//! unknown lag, one board's large backlog, and rebuilds under constant writes.

mod lag;
mod lost;
mod seal;
use crate::common;

use common::{TestEnv, app_with, entries, get, seal};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use ledgerboard_core::board::ScoreCommand;
use ledgerboard_core::board::apply_score_command;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::{BoardId, Delta, EventId, UserId};
use ledgerboard_core::projection::Store;
use ledgerboard_projector::Projector;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_testkit::{RedisServer, wait_until};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// `users` members with distinct scores in PostgreSQL, then the real rebuild (which seals).
async fn sealed_board(env: &TestEnv, board: &str, users: i64) {
    env.db
        .client()
        .await
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT $1, 'u' || lpad(g::text, 6, '0'), g * 3, 1 FROM generate_series(1, $2::bigint) g",
            &[&board, &users],
        )
        .await
        .expect("seed");
    seal(env, board).await;
}

/// The top `limit` of `board` straight from PostgreSQL, as (user, score).
async fn source_top(env: &TestEnv, board: &str, limit: i64) -> Vec<(String, i64)> {
    env.db
        .client()
        .await
        .query(
            "SELECT user_id, score FROM user_scores WHERE board_id = $1
             ORDER BY score DESC, user_id DESC LIMIT $2",
            &[&board, &limit],
        )
        .await
        .expect("source")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

fn freshness(page: &Value) -> (Option<&str>, Option<&str>, Option<&str>) {
    let f = &page["freshness"];
    (
        f["source"].as_str(),
        f["reason"].as_str(),
        f["projection"].as_str(),
    )
}

async fn redis_del(store: &Store, keys: &[String]) {
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("DEL")
        .arg(keys)
        .query_async(&mut conn)
        .await
        .expect("del");
}

/// Deletes every key of the board's projection, seal included.
async fn lose_board(store: &Store, board: &BoardId) {
    let keys = store.keys();
    redis_del(
        store,
        &[keys.scores(board), keys.versions(board), keys.meta(board)],
    )
    .await;
}

async fn requested(store: &Store, board: &str) -> bool {
    let mut conn = store.connection().await.expect("redis");
    redis::cmd("SISMEMBER")
        .arg(store.keys().rebuild_requests())
        .arg(board)
        .query_async(&mut conn)
        .await
        .expect("sismember")
}

/// Reads `top` until it comes from a whole projection, checking that every answer meanwhile is
/// PostgreSQL's and never an empty or partial board. Returns how long it took.
async fn until_rebuilt(app: &Router, env: &TestEnv, board: &str) -> Duration {
    let want = &source_top(env, board, 10).await;
    let last = &RefCell::new(Value::Null);
    wait_until(Duration::from_secs(20), || async move {
        let (status, page) = get(app, &format!("/v1/boards/{board}/top?limit=10")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(&entries(&page), want, "an answer while rebuilding: {page}");
        let whole = freshness(&page) == (Some("projection"), None, Some("whole"));
        *last.borrow_mut() = page;
        whole
    })
    .await
    .unwrap_or_else(|| panic!("never rebuilt: {}", last.borrow()))
}

/// The reconciler daemon's loop (passes far apart: only the rebuild requests matter here).
fn reconciler(env: &TestEnv) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let mut settings = env.settings.clone();
    settings.reconciler.interval_ms = Millis::of(3_600_000);
    let cancel = CancellationToken::new();
    let r = Reconciler::new(settings, env.database(), env.store());
    (cancel.clone(), tokio::spawn(r.run(cancel)))
}

async fn command(db: &Database, board: &str, user: &str, delta: i64) -> i64 {
    let cmd = ScoreCommand::add(
        EventId::parse(&uuid::Uuid::new_v4().to_string()).expect("id"),
        BoardId::parse(board).expect("board"),
        UserId::parse(user).expect("user"),
        Delta::new(delta).expect("delta"),
    );
    apply_score_command(db, &cmd, None)
        .await
        .expect("command")
        .version
}
