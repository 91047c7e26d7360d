//! Attempts and the review of suspicious scores (issue 38, items 3 and 4): every refusal with
//! its own code and nothing written (no score event, entry or outbox row in PostgreSQL, the
//! attempt left as it was), concurrent starts past the cap, and a held score hidden from both
//! read paths before and after a rebuild until an operator approves it. The router in process,
//! on a database and a Redis namespace of the test's own.

use axum::http::StatusCode;
use ledgerboard_core::auth::player;
use ledgerboard_testkit::TEST_TOKEN;
use serde_json::{Value, json};

use crate::common;
use crate::players::{Players, SECRET, claims, code, mint};

fn token(user: &str) -> String {
    mint("k1", SECRET, &claims(user, &["*"], player::now_s() + 600))
}

fn event() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Players {
    async fn start(&self, token: &str, board: &str, request: &str) -> (StatusCode, Value) {
        self.request(
            token,
            "POST",
            &format!("/v1/boards/{board}/attempts"),
            Some(json!({ "request_id": request })),
        )
        .await
    }

    async fn score(&self, token: &str, board: &str, body: Value) -> (StatusCode, Value) {
        self.request(
            token,
            "POST",
            &format!("/v1/boards/{board}/scores"),
            Some(body),
        )
        .await
    }

    async fn sql(&self, statement: &str) -> u64 {
        self.env
            .db
            .client()
            .await
            .execute(statement, &[])
            .await
            .expect(statement)
    }
}

/// The attempts of a board without review rules are judged and used by the command's own
/// statement (`sql/command/head.sql`); those of a board with review rules, by the guarded
/// transaction (`sql/attempt_use.sql`): the same codes and effects from both.
#[tokio::test]
async fn attempts_are_single_use_bound_to_their_player_and_refused_with_their_own_codes() {
    let attempts = json!({"min_duration_ms": 60000, "max_per_period": 3, "ttl_s": 600});
    for definition in [
        json!({"operator": "best", "write_policy": "player", "attempts": attempts}),
        json!({"operator": "best", "write_policy": "player", "attempts": attempts,
               "review": {"ceiling": [1000000]}}),
    ] {
        attempts_on(definition).await;
    }
}

async fn attempts_on(definition: Value) {
    let p = Players::new(|_| {}).await;
    p.define("runs", definition.clone()).await;
    p.define(
        "plain",
        json!({"operator": "best", "write_policy": "player"}),
    )
    .await;
    let (alice, bob) = (token("alice"), token("bob"));

    // A start, and its repeat: the same attempt.
    let request = event();
    let (status, first) = p.start(&alice, "runs", &request).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, again) = p.start(&alice, "runs", &request).await;
    assert_eq!(
        (status, &again["attempt_id"]),
        (StatusCode::OK, &first["attempt_id"])
    );
    assert_eq!(again["duplicate"], true);
    let attempt = first["attempt_id"].as_str().expect("attempt id").to_owned();
    let (status, body) = p.start(&alice, "plain", &event()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "attempts_not_used")
    );

    let score = |user: &str, attempt: Option<&str>, e: &str| json!({"event_id": e, "user_id": user, "score": 42, "attempt_id": attempt});
    let refused = [
        (
            "no attempt",
            &alice,
            score("alice", None, &event()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "attempt_required",
        ),
        (
            "a malformed one",
            &alice,
            score("alice", Some("nope"), &event()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_attempt_id",
        ),
        (
            "an unknown one",
            &alice,
            score("alice", Some(&event()), &event()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "attempt_unknown",
        ),
        (
            "another player's",
            &bob,
            score("bob", Some(&attempt), &event()),
            StatusCode::FORBIDDEN,
            "attempt_foreign",
        ),
        (
            "too fast",
            &alice,
            score("alice", Some(&attempt), &event()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "attempt_too_fast",
        ),
    ];
    for (what, token, body, status, expected) in refused {
        let (got, answer) = p.score(token, "runs", body).await;
        assert_eq!(
            (got, code(&answer)),
            (status, expected),
            "{definition}: {what}: {answer}"
        );
    }
    assert_eq!(p.written().await, (0, 0, 0), "a refusal wrote something");

    // Its minimum duration passed (the start moved back, rather than a test that waits).
    p.sql("UPDATE attempts SET started_at = started_at - interval '61 seconds'")
        .await;
    let used = event();
    let (status, body) = p
        .score(&alice, "runs", score("alice", Some(&attempt), &used))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = p
        .score(&alice, "runs", score("alice", Some(&attempt), &used))
        .await;
    assert_eq!(
        (status, &body["duplicate"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let (status, body) = p
        .score(&alice, "runs", score("alice", Some(&attempt), &event()))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "attempt_used"),
        "{body}"
    );

    // Expired: its ttl passed.
    let (_, second) = p.start(&alice, "runs", &event()).await;
    let second = second["attempt_id"]
        .as_str()
        .expect("attempt id")
        .to_owned();
    p.sql("UPDATE attempts SET started_at = now() - interval '1 hour', expires_at = now() - interval '1 second' WHERE used_by IS NULL").await;
    let (status, body) = p
        .score(&alice, "runs", score("alice", Some(&second), &event()))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "attempt_expired"),
        "{body}"
    );
    assert_eq!(
        p.written().await,
        (1, 1, 1),
        "only the one score is written"
    );

    // The cap per period, decided in one statement: of 8 concurrent starts by one player, 3.
    let carol = token("carol");
    let starts = (0..8).map(|_| {
        let (p, carol) = (&p, &carol);
        async move { p.start(carol, "runs", &event()).await }
    });
    let answers = futures_util::future::join_all(starts).await;
    let created = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .count();
    let capped = answers
        .iter()
        .filter(|(s, b)| *s == StatusCode::CONFLICT && code(b) == "attempt_limit")
        .count();
    assert_eq!((created, capped), (3, 5), "{answers:?}");
}

#[tokio::test]
async fn a_suspicious_score_is_held_hidden_everywhere_and_shown_once_approved() {
    let p = Players::new(|_| {}).await;
    p.define(
        "arena",
        json!({"operator": "best", "write_policy": "player",
               "review": {"ceiling": [1000], "max_jump": 300}}),
    )
    .await;
    let alice = token("alice");
    let post = |e: &str, score: i64| json!({"event_id": e, "user_id": "alice", "score": score});
    let (status, body) = p.score(&alice, "arena", post(&event(), 100)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Past the ceiling: answered as applied, written nowhere but the queue.
    let held = event();
    let (status, told) = p.score(&alice, "arena", post(&held, 5000)).await;
    assert_eq!(
        (status, &told["score"], &told["improved"]),
        (StatusCode::CREATED, &json!(5000), &json!(true)),
        "{told}"
    );
    let (status, again) = p.score(&alice, "arena", post(&held, 5000)).await;
    assert_eq!(
        (status, &again["score"], &again["duplicate"]),
        (StatusCode::OK, &json!(5000), &json!(true))
    );
    let (status, body) = p.score(&alice, "arena", post(&held, 6000)).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "event_id_reused"),
        "{body}"
    );
    // A jump: 100 to 900.
    let jumped = event();
    let (status, _) = p.score(&alice, "arena", post(&jumped, 900)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        p.written().await,
        (1, 1, 1),
        "a held score was written beside the queue"
    );

    // Hidden from PostgreSQL's read before any rebuild (no projector runs here: the held score
    // wrote no outbox row for one to carry), and from both read paths after a rebuild.
    let (status, strong) =
        crate::common::get(&p.app, "/v1/boards/arena/top?consistency=strong").await;
    assert_eq!(status, StatusCode::OK, "{strong}");
    assert_eq!(common::entries(&strong), vec![("alice".to_owned(), 100)]);
    let read = |p: &Players| {
        let app = p.app.clone();
        async move { common::both(&app, "/v1/boards/arena/top").await }
    };
    p.in_redis(&["arena"]).await;
    let top = read(&p).await;
    assert_eq!(common::entries(&top), vec![("alice".to_owned(), 100)]);

    // The queue: a player may not see it; an operator sees both, oldest first.
    let (status, body) = p.request(&alice, "GET", "/v1/reviews", None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "player_scope"),
        "{body}"
    );
    let (status, queue) = p.request(TEST_TOKEN, "GET", "/v1/reviews", None).await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    let rules: Vec<&str> = queue["held"]
        .as_array()
        .expect("held")
        .iter()
        .map(|h| h["rule"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(rules, ["ceiling", "jump"], "{queue}");

    let decide = |e: &str, what: &str| {
        let uri = format!("/v1/reviews/{e}/{what}");
        let p = &p;
        async move {
            p.request(
                TEST_TOKEN,
                "POST",
                &uri,
                Some(json!({"reason": "checked the replay"})),
            )
            .await
        }
    };
    // A reason PostgreSQL's text cannot hold (a NUL) is the reason's error, not a 500
    // (schemathesis found it).
    let (status, body) = p
        .request(
            TEST_TOKEN,
            "POST",
            &format!("/v1/reviews/{jumped}/reject"),
            Some(json!({"reason": "\u{0}x"})),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_reason"),
        "{body}"
    );
    let (status, body) = decide(&jumped, "reject").await;
    assert_eq!(
        (status, &body["state"]),
        (StatusCode::OK, &json!("rejected")),
        "{body}"
    );
    let (status, body) = decide(&jumped, "approve").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "review_decided"),
        "{body}"
    );
    let (status, body) = decide(&event(), "approve").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::NOT_FOUND, "review_unknown"),
        "{body}"
    );

    let (status, body) = decide(&held, "approve").await;
    assert_eq!(
        (status, &body["outcome"]["score"]),
        (StatusCode::OK, &json!(5000)),
        "{body}"
    );
    let (status, body) = decide(&held, "approve").await;
    assert_eq!(
        (status, &body["outcome"]["duplicate"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    p.in_redis(&["arena"]).await;
    let top = read(&p).await;
    assert_eq!(common::entries(&top), vec![("alice".to_owned(), 5000)]);
    let (_, queue) = p.request(TEST_TOKEN, "GET", "/v1/reviews", None).await;
    assert_eq!(queue["held"], json!([]), "{queue}");
    let (_, rejected) = p
        .request(TEST_TOKEN, "GET", "/v1/reviews?state=rejected", None)
        .await;
    assert_eq!(
        rejected["held"][0]["reason"], "checked the replay",
        "{rejected}"
    );
}

#[tokio::test]
async fn the_consoles_review_queue_shows_a_held_score_and_decides_it() {
    use crate::console::{FORM, assert_no_leak, page, request};
    let p = Players::new(|_| {}).await;
    p.define(
        "arena",
        json!({"operator": "latest", "write_policy": "player", "review": {"max_per_minute": 1}}),
    )
    .await;
    let alice = token("alice");
    let post = |e: &str, score: i64| json!({"event_id": e, "user_id": "alice", "score": score});
    let (status, _) = p.score(&alice, "arena", post(&event(), 10)).await;
    assert_eq!(status, StatusCode::CREATED);
    // The second command of the minute: past max_per_minute, held.
    let held = event();
    let (status, _) = p.score(&alice, "arena", post(&held, 20)).await;
    assert_eq!(status, StatusCode::CREATED);

    let (status, queue) = page(&p.app, "/console/reviews").await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    assert!(
        queue.contains(&format!("data-event=\"{held}\"")) && queue.contains("rate"),
        "{queue}"
    );
    let (_, board) = page(&p.app, "/console/boards/arena").await;
    assert!(
        board.contains("review {&#34;max_per_minute&#34;:1}"),
        "{board}"
    );
    let csrf = queue
        .split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token on the page");
    let form = format!("csrf={csrf}&event={held}&decision=reject&reason=bot+pattern");
    let (status, answer) = crate::common::send_text(
        &p.app,
        request(
            "POST",
            "/console/reviews",
            Some(TEST_TOKEN),
            Some((FORM, &form)),
        ),
    )
    .await;
    assert!(status.is_redirection(), "{status}: {answer}");
    let (_, queue) = page(&p.app, "/console/reviews").await;
    assert!(queue.contains("No score waits for review."), "{queue}");
    assert!(queue.contains("bot pattern"), "{queue}");
    // A decision taken twice: the console's page with the api's code, no library wording.
    let (status, answer) = crate::common::send_text(
        &p.app,
        request(
            "POST",
            "/console/reviews",
            Some(TEST_TOKEN),
            Some((FORM, &form)),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(answer.contains("review_decided"), "{answer}");
    assert_no_leak("a decision taken twice", &answer);
}
