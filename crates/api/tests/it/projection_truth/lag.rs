//! projection_truth: lag.

use super::*;

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
