//! `lbctl migrate` and `lbctl status` as an operator runs them.

mod board;
mod columns;
mod competitions;
mod players;
mod webhooks;
use std::time::Duration;

use ledgerboard_core::config::SharedOnly;
use ledgerboard_testkit::{Process, TestDb};

use crate::common;

const LBCTL: &str = env!("CARGO_BIN_EXE_lbctl");

fn lbctl(db: &TestDb, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(LBCTL)
        .args(args)
        .env("LEDGERBOARD__DATABASE__URL", &db.url)
        .output()
        .expect("run lbctl");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn migrate_is_idempotent_and_status_reports_the_outbox() {
    let db = TestDb::create().await;

    let (ok, out, err) = lbctl(&db, &["status"]);
    assert!(ok, "{err}");
    assert!(out.contains("none applied"), "{out}");

    let (ok, out, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    assert!(out.contains("applied V1__initial_schema"), "{out}");
    let (ok, out, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    assert!(out.contains("up to date"), "{out}");

    let (ok, out, err) = lbctl(&db, &["status", "--json"]);
    assert!(ok, "{err}");
    let status: serde_json::Value = serde_json::from_str(&out).expect("JSON status");
    assert_eq!(status["outbox"]["pending"], serde_json::json!(0));
    assert_eq!(
        status["outbox"]["oldest_pending_age_ms"],
        serde_json::Value::Null
    );

    // Two pending rows, the older one planted 5 s in the past.
    let client = db.client().await;
    client
        .batch_execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version) VALUES
               ('11111111-1111-4111-8111-111111111111', 'b', 'u', 1, 1, 1),
               ('22222222-2222-4222-8222-222222222222', 'b', 'u', 1, 2, 2);
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version, created_at) VALUES
               ('11111111-1111-4111-8111-111111111111', 'b', 'u', 1, 1, now() - interval '5 seconds'),
               ('22222222-2222-4222-8222-222222222222', 'b', 'u', 2, 2, now());",
        )
        .await
        .expect("plant outbox rows");
    let (ok, out, err) = lbctl(&db, &["status", "--json"]);
    assert!(ok, "{err}");
    let status: serde_json::Value = serde_json::from_str(&out).expect("JSON status");
    assert_eq!(status["schema"]["applied"], status["schema"]["known"]);
    assert_eq!(status["schema"]["ahead"], serde_json::json!(0));
    assert_eq!(status["outbox"]["pending"], serde_json::json!(2));
    let age = status["outbox"]["oldest_pending_age_ms"]
        .as_i64()
        .expect("an age");
    assert!((5_000..60_000).contains(&age), "{age}");

    let (ok, out, _) = lbctl(&db, &["status"]);
    assert!(ok);
    assert!(out.contains("2 pending, 0 parked"), "{out}");
}

#[test]
fn unreachable_database_fails_with_a_clear_message() {
    let port = ledgerboard_testkit::closed_port();
    let mut p = Process::start(
        LBCTL,
        &["status"],
        &[
            (
                "LEDGERBOARD__DATABASE__URL",
                &format!("postgres://postgres:s3cret@127.0.0.1:{port}/x"),
            ),
            ("LEDGERBOARD__DATABASE__CONNECT_TIMEOUT_MS", "500"),
        ],
    );
    let status = p
        .wait_for_exit(Duration::from_secs(10))
        .expect("lbctl gives up in time");
    assert!(!status.success());
    let err = p.stderr();
    assert!(err.contains("unavailable"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

#[tokio::test]
async fn parked_rows_are_listed_and_requeued() {
    let db = TestDb::create().await;
    let (ok, _, err) = lbctl(&db, &["migrate"]);
    assert!(ok, "{err}");
    let client = db.client().await;
    client
        .batch_execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version) VALUES
               ('11111111-1111-4111-8111-111111111111', 'a', 'u', 1, 1, 1),
               ('22222222-2222-4222-8222-222222222222', 'b', 'u', 1, 1, 1),
               ('33333333-3333-4333-8333-333333333333', 'b', 'v', 1, 1, 1);
             INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version,
                                             attempts, last_error, parked_at)
             SELECT event_id, board_id, user_id, 1, 1, 10, 'LBWRONGTYPE planted', now() FROM score_events;",
        )
        .await
        .expect("plant parked rows");

    let (ok, out, err) = lbctl(&db, &["parked", "list", "--json"]);
    assert!(ok, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).expect("JSON list");
    assert_eq!(rows.as_array().map(Vec::len), Some(3));
    assert_eq!(
        rows[0]["last_error"],
        serde_json::json!("LBWRONGTYPE planted")
    );

    let (ok, _, err) = lbctl(&db, &["parked", "requeue"]);
    assert!(!ok, "a requeue must say which rows");
    assert!(err.contains("--all"), "{err}");

    let (ok, out, err) = lbctl(&db, &["parked", "requeue", "--board", "b"]);
    assert!(ok, "{err}");
    assert!(out.contains("requeued 2"), "{out}");
    let (ok, out, _) = lbctl(&db, &["status"]);
    assert!(ok);
    assert!(out.contains("2 pending, 1 parked"), "{out}");
    let (ok, out, err) = lbctl(&db, &["parked", "requeue", "--all"]);
    assert!(ok, "{err}");
    assert!(out.contains("requeued 1"), "{out}");
    let attempts: i64 = client
        .query_one("SELECT sum(attempts) FROM leaderboard_outbox", &[])
        .await
        .expect("attempts")
        .get(0);
    assert_eq!(attempts, 0, "requeued rows start over");
}

#[tokio::test]
async fn rebuild_builds_a_board_from_the_source() {
    let env = ledgerboard_testkit::TestEnv::<SharedOnly>::new(|_| {}).await;
    env.seed("weekly", 300, 900).await;
    let output = std::process::Command::new(LBCTL)
        .args(["rebuild", "--board", "weekly", "--verify"])
        .env(
            "LEDGERBOARD__DATABASE__URL",
            env.settings.database.url.as_str(),
        )
        .env("LEDGERBOARD__REDIS__URL", env.settings.redis.url.as_str())
        .env(
            "LEDGERBOARD__REDIS__NAMESPACE",
            &env.settings.redis.namespace,
        )
        .output()
        .expect("run lbctl rebuild");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    assert_eq!(report["rows"], 300);
    // --verify: the pass after the switch found every member current.
    assert_eq!(report["verify"]["totals"]["current"], 300);
    assert_eq!(env.projection("weekly").await, env.source("weekly").await);

    let bad = std::process::Command::new(LBCTL)
        .args(["rebuild", "--board", "no{braces}"])
        .env(
            "LEDGERBOARD__DATABASE__URL",
            env.settings.database.url.as_str(),
        )
        .output()
        .expect("run lbctl rebuild");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--board"));
}
