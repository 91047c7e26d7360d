//! projection_truth: seal.

use super::*;

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
