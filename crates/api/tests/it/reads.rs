//! Leaderboard reads against the real PostgreSQL and Redis: both paths give identical pages,
//! each consistency mode picks the right source, and outages of either server are handled.

use crate::common;

use axum::http::StatusCode;
use common::{TestEnv, app_with, get, seal, urlencode};
use ledgerboard_core::config::Millis;
use ledgerboard_testkit::closed_port;

/// Source rows for `board`, written to PostgreSQL, then projected into Redis by the real
/// rebuild, which also seals the board, as the reconciler does for every board.
async fn board_with(env: &TestEnv, board: &str, users: &[(String, i64)]) {
    let client = env.db.client().await;
    let ids: Vec<&str> = users.iter().map(|(u, _)| u.as_str()).collect();
    let scores: Vec<i64> = users.iter().map(|(_, s)| *s).collect();
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT $1, u, s, 1 FROM unnest($2::text[], $3::bigint[]) AS t(u, s)",
            &[&board, &ids, &scores],
        )
        .await
        .expect("seed");
    seal(env, board).await;
}

/// 10,000 user ids in mixed case, digits and non-ASCII letters, with 50 distinct scores.
fn tricky_users() -> Vec<(String, i64)> {
    let prefixes = [
        "a", "A", "é", "É", "0", "9", "z", "Z", "ß", "日本", "ÿ", "_",
    ];
    (0..10_000_i64)
        .map(|i| {
            (
                format!("{}{}", prefixes[i as usize % prefixes.len()], i / 7),
                i % 50 - 20,
            )
        })
        .collect()
}

#[tokio::test]
async fn both_paths_give_identical_pages_ranks_and_neighbourhoods() {
    let env = TestEnv::new(|_| {}).await;
    let users = tricky_users();
    board_with(&env, "mix", &users).await;
    let app = app_with(&env.settings);
    for (offset, limit) in [(0, 1), (0, 10), (37, 100), (5_000, 1_000), (9_990, 1_000)] {
        let uri =
            |c: &str| format!("/v1/boards/mix/top?offset={offset}&limit={limit}&consistency={c}");
        let (s1, projection) = get(&app, &uri("eventual")).await;
        let (s2, database) = get(&app, &uri("strong")).await;
        assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK));
        assert_eq!(projection["freshness"]["source"], "projection");
        assert_eq!(database["freshness"]["source"], "database");
        assert_eq!(
            projection["entries"], database["entries"],
            "offset {offset} limit {limit}"
        );
        let expected = (users.len() as i64 - offset).clamp(0, limit);
        assert_eq!(
            projection["entries"].as_array().map(Vec::len),
            Some(expected as usize)
        );
    }
    // Ties: equal scores in descending byte order of user id.
    let (_, page) = get(&app, "/v1/boards/mix/top?limit=1000&consistency=strong").await;
    let entries = page["entries"].as_array().expect("entries");
    for pair in entries.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (sa, sb) = (a["score"].as_i64(), b["score"].as_i64());
        assert!(
            sa > sb
                || (sa == sb
                    && a["user_id"].as_str().map(str::as_bytes)
                        > b["user_id"].as_str().map(str::as_bytes)),
            "{a} before {b}"
        );
        assert_eq!(b["rank"].as_u64(), a["rank"].as_u64().map(|r| r + 1));
    }
    for (user, _) in users.iter().step_by(397) {
        let path = format!("/v1/boards/mix/users/{}", urlencode(user));
        let (_, p) = get(&app, &format!("{path}?consistency=eventual")).await;
        let (_, d) = get(&app, &format!("{path}?consistency=strong")).await;
        assert_eq!(
            (&p["rank"], &p["score"], &p["version"]),
            (&d["rank"], &d["score"], &d["version"]),
            "{user}"
        );
        for radius in [0, 5, 100] {
            let (_, p) = get(
                &app,
                &format!("{path}/around?radius={radius}&consistency=eventual"),
            )
            .await;
            let (_, d) = get(
                &app,
                &format!("{path}/around?radius={radius}&consistency=strong"),
            )
            .await;
            assert_eq!(p["entries"], d["entries"], "{user} radius {radius}");
            assert!(
                p["entries"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|x| x["user_id"] == user.as_str()))
            );
        }
    }
}

#[tokio::test]
async fn bounded_reads_switch_to_the_database_while_the_projection_lags() {
    let env = TestEnv::new(|s| {
        s.api.max_lag_ms = Millis::of(1_000);
        s.api.freshness_cache_ms = Millis::of(0);
    })
    .await;
    board_with(&env, "b", &[("alice".into(), 10), ("bob".into(), 5)]).await;
    let app = app_with(&env.settings);
    let (_, fresh) = get(&app, "/v1/boards/b/top").await;
    assert_eq!(fresh["freshness"]["source"], "projection");
    assert_eq!(
        (
            fresh["freshness"]["pending"].as_i64(),
            fresh["freshness"]["lag_ms"].as_i64()
        ),
        (Some(0), Some(0))
    );

    // A command the projector has not applied, committed 5 s ago: the projection lags.
    let client = env.db.client().await;
    client
        .batch_execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
               VALUES ('11111111-1111-4111-8111-111111111111', 'b', 'bob', 20, 25, 2);
             UPDATE user_scores SET score = 25, version = 2 WHERE board_id = 'b' AND user_id = 'bob';
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version, created_at)
               VALUES ('11111111-1111-4111-8111-111111111111', 'b', 'bob', 25, 2, now() - interval '5 seconds');",
        )
        .await
        .expect("lag");
    let (_, bounded) = get(&app, "/v1/boards/b/top").await;
    assert_eq!(bounded["freshness"]["source"], "database");
    assert_eq!(bounded["entries"][0]["user_id"], "bob");
    assert_eq!(bounded["freshness"]["pending"], 1);
    assert!(
        bounded["freshness"]["lag_ms"]
            .as_i64()
            .is_some_and(|l| l >= 5_000),
        "{bounded}"
    );
    let (_, eventual) = get(&app, "/v1/boards/b/top?consistency=eventual").await;
    assert_eq!(
        (
            eventual["freshness"]["source"].as_str(),
            eventual["entries"][0]["user_id"].as_str()
        ),
        (Some("projection"), Some("alice"))
    );

    // Read-your-writes: bob's version 2 is only in PostgreSQL.
    let (_, mine) = get(
        &app,
        "/v1/boards/b/users/bob?min_version=2&consistency=eventual",
    )
    .await;
    assert_eq!(mine["error"]["code"], "projection_behind");
    client
        .execute("UPDATE leaderboard_outbox SET created_at = now()", &[])
        .await
        .expect("young lag");
    let (_, mine) = get(&app, "/v1/boards/b/users/bob?min_version=2").await;
    assert_eq!(
        (
            mine["freshness"]["source"].as_str(),
            mine["version"].as_i64(),
            mine["rank"].as_u64()
        ),
        (Some("database"), Some(2), Some(1)),
        "{mine}"
    );
    let (_, old) = get(&app, "/v1/boards/b/users/bob?min_version=1").await;
    assert_eq!(
        (old["freshness"]["source"].as_str(), old["version"].as_i64()),
        (Some("projection"), Some(1))
    );

    // The projector catches up: bounded reads come from the projection again.
    client
        .execute("UPDATE leaderboard_outbox SET published_at = now()", &[])
        .await
        .expect("publish");
    let (_, back) = get(&app, "/v1/boards/b/top").await;
    assert_eq!(
        (
            back["freshness"]["source"].as_str(),
            back["freshness"]["pending"].as_i64()
        ),
        (Some("projection"), Some(0))
    );
}

#[tokio::test]
async fn redis_down_bounded_reads_use_the_database_and_eventual_reads_fail_fast() {
    let env = TestEnv::new(|_| {}).await;
    board_with(&env, "b", &[("alice".into(), 10)]).await;
    let mut settings = env.settings.clone();
    settings.redis.url = format!("redis://127.0.0.1:{}", closed_port()).into();
    let app = app_with(&settings);
    let (status, bounded) = get(&app, "/v1/boards/b/top").await;
    assert_eq!(
        (status, bounded["freshness"]["source"].as_str()),
        (StatusCode::OK, Some("database"))
    );
    assert_eq!(bounded["entries"][0]["user_id"], "alice");
    let started = std::time::Instant::now();
    let (status, eventual) = get(&app, "/v1/boards/b/top?consistency=eventual").await;
    assert_eq!(
        (status, eventual["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("unavailable"))
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn postgres_down_eventual_reads_use_the_projection_bounded_and_strong_fail_closed() {
    let env = TestEnv::new(|s| {
        s.database.connect_timeout_ms = Millis::of(300);
        s.database.pool_wait_timeout_ms = Millis::of(300);
    })
    .await;
    board_with(&env, "b", &[("alice".into(), 10), ("bob".into(), 7)]).await;
    let mut settings = env.settings.clone();
    settings.database.url = format!("postgres://postgres@127.0.0.1:{}/x", closed_port()).into();
    let app = app_with(&settings);
    let (status, eventual) = get(&app, "/v1/boards/b/top?consistency=eventual").await;
    assert_eq!(
        (status, eventual["entries"][1]["user_id"].as_str()),
        (StatusCode::OK, Some("bob"))
    );
    let f = &eventual["freshness"];
    assert_eq!(
        (f["source"].as_str(), f["projection"].as_str()),
        (Some("projection"), Some("whole"))
    );
    assert!(
        f["lag_ms"].is_null() && f["pending"].is_null() && f["projected_through"].is_null(),
        "{f}"
    );
    // Without PostgreSQL the lag is unknown, and an unknown lag may be any lag: a bounded
    // read does not take the projection on trust.
    let (status, bounded) = get(&app, "/v1/boards/b/users/bob").await;
    assert_eq!(
        (status, bounded["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("unavailable")),
        "{bounded}"
    );
    let (status, strong) = get(&app, "/v1/boards/b/top?consistency=strong").await;
    assert_eq!(
        (status, strong["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("unavailable"))
    );
}

#[tokio::test]
async fn bad_read_parameters_get_clear_errors() {
    let env = TestEnv::new(|_| {}).await;
    board_with(&env, "b", &[("alice".into(), 10)]).await;
    let app = app_with(&env.settings);
    for (uri, status, code) in [
        (
            "/v1/boards/b/top?limit=0",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_range",
        ),
        (
            "/v1/boards/b/top?limit=1001",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_range",
        ),
        (
            "/v1/boards/b/top?limit=-1",
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            "/v1/boards/b/top?consistency=sometimes",
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            "/v1/boards/b/top?limt=5",
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            "/v1/boards/b/users/alice/around?radius=101",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_range",
        ),
        (
            "/v1/boards/b/users/nobody",
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "/v1/boards/b/users/nobody?consistency=strong",
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "/v1/boards/b/users/nobody/around",
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "/v1/boards/b%7B/top",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_board_id",
        ),
        (
            "/v1/boards/b/users/a%00b",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_user_id",
        ),
    ] {
        let (got, body) = get(&app, uri).await;
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (status, Some(code)),
            "{uri}: {body}"
        );
    }
    let (_, top) = get(&app, "/v1/boards/empty/top").await;
    assert_eq!(top["entries"], serde_json::json!([]));
}

/// The acceptance scenario, with a real projector: stopped while commands keep
/// arriving, bounded reads move to the database once the lag passes the limit, and back to
/// the projection once a projector has caught up; the freshness fields say so throughout.
#[tokio::test]
async fn bounded_reads_follow_a_stopped_and_restarted_projector() {
    use ledgerboard_projector::Projector;
    use std::time::Duration;
    use tokio_util::sync::CancellationToken;

    let env = TestEnv::new(|s| {
        s.api.max_lag_ms = Millis::of(500);
        s.api.freshness_cache_ms = Millis::of(0);
        s.projector.poll_interval_ms = Millis::of(20);
    })
    .await;
    let app = app_with(&env.settings);
    let post = async |user: &str, delta: i64| {
        let body = serde_json::json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": user, "delta": delta});
        let (status, _) = common::send_text(&app, common::command("live", body.to_string())).await;
        assert_eq!(status, StatusCode::CREATED);
    };
    let start = |env: &TestEnv| {
        let cancel = CancellationToken::new();
        let projector = Projector::new(env.settings.clone(), env.database(), env.store());
        (cancel.clone(), tokio::spawn(projector.run(cancel)))
    };

    let (stop, running) = start(&env);
    post("alice", 10).await;
    assert!(env.wait_drained(Duration::from_secs(10)).await);
    // A new board has no seal until the reconciler rebuilds it: bounded reads say so and come
    // from PostgreSQL meanwhile.
    let (_, unsealed) = get(&app, "/v1/boards/live/top").await;
    assert_eq!(
        (
            unsealed["freshness"]["source"].as_str(),
            unsealed["freshness"]["reason"].as_str(),
            unsealed["entries"][0]["score"].as_i64()
        ),
        (Some("database"), Some("projection_missing"), Some(10)),
        "{unsealed}"
    );
    seal(&env, "live").await;
    let (_, page) = get(&app, "/v1/boards/live/top").await;
    assert_eq!(
        (
            page["freshness"]["source"].as_str(),
            page["entries"][0]["score"].as_i64()
        ),
        (Some("projection"), Some(10))
    );

    stop.cancel();
    running.await.expect("projector stops");
    post("bob", 25).await;
    // Within the limit the projection still answers, and says what it lacks.
    let (_, page) = get(&app, "/v1/boards/live/top").await;
    assert_eq!(
        (
            page["freshness"]["source"].as_str(),
            page["freshness"]["pending"].as_i64()
        ),
        (Some("projection"), Some(1))
    );
    assert_eq!(
        page["entries"].as_array().map(Vec::len),
        Some(1),
        "bob is not projected yet"
    );
    // Time passing is what this checks: bob's unprojected row ages past `max_lag_ms`.
    tokio::time::sleep(Duration::from_millis(700)).await;
    post("carol", 5).await;
    let (_, page) = get(&app, "/v1/boards/live/top").await;
    assert_eq!(
        (
            page["freshness"]["source"].as_str(),
            page["freshness"]["pending"].as_i64()
        ),
        (Some("database"), Some(2)),
        "{page}"
    );
    assert!(
        page["freshness"]["lag_ms"]
            .as_i64()
            .is_some_and(|l| l > 500)
    );
    assert_eq!(page["entries"][0]["user_id"], "bob");

    let (stop, running) = start(&env);
    assert!(env.wait_drained(Duration::from_secs(10)).await);
    let (_, page) = get(&app, "/v1/boards/live/top").await;
    assert_eq!(
        (
            page["freshness"]["source"].as_str(),
            page["freshness"]["lag_ms"].as_i64()
        ),
        (Some("projection"), Some(0))
    );
    assert_eq!(page["entries"].as_array().map(Vec::len), Some(3));
    assert_eq!(page["entries"][0]["user_id"], "bob");
    stop.cancel();
    running.await.expect("projector stops");
}
