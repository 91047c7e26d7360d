//! projection_truth: lost.

use super::*;

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
