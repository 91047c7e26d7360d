//! The score command against the real PostgreSQL: each test has a database of its own.

use crate::common;

use common::{Settings, app_with, send};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use ledgerboard_core::config::Millis;
use ledgerboard_core::db::migrate;
use ledgerboard_testkit::{BlackHole, TestDb, TestRedis, closed_port, settings_for};
use serde_json::{Value, json};
use uuid::Uuid;

struct Harness {
    db: TestDb,
    _redis: TestRedis,
    app: Router,
}

async fn harness() -> Harness {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let settings = settings_for(&db.url, &redis, &[]);
    migrate(&settings.database).await.expect("migrate");
    let app = app_with(&settings);
    Harness {
        db,
        _redis: redis,
        app,
    }
}

async fn post(app: &Router, board: &str, body: Value) -> (StatusCode, Value) {
    send(app, common::command(board, body.to_string())).await
}

fn command(event: Uuid, user: &str, delta: i64) -> Value {
    json!({"event_id": event.to_string(), "user_id": user, "delta": delta})
}

/// (score_events, leaderboard_outbox, user_scores) row counts.
async fn counts(db: &TestDb) -> (i64, i64, i64) {
    let client = db.client().await;
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM score_events), (SELECT count(*) FROM leaderboard_outbox),
                    (SELECT count(*) FROM user_scores)",
            &[],
        )
        .await
        .expect("counts");
    (row.get(0), row.get(1), row.get(2))
}

async fn score_of(db: &TestDb, board: &str, user: &str) -> Option<(i64, i64)> {
    let client = db.client().await;
    client
        .query_opt(
            "SELECT score, version FROM user_scores WHERE board_id = $1 AND user_id = $2",
            &[&board, &user],
        )
        .await
        .expect("score query")
        .map(|r| (r.get(0), r.get(1)))
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<no error code>")
}

#[tokio::test]
async fn first_application_duplicate_and_conflicting_reuse() {
    let h = harness().await;
    let a = Uuid::new_v4();

    let (status, body) = post(&h.app, "weekly", command(a, "user-a", 10)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body,
        json!({"event_id": a.to_string(), "board": "weekly", "user_id": "user-a",
               "score": 10, "version": 1, "duplicate": false, "improved": true})
    );

    // A second event moves the score on; a replay of the first still answers what it produced.
    let (status, body) = post(&h.app, "weekly", command(Uuid::new_v4(), "user-a", 5)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        (body["score"].as_i64(), body["version"].as_i64()),
        (Some(15), Some(2))
    );

    let (status, body) = post(&h.app, "weekly", command(a, "user-a", 10)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"event_id": a.to_string(), "board": "weekly", "user_id": "user-a",
               "score": 10, "version": 1, "duplicate": true, "improved": true})
    );
    assert_eq!(counts(&h.db).await, (2, 2, 1));
    assert_eq!(score_of(&h.db, "weekly", "user-a").await, Some((15, 2)));

    // The same event id with another delta, user or board is refused and changes nothing.
    for (board, user, delta) in [
        ("weekly", "user-a", 11),
        ("weekly", "user-b", 10),
        ("daily", "user-a", 10),
    ] {
        let (status, body) = post(&h.app, board, command(a, user, delta)).await;
        assert_eq!(
            status,
            StatusCode::CONFLICT,
            "{board}/{user}/{delta}: {body}"
        );
        assert_eq!(error_code(&body), "event_id_reused");
    }
    assert_eq!(counts(&h.db).await, (2, 2, 1));
    assert_eq!(score_of(&h.db, "weekly", "user-a").await, Some((15, 2)));

    // The outbox carries absolute scores and versions, in commit order.
    let client = h.db.client().await;
    let rows = client
        .query(
            "SELECT event_id, absolute_score, score_version, published_at IS NULL
             FROM leaderboard_outbox ORDER BY id",
            &[],
        )
        .await
        .expect("outbox");
    let rows: Vec<(Uuid, i64, i64, bool)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(rows[0], (a, 10, 1, true));
    assert_eq!((rows[1].1, rows[1].2), (15, 2));
}

#[tokio::test]
async fn invalid_commands_get_clear_errors_and_write_nothing() {
    let h = harness().await;
    let ok_event = Uuid::new_v4().to_string();
    let long_board = "b".repeat(65);
    let long_user = "u".repeat(129);
    let cases: Vec<(&str, String, StatusCode, &str)> = vec![
        (
            "weekly",
            "{not json".into(),
            StatusCode::BAD_REQUEST,
            "malformed_body",
        ),
        (
            "weekly",
            "[]".into(),
            StatusCode::BAD_REQUEST,
            "malformed_body",
        ),
        (
            "weekly",
            // No value: 422 naming the field this board's operator takes.
            json!({"event_id": ok_event, "user_id": "u"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "wrong_value_field",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "u", "delta": "5"}).to_string(),
            StatusCode::BAD_REQUEST,
            "malformed_body",
        ),
        (
            "weekly",
            json!({"event_id": "not-a-uuid", "user_id": "u", "delta": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event_id",
        ),
        (
            "weekly",
            json!({"event_id": Uuid::nil().to_string(), "user_id": "u", "delta": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_event_id",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "u", "delta": 1001}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "delta_out_of_range",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "u", "delta": -1001}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "delta_out_of_range",
        ),
        (
            "weekly",
            format!(
                r#"{{"event_id": "{ok_event}", "user_id": "u", "delta": 9223372036854775808}}"#
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "delta_out_of_range",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "u", "delta": 1.5}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_delta",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "", "delta": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_user_id",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": long_user, "delta": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_user_id",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "a\u{0}b", "delta": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_user_id",
        ),
        (
            "weekly",
            json!({"event_id": ok_event, "user_id": "a\nb", "delta": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_user_id",
        ),
        (
            long_board.as_str(),
            command(Uuid::new_v4(), "u", 1).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_board_id",
        ),
        (
            "a%7Bb%7D",
            command(Uuid::new_v4(), "u", 1).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_board_id",
        ),
        (
            "a%20b",
            command(Uuid::new_v4(), "u", 1).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_board_id",
        ),
        (
            "%FF",
            command(Uuid::new_v4(), "u", 1).to_string(),
            StatusCode::BAD_REQUEST,
            "invalid_path",
        ),
    ];
    for (board, body, status, code) in cases {
        let (got, answer) = send(&h.app, common::command(board, body.clone())).await;
        assert_eq!(
            (got, error_code(&answer)),
            (status, code),
            "{board} {body}: {answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{answer}"
        );
    }
    assert_eq!(counts(&h.db).await, (0, 0, 0));
}

#[tokio::test]
async fn oversized_body_is_413() {
    let h = harness().await;
    let big = json!({"event_id": Uuid::new_v4().to_string(), "user_id": "x".repeat(64 * 1024), "delta": 1});
    let (status, body) = post(&h.app, "weekly", big).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    assert_eq!(counts(&h.db).await, (0, 0, 0));
}

#[tokio::test]
async fn scores_stay_within_the_exact_double_range() {
    let h = harness().await;
    let max = (1_i64 << 53) - 1;
    let client = h.db.client().await;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version) VALUES
             ('weekly', 'top', $1, 3), ('weekly', 'bottom', $2, 3)",
            &[&(max - 5), &(-max + 5)],
        )
        .await
        .expect("seed");

    let (status, body) = post(&h.app, "weekly", command(Uuid::new_v4(), "top", 6)).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "score_out_of_range")
    );
    let (status, body) = post(&h.app, "weekly", command(Uuid::new_v4(), "bottom", -6)).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "score_out_of_range")
    );
    assert_eq!(counts(&h.db).await, (0, 0, 2));
    assert_eq!(score_of(&h.db, "weekly", "top").await, Some((max - 5, 3)));

    // Up to the bound itself is fine, and exact.
    let (status, body) = post(&h.app, "weekly", command(Uuid::new_v4(), "top", 5)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["score"].as_i64(), Some(max));
}

#[tokio::test]
async fn concurrent_commands_for_one_user_lose_no_update() {
    let h = harness().await;
    let mut tasks = Vec::new();
    for i in 1..=50_i64 {
        let app = h.app.clone();
        tasks.push(tokio::spawn(async move {
            post(&app, "weekly", command(Uuid::new_v4(), "hot", i)).await
        }));
    }
    for task in tasks {
        let (status, body) = task.await.expect("task");
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    assert_eq!(
        score_of(&h.db, "weekly", "hot").await,
        Some(((1..=50).sum(), 50))
    );
    let client = h.db.client().await;
    let versions: Vec<i64> = client
        .query(
            "SELECT score_version FROM leaderboard_outbox ORDER BY score_version",
            &[],
        )
        .await
        .expect("outbox")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=50).collect::<Vec<i64>>());
}

#[tokio::test]
async fn concurrent_arrivals_of_one_event_have_one_effect() {
    let h = harness().await;
    let event = Uuid::new_v4();
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let app = h.app.clone();
        tasks.push(tokio::spawn(async move {
            post(&app, "weekly", command(event, "racer", 7)).await
        }));
    }
    let mut created = 0;
    for task in tasks {
        let (status, body) = task.await.expect("task");
        match status {
            StatusCode::CREATED => created += 1,
            StatusCode::OK => assert_eq!(body["duplicate"], json!(true), "{body}"),
            other => panic!("unexpected {other}: {body}"),
        }
        assert_eq!(
            (body["score"].as_i64(), body["version"].as_i64()),
            (Some(7), Some(1))
        );
    }
    assert_eq!(created, 1);
    assert_eq!(counts(&h.db).await, (1, 1, 1));
    assert_eq!(score_of(&h.db, "weekly", "racer").await, Some((7, 1)));
}

#[tokio::test]
async fn unreachable_database_answers_503_in_bounded_time() {
    let black_hole = BlackHole::start();
    for url in [
        format!("postgres://postgres@127.0.0.1:{}/x", closed_port()),
        format!("postgres://postgres@{}/x", black_hole.addr()),
    ] {
        let redis = TestRedis::new();
        let mut settings: Settings = settings_for(&url, &redis, &[]);
        settings.database.connect_timeout_ms = Millis::of(500);
        settings.database.pool_wait_timeout_ms = Millis::of(500);
        let app = app_with(&settings);
        let started = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(10),
            post(&app, "weekly", command(Uuid::new_v4(), "u", 1)),
        )
        .await;
        let (status, body) = answer.unwrap_or_else(|_| panic!("{url}: no answer within 10 s"));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{url}: {body}");
        assert_eq!(error_code(&body), "unavailable");
        // Connect timeout plus scheduling slack: far below the 10 s bound that would mean a hang.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{url}: took {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json() {
    let h = harness().await;
    let (status, body) = send(
        &h.app,
        Request::get("/nope").body(Body::empty()).expect("req"),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "not_found")
    );
    let (status, body) = send(
        &h.app,
        Request::delete("/v1/boards/weekly/scores")
            .body(Body::empty())
            .expect("req"),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
}
