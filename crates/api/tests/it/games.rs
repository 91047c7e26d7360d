//! The "done when", through the api: a game declares a keep-best ascending time-trial
//! board (ties: earliest first) and a weekly increment board, posts to both, and reads top,
//! around, friends (`users?ids=`) and dense / competition ranks with totals, percentiles and
//! metadata from PostgreSQL (`strong`) and from the projection (`eventual`): the same answers,
//! and the ones the rules give. The projection is built the ways it is in production: the
//! reconciler's rebuild first, then the projector's scripts for every later command (a
//! member's improvement moves it to a new tie key).

use crate::common;

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{TestEnv, app_with, both, seal, send};
use ledgerboard_core::config::Millis;
use ledgerboard_projector::Projector;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn put(app: &Router, board: &str, body: Value) -> StatusCode {
    let request = Request::put(format!("/v1/boards/{board}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", ledgerboard_testkit::TEST_TOKEN),
        )
        .body(Body::from(body.to_string()))
        .expect("request");
    send(app, request).await.0
}

async fn post(app: &Router, board: &str, body: Value) -> (StatusCode, Value) {
    let mut body = body;
    body["event_id"] = json!(uuid::Uuid::new_v4().to_string());
    send(app, common::command(board, body.to_string())).await
}

/// (user, rank, score, percentile, metadata) of each entry.
fn lines(page: &Value) -> Vec<(String, u64, i64, f64, Value)> {
    page["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {page}"))
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().expect("user").to_owned(),
                e["rank"].as_u64().expect("rank"),
                e["score"].as_i64().expect("score"),
                e["percentile"].as_f64().expect("percentile"),
                e["metadata"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_time_trial_and_a_weekly_board_read_the_same_from_both_sources() {
    let env = TestEnv::new(|s| {
        s.projector.poll_interval_ms = Millis::of(20);
    })
    .await;
    let app = app_with(&env.settings);
    assert_eq!(
        put(
            &app,
            "trial",
            json!({"display_name": "Time trial", "operator": "best", "sort": "ascending",
                   "tie_break": "earliest", "min_score": 0, "max_score": 3_600_000}),
        )
        .await,
        StatusCode::CREATED
    );
    assert_eq!(
        put(
            &app,
            "weekly",
            json!({"operator": "add", "min_delta": 1, "max_delta": 500}),
        )
        .await,
        StatusCode::CREATED
    );

    // Before the first rebuild: alice and carol reach 50.000 s, alice first.
    let red = json!({"car": "red"});
    for (user, ms, metadata) in [
        ("alice", 50_000, red.clone()),
        ("bob", 48_000, Value::Null),
        ("carol", 50_000, json!({"car": "blue"})),
    ] {
        let (status, answer) = post(
            &app,
            "trial",
            json!({"user_id": user, "score": ms, "metadata": metadata}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    for (user, delta) in [("alice", 30), ("bob", 120), ("carol", 30)] {
        let (status, answer) = post(&app, "weekly", json!({"user_id": user, "delta": delta})).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    seal(&env, "trial").await;
    seal(&env, "weekly").await;

    let cancel = CancellationToken::new();
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let running = tokio::spawn(projector.run(cancel.clone()));

    // After it, through the projector: a slower run changes nothing, a faster one moves dave
    // ahead; erin ties bob later than him; a delta on the time trial is the wrong field.
    let (status, slower) = post(
        &app,
        "trial",
        json!({"user_id": "alice", "score": 52_000, "metadata": {"car": "green"}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        (&slower["improved"], &slower["score"]),
        (&json!(false), &json!(50_000)),
        "{slower}"
    );
    for (user, ms) in [("dave", 49_000), ("dave", 47_000), ("erin", 48_000)] {
        let (status, answer) = post(&app, "trial", json!({"user_id": user, "score": ms})).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert_eq!(answer["improved"], json!(true), "{answer}");
    }
    let (status, wrong) = post(&app, "trial", json!({"user_id": "x", "delta": 5})).await;
    assert_eq!(
        (status, wrong["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("wrong_value_field")),
        "{wrong}"
    );
    let (status, answer) = post(&app, "weekly", json!({"user_id": "dave", "delta": 30})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert!(env.wait_drained(Duration::from_secs(10)).await);

    // The time trial: lowest first; equal times by who set them first (alice before carol,
    // bob before erin); dense and competition ranks; percentile = share at or below.
    let top = both(&app, "/v1/boards/trial/top?rank_mode=competition").await;
    let order: Vec<(String, u64, i64)> = lines(&top)
        .into_iter()
        .map(|(u, r, s, _, _)| (u, r, s))
        .collect();
    let want = [
        ("dave", 1, 47_000),
        ("bob", 2, 48_000),
        ("erin", 2, 48_000),
        ("alice", 4, 50_000),
        ("carol", 4, 50_000),
    ]
    .map(|(u, r, s)| (u.to_owned(), r, s));
    assert_eq!(order, want, "{top}");
    assert_eq!(top["total"], json!(5));
    let percentiles: Vec<f64> = lines(&top).iter().map(|l| l.3).collect();
    assert_eq!(percentiles, [100.0, 80.0, 80.0, 40.0, 40.0], "{top}");
    // Metadata is the best run's (the slower run's "green" did not count).
    assert_eq!(lines(&top)[3].4, red, "{top}");

    let dense = both(&app, "/v1/boards/trial/top?rank_mode=dense").await;
    let ranks: Vec<u64> = lines(&dense).iter().map(|l| l.1).collect();
    assert_eq!(ranks, [1, 2, 2, 3, 3], "{dense}");
    let ordinal = both(&app, "/v1/boards/trial/top").await;
    let ranks: Vec<u64> = lines(&ordinal).iter().map(|l| l.1).collect();
    assert_eq!(ranks, [1, 2, 3, 4, 5], "{ordinal}");

    let around = both(
        &app,
        "/v1/boards/trial/users/erin/around?radius=1&rank_mode=dense",
    )
    .await;
    let users: Vec<String> = lines(&around).into_iter().map(|l| l.0).collect();
    assert_eq!(users, ["bob", "erin", "alice"], "{around}");

    let friends = both(
        &app,
        "/v1/boards/trial/users?ids=carol,dave,nobody&rank_mode=competition",
    )
    .await;
    let found: Vec<(String, u64)> = lines(&friends).into_iter().map(|l| (l.0, l.1)).collect();
    assert_eq!(
        found,
        [("dave".to_owned(), 1), ("carol".to_owned(), 4)],
        "{friends}"
    );

    // Cursor pages walk the same order on both paths.
    let first = both(&app, "/v1/boards/trial/top?limit=2").await;
    let next = first["next"].as_str().expect("a next cursor").to_owned();
    let second = both(&app, &format!("/v1/boards/trial/top?limit=2&after={next}")).await;
    let users: Vec<String> = lines(&second).into_iter().map(|l| l.0).collect();
    assert_eq!(users, ["erin", "alice"], "{second}");

    // The weekly board: sums, highest first, ties by user id (descending bytes, as before).
    let weekly = both(&app, "/v1/boards/weekly/top?rank_mode=dense").await;
    let order: Vec<(String, u64, i64)> = lines(&weekly)
        .into_iter()
        .map(|(u, r, s, _, _)| (u, r, s))
        .collect();
    let want = [
        ("bob", 1, 120),
        ("dave", 2, 30),
        ("carol", 2, 30),
        ("alice", 2, 30),
    ]
    .map(|(u, r, s)| (u.to_owned(), r, s));
    assert_eq!(order, want, "{weekly}");

    cancel.cancel();
    running.await.expect("projector stops");
}
