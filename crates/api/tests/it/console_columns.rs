//! The console and boards with columns (issue 37): its declare form takes columns and feeds,
//! and a board's page shows them, and each entry's tuple from PostgreSQL and from Redis.

use crate::common;
use crate::console::{FORM, assert_no_leak, declare, page, request, text_of};

use axum::http::StatusCode;
use common::{TestEnv, app_with, send, send_with_headers};
use ledgerboard_testkit::TEST_TOKEN;
use serde_json::json;

#[tokio::test]
async fn the_console_declares_and_shows_columns_feeds_and_tuples() {
    let env = TestEnv::new(|_| {}).await;
    let app = app_with(&env.settings);
    declare(
        &app,
        "race-daily",
        json!({"operator": "best", "reset": "daily", "columns": [
            {"name": "laps", "order": "descending", "min": 0, "max": 100},
            {"name": "time_ms", "order": "ascending", "min": 1, "max": 3600000}]}),
    )
    .await;
    // The form, as a signed-in operator sends it: its CSRF token from the page.
    let (status, boards) = page(&app, "/console").await;
    assert_eq!(status, StatusCode::OK, "{boards}");
    let csrf = boards
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token on the page");
    let form = format!(
        "csrf={csrf}&board=race&operator=best&sort=descending&tie_break=earliest&reset=never\
         &time_zone=UTC&columns=laps%3Adesc%3A0%3A100%2C+time_ms%3Aasc%3A1%3A3600000\
         &feeds=race-daily"
    );
    let (status, _, answer) = send_with_headers(
        &app,
        request("POST", "/console", Some(TEST_TOKEN), Some((FORM, &form))),
    )
    .await;
    assert!(
        status.is_redirection() || status.is_success(),
        "{status}: {answer}"
    );
    assert_no_leak("the declare form", &answer);
    // A malformed column is the console's own error, not a library's.
    let bad = form
        .replace("laps%3Adesc", "laps%3Aup")
        .replace("board=race", "board=race2");
    let (status, _, answer) = send_with_headers(
        &app,
        request("POST", "/console", Some(TEST_TOKEN), Some((FORM, &bad))),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(answer.contains("invalid_columns"), "{answer}");
    assert_no_leak("a malformed column", &answer);

    let body = json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": "ann",
                      "score": [12, 93120]});
    let (status, answer) = send(&app, common::command("race", body.to_string())).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["linked"][0]["board"], "race-daily", "{answer}");
    common::seal(&env, "race").await;
    let (status, board) = page(&app, "/console/boards/race?user=ann").await;
    assert_eq!(status, StatusCode::OK, "{board}");
    assert!(
        board.contains("columns laps descending (0..100) then time_ms ascending (1..3600000)")
            && board.contains("feeds race-daily"),
        "{board}"
    );
    assert_eq!(
        text_of(&board, "user-source"),
        "rank 1 with 12 · 93120 (version 1)"
    );
    assert!(
        text_of(&board, "user-projection").starts_with("rank 1 with 12 · 93120 (version 1)"),
        "{board}"
    );
    assert_eq!(text_of(&board, "user-verdict"), "current", "{board}");
}
