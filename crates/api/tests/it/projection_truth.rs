//! The projection never lies: reads checked the moment something breaks, before any
//! reconciliation pass runs. A board whose keys vanish, an empty Redis, a hand-added member, an
//! unknown lag, one board's large backlog, and rebuilds under constant writes.

use crate::common;

use common::{TestEnv, app_with, entries, get, seal};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use ledgerboard_core::board::apply_score_command;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::db::Database;
use ledgerboard_core::domain::{BoardId, Delta, EventId, ScoreCommand, UserId};
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

#[tokio::test]
async fn a_board_whose_keys_vanish_is_read_from_postgres_at_once_and_rebuilt() {
    let env = TestEnv::new(|s| s.api.freshness_cache_ms = Millis::of(0)).await;
    sealed_board(&env, "lost", 2_000).await;
    let app = app_with(&env.settings);
    let store = env.store();
    let board = BoardId::parse("lost").expect("board");
    let (_, page) = get(&app, "/v1/boards/lost/top?limit=10").await;
    assert_eq!(
        freshness(&page),
        (Some("projection"), None, Some("whole")),
        "{page}"
    );

    // Every key of the board deleted (an eviction, a FLUSHDB, an operator's mistake), and no
    // reconciler running: the very next read sees it.
    lose_board(&store, &board).await;
    let lost_at = Instant::now();
    let (status, page) = get(&app, "/v1/boards/lost/top?limit=10").await;
    let first_honest = lost_at.elapsed();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        freshness(&page),
        (
            Some("database"),
            Some("projection_missing"),
            Some("missing")
        ),
        "{page}"
    );
    assert_eq!(entries(&page), source_top(&env, "lost", 10).await);
    let (status, member) = get(&app, "/v1/boards/lost/users/u000007").await;
    assert_eq!(
        (status, member["score"].as_i64(), member["rank"].as_u64()),
        (StatusCode::OK, Some(21), Some(1994)),
        "a member who exists is found, not 404: {member}"
    );
    // The eventual read says what it found instead of passing an empty board off as fresh.
    let (_, eventual) = get(&app, "/v1/boards/lost/top?consistency=eventual").await;
    assert_eq!(
        (freshness(&eventual), entries(&eventual).len()),
        ((Some("projection"), None, Some("missing")), 0),
        "{eventual}"
    );
    wait_until(Duration::from_secs(5), || requested(&store, "lost"))
        .await
        .expect("no rebuild asked");

    let (stop, running) = reconciler(&env);
    let rebuilt = until_rebuilt(&app, &env, "lost").await;
    let total = lost_at.elapsed();
    eprintln!(
        "keys deleted: first honest read after {first_honest:?}, rebuilt projection after {total:?} ({rebuilt:?} after the reconciler started)"
    );
    // The request goes when the reconciler takes it up, before it rebuilds.
    wait_until(Duration::from_secs(5), || async {
        !requested(&store, "lost").await
    })
    .await
    .expect("the request stays");
    assert_eq!(
        env.projection("lost").await,
        env.source("lost").await,
        "the rebuilt board equals PostgreSQL"
    );
    stop.cancel();
    running.await.expect("reconciler task");
}

/// A read that finds a board not whole right after an earlier ask was served (the board lost
/// again just after its rebuild) asks again, even inside the api's one-ask-per-window throttle:
/// the throttle delays the ask, it never drops it. Here the reconciler's claim of the first ask
/// is played by hand (SREM), and no later read comes that could ask instead.
#[tokio::test]
async fn a_board_lost_again_right_after_an_ask_was_served_is_asked_for_again() {
    let env = TestEnv::new(|s| s.api.freshness_cache_ms = Millis::of(0)).await;
    sealed_board(&env, "again", 50).await;
    let app = app_with(&env.settings);
    let store = env.store();
    let board = BoardId::parse("again").expect("board");
    lose_board(&store, &board).await;
    let (_, page) = get(&app, "/v1/boards/again/top").await;
    assert_eq!(freshness(&page).1, Some("projection_missing"), "{page}");
    wait_until(Duration::from_secs(5), || requested(&store, "again"))
        .await
        .expect("no rebuild asked");
    // The reconciler takes the request (and rebuilds; the board is then lost again).
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("SREM")
        .arg(store.keys().rebuild_requests())
        .arg("again")
        .query_async(&mut conn)
        .await
        .expect("srem");
    let (_, page) = get(&app, "/v1/boards/again/top").await;
    assert_eq!(freshness(&page).1, Some("projection_missing"), "{page}");
    wait_until(Duration::from_secs(3), || requested(&store, "again"))
        .await
        .expect("the second read's ask was dropped by the throttle");
}

#[tokio::test]
async fn a_member_added_or_lost_by_hand_breaks_the_seal() {
    let env = TestEnv::new(|s| s.api.freshness_cache_ms = Millis::of(0)).await;
    sealed_board(&env, "edit", 50).await;
    let app = app_with(&env.settings);
    let store = env.store();
    let board = BoardId::parse("edit").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("ZADD")
        .arg(store.keys().scores(&board))
        .arg(1_000_000)
        .arg("intruder")
        .query_async(&mut conn)
        .await
        .expect("zadd");
    let (_, page) = get(&app, "/v1/boards/edit/top?limit=3").await;
    assert_eq!(
        freshness(&page),
        (Some("database"), Some("projection_broken"), Some("broken")),
        "{page}"
    );
    assert_ne!(entries(&page)[0].0, "intruder");
    seal(&env, "edit").await;
    let (_, page) = get(&app, "/v1/boards/edit/top?limit=3").await;
    assert_eq!(freshness(&page), (Some("projection"), None, Some("whole")));
    assert_ne!(entries(&page)[0].0, "intruder");

    // Half of the board's keys evicted: the versions hash alone.
    redis_del(&store, &[store.keys().versions(&board)]).await;
    let (_, member) = get(&app, "/v1/boards/edit/users/u000003").await;
    assert_eq!(
        (freshness(&member), member["version"].as_i64()),
        (
            (Some("database"), Some("projection_broken"), Some("broken")),
            Some(1)
        ),
        "{member}"
    );
}

#[tokio::test]
async fn a_metadata_hash_lost_alone_breaks_the_seal_before_any_repair() {
    // Checked before any repair runs: the read that would show entries without their metadata
    // is the one that must see it.
    let env = TestEnv::new(|s| s.api.freshness_cache_ms = Millis::of(0)).await;
    let client = env.db.client().await;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version, metadata)
             SELECT 'meta', 'u' || g, g, 1,
                    CASE WHEN g % 2 = 0 THEN jsonb_build_object('car', g) END
             FROM generate_series(1, 20) g",
            &[],
        )
        .await
        .expect("seed");
    seal(&env, "meta").await;
    let app = app_with(&env.settings);
    let store = env.store();
    let board = BoardId::parse("meta").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let xcard: Option<String> = redis::cmd("HGET")
        .arg(store.keys().meta(&board))
        .arg("xcard")
        .query_async(&mut conn)
        .await
        .expect("hget");
    assert_eq!(
        xcard.as_deref(),
        Some("10"),
        "the rebuild counts the metadata"
    );
    let (_, page) = get(&app, "/v1/boards/meta/top?limit=3").await;
    assert_eq!(freshness(&page), (Some("projection"), None, Some("whole")));
    assert_eq!(page["entries"][0]["metadata"]["car"], 20, "{page}");

    // One member's metadata evicted or deleted by hand: every read kind sees it.
    let _: i64 = redis::cmd("HDEL")
        .arg(store.keys().metadata(&board))
        .arg("u20")
        .query_async(&mut conn)
        .await
        .expect("hdel");
    let broken = (Some("database"), Some("projection_broken"), Some("broken"));
    for uri in [
        "/v1/boards/meta/top?limit=3",
        "/v1/boards/meta/users/u20/around?radius=1",
        "/v1/boards/meta/users?ids=u20,u18",
    ] {
        let (status, page) = get(&app, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {page}");
        assert_eq!(freshness(&page), broken, "{uri}: {page}");
    }
    let (_, member) = get(&app, "/v1/boards/meta/users/u20").await;
    assert_eq!(freshness(&member), broken, "{member}");
    assert_eq!(member["metadata"]["car"], 20, "from PostgreSQL: {member}");
    assert!(requested(&store, "meta").await, "a rebuild is asked for");

    // The whole hash gone: the same; a rebuild counts it afresh.
    redis_del(&store, &[store.keys().metadata(&board)]).await;
    let (_, page) = get(&app, "/v1/boards/meta/top?limit=3").await;
    assert_eq!(freshness(&page), broken, "{page}");
    seal(&env, "meta").await;
    let (_, page) = get(&app, "/v1/boards/meta/top?limit=3").await;
    assert_eq!(freshness(&page), (Some("projection"), None, Some("whole")));
    assert_eq!(page["entries"][0]["metadata"]["car"], 20, "{page}");
}

#[tokio::test]
async fn an_eventual_read_without_postgres_takes_the_order_from_the_seal() {
    let env = TestEnv::new(|_| {}).await;
    let client = env.db.client().await;
    client
        .execute(
            "INSERT INTO board_definitions (board_id, operator, sort, tie_break, min_score, max_score)
             VALUES ('lap', 'best', 'ascending', 'user_id', 0, 100000)",
            &[],
        )
        .await
        .expect("definition");
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'lap', 'u' || g, 1000 + g, 1 FROM generate_series(1, 5) g",
            &[],
        )
        .await
        .expect("rows");
    seal(&env, "lap").await;
    // A freshly started api (no definition read yet) whose PostgreSQL does not answer: the
    // order can only come from the projection itself.
    let mut settings = env.settings.clone();
    settings.database.url = "postgres://postgres@127.0.0.1:1/gone".into();
    settings.database.connect_timeout_ms = Millis::of(200);
    settings.database.pool_wait_timeout_ms = Millis::of(500);
    let app = app_with(&settings);
    let (status, page) = get(&app, "/v1/boards/lap/top?limit=3&consistency=eventual").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(freshness(&page).0, Some("projection"), "{page}");
    assert_eq!(
        entries(&page),
        [
            ("u1".to_owned(), 1001),
            ("u2".to_owned(), 1002),
            ("u3".to_owned(), 1003)
        ],
        "the time trial's order, lowest first: {page}"
    );
}

#[tokio::test]
async fn a_changed_order_asks_for_a_rebuild_so_no_seal_states_the_old_one() {
    let env = TestEnv::new(|_| {}).await;
    sealed_board(&env, "flip", 5).await;
    let store = env.store();
    let app = app_with(&env.settings);
    // Emptied (a rule may change only then), its seal still stating descending order.
    env.db
        .client()
        .await
        .execute("DELETE FROM user_scores WHERE board_id = 'flip'", &[])
        .await
        .expect("empty the board");
    let put = |body: &str| {
        axum::http::Request::put("/v1/boards/flip")
            .header("content-type", "application/json")
            .header(
                "authorization",
                format!("Bearer {}", ledgerboard_testkit::TEST_TOKEN),
            )
            .body(axum::body::Body::from(body.to_owned()))
            .expect("request")
    };
    // Bounds alone leave the order: no rebuild is asked for.
    let (status, answer) = common::send(
        &app,
        put(r#"{"operator":"add","min_score":-5000,"max_score":5000}"#),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert!(!requested(&store, "flip").await);
    let (status, answer) = common::send(
        &app,
        put(r#"{"operator":"best","sort":"ascending","min_score":-5000,"max_score":5000}"#),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // The api sends its rebuild requests in the background.
    let store = &store;
    let asked = wait_until(Duration::from_secs(5), || async move {
        requested(store, "flip").await
    })
    .await;
    assert!(asked.is_some(), "the order changed: a rebuild is asked for");
}

/// The reads share one multiplexed Redis connection (`Store::read_connection`). After Redis
/// restarts with its data, that connection is closed: the first read to find it so sends its
/// command once more on a new one, and is answered by the projection, not failed over to
/// PostgreSQL with `redis_error` (a read that fails over that way asks for no rebuild, so a
/// board left unsealed by a loss would stay so until the next pass: the chaos run found
/// that).
#[tokio::test]
async fn the_first_read_after_redis_restarted_is_answered_by_the_projection() {
    let mut server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |s| {
        s.api.freshness_cache_ms = Millis::of(0);
    })
    .await;
    sealed_board(&env, "k", 100).await;
    let app = app_with(&env.settings);
    let (_, page) = get(&app, "/v1/boards/k/top").await;
    assert_eq!(freshness(&page).0, Some("projection"), "{page}");
    server.stop();
    server.restart();
    wait_until(Duration::from_secs(10), || async { server.ping() })
        .await
        .expect("redis back");
    for read in ["/v1/boards/k/top", "/v1/boards/k/users/u000001"] {
        let (status, page) = get(&app, read).await;
        assert_eq!(status, StatusCode::OK, "{read}: {page}");
        assert_eq!(
            freshness(&page),
            (Some("projection"), None, Some("whole")),
            "{read}: {page}"
        );
    }
}

#[tokio::test]
async fn redis_restarted_empty_is_seen_by_the_next_read_and_rebuilt() {
    let mut server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |s| {
        s.api.freshness_cache_ms = Millis::of(0);
    })
    .await;
    sealed_board(&env, "r", 1_000).await;
    let app = app_with(&env.settings);
    let (_, page) = get(&app, "/v1/boards/r/top").await;
    assert_eq!(freshness(&page).0, Some("projection"));

    // No persistence: the restarted server is empty, and nothing in the outbox is pending.
    server.crash();
    server.restart();
    let lost_at = Instant::now();
    let first_honest = &Cell::new(None);
    let (stop, running) = reconciler(&env);
    let want = &source_top(&env, "r", 10).await;
    let (app, last) = (&app, &RefCell::new(Value::Null));
    wait_until(Duration::from_secs(20), || async move {
        let (status, page) = get(app, "/v1/boards/r/top?limit=10").await;
        // The first reads may meet the restart itself (connection refused): they fall back too.
        let mut whole = false;
        if status == StatusCode::OK {
            assert_eq!(&entries(&page), want, "{page}");
            let f = freshness(&page);
            if f.0 == Some("database") && first_honest.get().is_none() {
                first_honest.set(Some(lost_at.elapsed()));
            }
            whole = f == (Some("projection"), None, Some("whole"));
        }
        *last.borrow_mut() = page;
        whole
    })
    .await
    .unwrap_or_else(|| panic!("never rebuilt: {}", last.borrow()));
    let first_honest = first_honest
        .get()
        .expect("a read came from PostgreSQL before the rebuild");
    eprintln!(
        "redis restarted empty: first honest read after {first_honest:?}, rebuilt projection after {:?}",
        lost_at.elapsed()
    );
    assert!(first_honest < Duration::from_secs(1), "{first_honest:?}");
    assert_eq!(env.projection("r").await, env.source("r").await);
    stop.cancel();
    running.await.expect("reconciler task");
}

#[tokio::test]
async fn an_unknown_lag_sends_bounded_reads_to_postgres_and_the_abandoned_query_is_cancelled() {
    let env = TestEnv::new(|s| s.api.freshness_cache_ms = Millis::of(0)).await;
    sealed_board(&env, "b", 20).await;
    let app = app_with(&env.settings);
    // A session holds the outbox locked, as a long migration or a stuck vacuum might: the lag
    // query waits, runs out of its 300 ms, and the lag is unknown.
    let locker = env.db.client().await;
    locker
        .batch_execute("BEGIN; LOCK TABLE leaderboard_outbox IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("lock");
    let (status, page) = get(&app, "/v1/boards/b/top?limit=3").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    // The seal is read beside the database's answer: the projection is stated (whole), the
    // lag is not (null), and the answer still comes from PostgreSQL.
    assert_eq!(
        freshness(&page),
        (Some("database"), Some("lag_unknown"), Some("whole")),
        "{page}"
    );
    assert!(page["freshness"]["lag_ms"].is_null(), "{page}");
    assert_eq!(entries(&page), source_top(&env, "b", 3).await);
    // The measurement's query was cancelled on the server, not left waiting on the lock.
    let (locker, waiting) = (&locker, &Cell::new(0_i64));
    wait_until(Duration::from_secs(10), || async move {
        let now: i64 = locker
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()
                   AND backend_type = 'client backend'
                   AND state = 'active' AND query LIKE '%leaderboard_outbox%'",
                &[],
            )
            .await
            .expect("activity")
            .get(0);
        waiting.set(now);
        now == 0
    })
    .await
    .unwrap_or_else(|| panic!("{} abandoned lag queries still run", waiting.get()));
    // The eventual read still answers from the projection, with the lag stated as unknown.
    let (_, eventual) = get(&app, "/v1/boards/b/top?limit=3&consistency=eventual").await;
    assert_eq!(
        (
            freshness(&eventual),
            eventual["freshness"]["lag_ms"].is_null()
        ),
        ((Some("projection"), None, Some("whole")), true),
        "{eventual}"
    );
    locker.batch_execute("ROLLBACK").await.expect("unlock");
}

#[tokio::test]
async fn one_boards_large_backlog_is_stated_and_leaves_other_boards_alone() {
    let env = TestEnv::new(|s| {
        s.api.freshness_cache_ms = Millis::of(0);
        s.api.max_lag_ms = Millis::of(1_000);
    })
    .await;
    sealed_board(&env, "quiet", 100).await;
    // One million rows of "busy" committed while no projector runs, the oldest a minute old.
    let client = env.db.client().await;
    let seeded = Instant::now();
    ledgerboard_testkit::seed_outbox(&client, "busy", 100_000, 1_000_000).await;
    client
        .batch_execute(
            "UPDATE leaderboard_outbox SET created_at = now() - interval '60 seconds'
             WHERE event_id = (SELECT event_id FROM leaderboard_outbox ORDER BY id LIMIT 1);
             ANALYZE leaderboard_outbox",
        )
        .await
        .expect("age");
    eprintln!("seeded 1,000,000 pending rows in {:?}", seeded.elapsed());
    let app = app_with(&env.settings);

    let started = Instant::now();
    let (status, busy) = get(&app, "/v1/boards/busy/top?limit=10").await;
    let busy_read = started.elapsed();
    assert_eq!(status, StatusCode::OK, "{busy}");
    let f = &busy["freshness"];
    assert_eq!(
        (
            f["source"].as_str(),
            f["reason"].as_str(),
            f["pending"].as_i64(),
            f["capped"].as_bool()
        ),
        (Some("database"), Some("lag"), Some(10_000), Some(true)),
        "{busy}"
    );
    assert!(f["lag_ms"].as_i64().is_some_and(|l| l >= 60_000), "{busy}");
    assert_eq!(entries(&busy), source_top(&env, "busy", 10).await);

    let started = Instant::now();
    let (_, quiet) = get(&app, "/v1/boards/quiet/top?limit=10").await;
    let quiet_read = started.elapsed();
    assert_eq!(
        (
            freshness(&quiet),
            quiet["freshness"]["pending"].as_i64(),
            quiet["freshness"]["lag_ms"].as_i64()
        ),
        ((Some("projection"), None, Some("whole")), Some(0), Some(0)),
        "another board's backlog is not this board's lag: {quiet}"
    );

    // The lag statement itself, as the server runs it: a bounded number of index entries.
    let plan: Vec<String> = client
        .query(
            &format!(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) {}",
                ledgerboard_core::db::reads::FRESHNESS.sql()
            ),
            &[&"busy", &ledgerboard_core::db::reads::LAG_COUNT_CAP],
        )
        .await
        .expect("explain")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(
        !plan.contains("Seq Scan on leaderboard_outbox "),
        "the lag must not scan the outbox:\n{plan}"
    );
    let execution = plan
        .lines()
        .find(|l| l.contains("Execution Time"))
        .unwrap_or("?");
    // A command on the busy board while the backlog waits.
    let started = Instant::now();
    command(&env.database(), "busy", "u000001", 1).await;
    eprintln!(
        "1,000,000 pending: busy read {busy_read:?}, quiet read {quiet_read:?}, lag statement {execution}, one command {:?}",
        started.elapsed()
    );
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

/// A board whose projection is lost, or broken, while it lags: the bounded read falls back for
/// the lag and still reads the seal with it, so the answer states the projection and the
/// board is asked to be rebuilt by that read. Before, a read that fell back for lag never
/// looked at Redis: a board whose rows were held back (a backlog, rows refused at a corrupt
/// member) stayed lost until the reconciler's next pass (lbchaos: "still not whole (Broken)
/// 30s after the read", freshness `projection: null`).
#[tokio::test]
async fn a_board_lost_while_it_lags_is_seen_by_the_read_that_falls_back() {
    let env = TestEnv::new(|s| {
        s.api.freshness_cache_ms = Millis::of(0);
        s.api.max_lag_ms = Millis::of(1_000);
    })
    .await;
    let store = env.store();
    for board in ["lost", "broken"] {
        sealed_board(&env, board, 20).await;
        // One command no projector delivers, committed a minute ago: the board lags.
        command(&env.database(), board, "u000001", 1).await;
    }
    env.db
        .client()
        .await
        .execute(
            "UPDATE leaderboard_outbox SET created_at = now() - interval '60 seconds'",
            &[],
        )
        .await
        .expect("age the rows");
    lose_board(&store, &BoardId::parse("lost").expect("board")).await;
    let broken = BoardId::parse("broken").expect("board");
    redis_del(&store, &[store.keys().rebuild_requests()]).await;
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("HDEL")
        .arg(store.keys().versions(&broken))
        .arg("u000002")
        .query_async(&mut conn)
        .await
        .expect("lose one member's version");
    let app = app_with(&env.settings);
    for (board, state) in [("lost", "missing"), ("broken", "broken")] {
        let (status, page) = get(&app, &format!("/v1/boards/{board}/top?limit=5")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(
            freshness(&page),
            (Some("database"), Some("lag"), Some(state)),
            "{page}"
        );
        assert_eq!(entries(&page), source_top(&env, board, 5).await);
        let asked = wait_until(Duration::from_secs(5), || requested(&store, board)).await;
        assert!(asked.is_some(), "{board}: no rebuild was asked for");
    }
}

#[tokio::test]
async fn a_rebuild_under_constant_writes_never_shows_an_older_score() {
    let env = TestEnv::new(|s| {
        s.api.freshness_cache_ms = Millis::of(0);
        s.projector.poll_interval_ms = Millis::of(10);
        s.reconciler.chunk_size = Count::of(20);
    })
    .await;
    // The hot members sort first, so the build reads them in its first chunk and then takes
    // about 100 more chunks: their writes meanwhile are what a rebuild could lose.
    let (users, hot) = (2_000_i64, 20_i64);
    sealed_board(&env, "hot", users).await;
    let app = app_with(&env.settings);
    let cancel = CancellationToken::new();
    let projector = tokio::spawn(
        Projector::new(env.settings.clone(), env.database(), env.store()).run(cancel.clone()),
    );
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (db, writing) = (env.database(), writing.clone());
        tokio::spawn(async move {
            let mut i = 0_i64;
            while writing.load(Ordering::Relaxed) {
                command(&db, "hot", &format!("u{:06}", 1 + i % hot), 1).await;
                i += 1;
            }
            i
        })
    };
    // Readers remember the newest version each member showed and must never see an older
    // one, while the board is rebuilt again and again.
    let reader = {
        let (app, writing) = (app.clone(), writing.clone());
        tokio::spawn(async move {
            let mut seen: HashMap<String, i64> = HashMap::new();
            let (mut reads, mut from_projection) = (0_u64, 0_u64);
            let mut i = 0_i64;
            while writing.load(Ordering::Relaxed) {
                let user = format!("u{:06}", 1 + (i * 7) % hot);
                i += 1;
                let (status, m) = get(
                    &app,
                    &format!("/v1/boards/hot/users/{user}?consistency=eventual"),
                )
                .await;
                assert_eq!(status, StatusCode::OK, "{m}");
                let version = m["version"].as_i64().expect("version");
                let before = seen.insert(user.clone(), version).unwrap_or(0);
                assert!(
                    version >= before,
                    "{user} went back from version {before} to {version}: {m}"
                );
                reads += 1;
                from_projection += u64::from(m["freshness"]["projection"] == "whole");
            }
            (reads, from_projection)
        })
    };
    for _ in 0..6 {
        seal(&env, "hot").await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    writing.store(false, Ordering::Relaxed);
    let commands = writer.await.expect("writer");
    let (reads, whole) = reader.await.expect("reader");
    assert!(env.wait_drained(Duration::from_secs(20)).await);
    cancel.cancel();
    projector.await.expect("projector");
    eprintln!(
        "6 rebuilds under {commands} commands; {reads} reads ({whole} from a whole projection), none older"
    );
    assert!(
        commands > 100 && reads > 100,
        "{commands} commands, {reads} reads"
    );
    assert_eq!(env.projection("hot").await, env.source("hot").await);
    let (_, page) = get(&app, "/v1/boards/hot/top").await;
    assert_eq!(freshness(&page), (Some("projection"), None, Some("whole")));
}

#[tokio::test]
async fn a_lost_board_nobody_reads_is_found_by_the_reconcilers_walk_and_rebuilt() {
    let env = TestEnv::new(|_| {}).await;
    sealed_board(&env, "idle", 300).await;
    let store = env.store();
    let board = BoardId::parse("idle").expect("board");
    lose_board(&store, &board).await;
    // No read and no command: only the reconciler's pass can notice.
    let (stop, running) = reconciler(&env);
    wait_until(Duration::from_secs(20), || async {
        ledgerboard_core::projection::read::board_seal(&store, &board)
            .await
            .expect("seal")
            == ledgerboard_core::projection::read::Seal::Whole
    })
    .await
    .expect("never rebuilt");
    assert_eq!(env.projection("idle").await, env.source("idle").await);
    stop.cancel();
    running.await.expect("reconciler task");
}

#[tokio::test]
async fn a_redis_that_comes_back_as_a_new_server_is_reconciled_at_once() {
    let mut server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |_| {}).await;
    sealed_board(&env, "fo", 100).await;
    let (stop, running) = reconciler(&env);
    // Let the daemon's first pass run on the consistent board: the run id is read before it,
    // and the pass records its progress in PostgreSQL.
    let observer = env.db.client().await;
    wait_until(Duration::from_secs(10), || async {
        !observer
            .query(
                "SELECT 1 FROM reconciler_progress WHERE namespace = $1",
                &[&env.settings.redis.namespace],
            )
            .await
            .expect("reconciler_progress")
            .is_empty()
    })
    .await
    .expect("the reconciler's first pass");
    // PostgreSQL moves on while Redis keeps an older copy whose rows count as projected: what a
    // failover to a replica that was behind leaves. The seal cannot show it (no member was
    // added or lost), so it takes a pass, and the next one is an hour away.
    env.db
        .client()
        .await
        .execute(
            "UPDATE user_scores SET score = score + 1000, version = 2
             WHERE board_id = 'fo' AND user_id <= 'u000010'",
            &[],
        )
        .await
        .expect("move on");
    assert_ne!(env.projection("fo").await, env.source("fo").await);
    server.stop();
    server.restart();
    let reconciled = wait_until(Duration::from_secs(15), || async {
        env.projection("fo").await == env.source("fo").await
    })
    .await
    .expect("the new server was not reconciled");
    eprintln!("new Redis server reconciled {reconciled:?} after it came back");
    stop.cancel();
    running.await.expect("reconciler task");
}
