//! PostgreSQL restarted under load (`pg_ctl restart -m fast` on a private cluster, the
//! harness's `PostgresServer`: never the shared server): commands in flight fail cleanly or commit, a retried event id has one
//! effect, nothing accepted is lost, and once the outbox drains the projection equals
//! PostgreSQL; reads recover without a restart of the api.

use crate::common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::{Settings, app_with, get};
use ledgerboard_core::config::Millis;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::{Seal, board_seal};
use ledgerboard_projector::Projector;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_testkit::{PostgresServer, TestRedis, wait_until};
use tokio_util::sync::CancellationToken;

/// Posts one command: Some(201 or 200) when accepted, None on 503 (the database restarting).
async fn post(app: &axum::Router, event: &str, user: &str, delta: i64) -> Option<StatusCode> {
    let body = serde_json::json!({"event_id": event, "user_id": user, "delta": delta});
    let (status, _) = common::send_text(app, common::command("pg", body.to_string())).await;
    match status {
        StatusCode::CREATED | StatusCode::OK => Some(status),
        StatusCode::SERVICE_UNAVAILABLE => None,
        other => panic!("{other} for {event}"),
    }
}

#[tokio::test]
async fn postgres_restarted_under_load_loses_nothing_and_everything_recovers() {
    let pg = PostgresServer::start().unwrap_or_else(|e| panic!("a private PostgreSQL: {e}"));
    let redis = TestRedis::new();
    let mut settings = Settings::default();
    settings.database.url = pg.url().into();
    settings.database.connect_timeout_ms = Millis::of(1_000);
    settings.database.pool_wait_timeout_ms = Millis::of(1_000);
    settings.redis.url = redis.url.as_str().into();
    settings.redis.namespace = redis.namespace.clone();
    settings.projector.poll_interval_ms = Millis::of(50);
    settings.shutdown.grace_ms = Millis::of(2_000);
    settings.auth.tokens = ledgerboard_testkit::test_tokens().into();
    settings.api.freshness_cache_ms = Millis::of(0);
    settings.reconciler.interval_ms = Millis::of(3_600_000);
    settings.validate().expect("settings");
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate");
    let db =
        || ledgerboard_core::db::Database::connect(&settings.database, "pg-restart").expect("pool");
    let store = || ledgerboard_core::projection::Store::connect(&settings.redis).expect("redis");
    let app = app_with(&settings);
    let cancel = CancellationToken::new();
    let projector =
        tokio::spawn(Projector::new(settings.clone(), db(), store()).run(cancel.clone()));
    let reconciler =
        tokio::spawn(Reconciler::new(settings.clone(), db(), store()).run(cancel.clone()));

    // Four clients, each retrying a command answered 503 with the same event id until it is
    // accepted: every accepted delta must count exactly once.
    let running = Arc::new(AtomicBool::new(true));
    let total = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for c in 0..4 {
        let (app, running, total) = (app.clone(), running.clone(), total.clone());
        clients.push(tokio::spawn(async move {
            let mut accepted: BTreeMap<String, i64> = BTreeMap::new();
            let (mut refused, mut i) = (0_u64, 0_i64);
            while running.load(Ordering::Relaxed) {
                let user = format!("c{c}-u{}", i % 25);
                let event = uuid::Uuid::new_v4().to_string();
                let delta = 1 + i % 7;
                let started = Instant::now();
                while post(&app, &event, &user, delta).await.is_none() {
                    refused += 1;
                    assert!(
                        started.elapsed() < Duration::from_secs(60),
                        "never accepted"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                *accepted.entry(user).or_default() += delta;
                total.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
            (accepted, refused)
        }));
    }
    // The restart comes under load: once the clients got 100 commands through, not after a
    // fixed time that a slow machine might spend starting up.
    wait_until(Duration::from_secs(30), || async {
        total.load(Ordering::Relaxed) >= 100
    })
    .await
    .expect("100 commands accepted before the restart");
    let restart = Instant::now();
    let pg = tokio::task::spawn_blocking(move || {
        pg.ctl(&["-m", "fast", "restart"]).expect("pg_ctl restart");
        pg
    })
    .await
    .expect("restart");
    let restarted_in = restart.elapsed();
    // The load goes on until 100 more commands were accepted by the restarted server.
    let after_restart = total.load(Ordering::Relaxed);
    wait_until(Duration::from_secs(60), || async {
        total.load(Ordering::Relaxed) >= after_restart + 100
    })
    .await
    .expect("100 commands accepted after the restart");
    running.store(false, Ordering::Relaxed);
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    let mut refused = 0;
    for client in clients {
        let (accepted, r) = client.await.expect("client");
        expected.extend(accepted);
        refused += r;
    }

    // Every accepted delta once, nothing else.
    let client = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(client.1);
    let source: BTreeMap<String, i64> = client
        .0
        .query(
            "SELECT user_id, score FROM user_scores WHERE board_id = 'pg'",
            &[],
        )
        .await
        .expect("scores")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(source, expected, "accepted commands against PostgreSQL");

    // The projector drains, the board is sealed by its requested rebuild, and a bounded read
    // comes from the whole projection with PostgreSQL's order.
    let board = BoardId::parse("pg").expect("board");
    let last = &RefCell::new((0_i64, serde_json::Value::Null));
    let recovered = wait_until(Duration::from_secs(30), || async {
        let pending: i64 = client
            .0
            .query_one(
                "SELECT count(*) FROM leaderboard_outbox WHERE published_at IS NULL",
                &[],
            )
            .await
            .expect("pending")
            .get(0);
        let (status, page) = get(&app, "/v1/boards/pg/top?limit=100").await;
        let done = pending == 0
            && status == StatusCode::OK
            && board_seal(&store(), &board).await.expect("seal") == Seal::Whole
            && page["freshness"]["source"] == "projection";
        *last.borrow_mut() = (pending, page);
        done
    })
    .await
    .unwrap_or_else(|| {
        let (pending, page) = &*last.borrow();
        panic!("not recovered: {pending} pending, {page}")
    });
    let top = common::entry_scores(&last.borrow().1);
    assert_eq!(top, source, "the projection after the restart");
    eprintln!(
        "postgres restarted in {restarted_in:?}; {} users, {refused} commands answered 503 and retried; recovered {:?} after the load",
        source.len(),
        recovered
    );
    cancel.cancel();
    projector.await.expect("projector");
    reconciler.await.expect("reconciler");
}
