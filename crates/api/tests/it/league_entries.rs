//! Entries to a competition with cohorts by player tokens (issue 39): anything but the
//! player's own valid token is refused with its own code and changes neither store; the
//! player's own entry replayed answers the same seat.

use axum::http::StatusCode;
use ledgerboard_core::model::BoardId;
use ledgerboard_testkit::TEST_TOKEN;
use serde_json::{Value, json};

use crate::competitions::at;
use crate::leagues::wait_open;
use crate::players::{Players, code};

/// A player's entry with anything but its own valid token is refused with its own code, and
/// neither store changes: no entry, no run, no cohort in PostgreSQL, no cohort's keys in Redis.
#[tokio::test(flavor = "multi_thread")]
async fn forged_expired_and_foreign_entries_are_refused_and_change_nothing() {
    use crate::players::{FORGED, SECRET, claims, mint};
    use ledgerboard_core::auth::player::now_s;
    let p = Players::new(|_| {}).await;
    p.define("arena-cup", json!({"operator": "best", "reset": "manual"}))
        .await;
    let (status, body) = p
        .declare_competition("arena-cup", json!({"ends_at": at(3600), "cohort_size": 2}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    wait_open(&p, "arena-cup").await;
    let now = now_s();
    let token = |secret: &str, user: &str, boards: &[&str], exp: u64| {
        mint("k1", secret, &claims(user, boards, exp))
    };
    let enter = |bearer: String, body: Value| {
        let p = &p;
        async move {
            p.request(
                &bearer,
                "POST",
                "/v1/competitions/arena-cup/entries",
                Some(body),
            )
            .await
        }
    };
    for (what, bearer, body, status, expected) in [
        (
            "a forged signature",
            token(FORGED, "alice", &["arena-cup"], now + 600),
            json!({}),
            StatusCode::UNAUTHORIZED,
            "token_signature",
        ),
        (
            "an expired token",
            token(SECRET, "alice", &["arena-cup"], now - 120),
            json!({}),
            StatusCode::UNAUTHORIZED,
            "token_expired",
        ),
        (
            "another player's entry",
            token(SECRET, "alice", &["arena-cup"], now + 600),
            json!({"user_id": "bob"}),
            StatusCode::FORBIDDEN,
            "player_user",
        ),
        (
            "a token for another board",
            token(SECRET, "alice", &["elsewhere"], now + 600),
            json!({}),
            StatusCode::FORBIDDEN,
            "player_board",
        ),
    ] {
        let (got, answer) = enter(bearer, body).await;
        assert_eq!((got, code(&answer)), (status, expected), "{what}: {answer}");
    }
    let client = p.env.db.client().await;
    for table in [
        "competition_entries",
        "competition_runs",
        "competition_cohorts",
    ] {
        let n: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 0, "{table}");
    }
    // The cohort the first entry would have opened: no seal, no keys.
    let (_, c) = p.get(TEST_TOKEN, "/v1/competitions/arena-cup").await;
    let run = c["run"].as_str().expect("the run").to_owned();
    let cohort = BoardId::parse("arena-cup")
        .expect("id")
        .in_cohort(&run, 1)
        .expect("cohort");
    let store = p.env.store();
    let mut redis = store.connection().await.expect("redis");
    let keys = store.keys();
    let present: i64 = redis::cmd("EXISTS")
        .arg(keys.meta(&cohort))
        .arg(keys.scores(&cohort))
        .arg(keys.versions(&cohort))
        .query_async(&mut redis)
        .await
        .expect("exists");
    assert_eq!(present, 0, "{cohort}");
    // The player's own entry, replayed: one entry, the same seat and cohort.
    let own = token(SECRET, "alice", &["arena-cup"], now + 600);
    let (first, one) = enter(own.clone(), json!({})).await;
    let (again, two) = enter(own, json!({})).await;
    assert_eq!(
        (first, again),
        (StatusCode::CREATED, StatusCode::OK),
        "{one} {two}"
    );
    assert_eq!(
        (&one["seat"], &one["cohort"]),
        (&two["seat"], &two["cohort"])
    );
}
