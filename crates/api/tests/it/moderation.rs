//! `POST /v1/moderation` through the router: who may moderate, the answers (201 applied, 200
//! a repeat, 409 a reused id, 422 per bad field, each with its stable code), the audit row's
//! actor (the token's name), and a ban seen at once by a strong read (the database path).
//! What the commands do to PostgreSQL and Redis is reconciler/tests/moderation.rs's subject.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{TestApi, send, test_api};
use ledgerboard_core::auth::hash_token;
use serde_json::{Value, json};
use uuid::Uuid;

const WRITER: &str = "writer-token";
const ADMIN: &str = "admin-token";
const SUPPORT: &str = "support-token";

async fn api() -> TestApi {
    let tokens = format!(
        "game={}@write:*;ops={}@admin;support={}@moderate",
        hash_token(WRITER),
        hash_token(ADMIN),
        hash_token(SUPPORT)
    );
    test_api(tokens, |_| {}).await
}

async fn post(api: &TestApi, uri: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut request = Request::post(uri).header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    send(
        &api.app,
        request.body(Body::from(body.to_string())).expect("request"),
    )
    .await
}

async fn moderate(api: &TestApi, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    post(api, "/v1/moderation", token, body).await
}

async fn score(api: &TestApi, user: &str, delta: i64) {
    let body = json!({"event_id": Uuid::new_v4().to_string(), "user_id": user, "delta": delta});
    let (status, answer) = post(api, "/v1/boards/b/scores", Some(WRITER), body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

async fn strong_top(api: &TestApi) -> Vec<(u64, String)> {
    let (status, page) = send(
        &api.app,
        Request::get("/v1/boards/b/top?consistency=strong&rank_mode=competition")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["rank"].as_u64().unwrap_or(0),
                        e["user_id"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn moderation_needs_admin_answers_repeats_and_refuses_a_reused_id() {
    let api = api().await;
    for (user, delta) in [("a", 30), ("x", 50), ("b", 20)] {
        score(&api, user, delta).await;
    }
    let id = Uuid::new_v4().to_string();
    let ban = json!({"action_id": id, "action": "ban", "user_id": "x", "reason": "aimbot"});
    let (status, answer) = moderate(&api, None, ban.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    let (status, answer) = moderate(&api, Some(WRITER), ban.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(
        strong_top(&api).await,
        [(1, "x".into()), (2, "a".into()), (3, "b".into())],
        "refused bans change nothing"
    );

    let (status, first) = moderate(&api, Some(ADMIN), ban.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["duplicate"], false);
    assert_eq!(first["actor"], "ops");
    assert_eq!(first["result"]["entries"], 1);
    assert_eq!(first["result"]["boards"], json!(["b"]));
    // Ranks close up at once on the database path.
    assert_eq!(strong_top(&api).await, [(1, "a".into()), (2, "b".into())]);

    let (status, again) = moderate(&api, Some(ADMIN), ban.clone()).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["at"], first["at"]);
    assert_eq!(again["result"], first["result"]);
    let mut other = ban.clone();
    other["reason"] = json!("wallhack");
    let (status, answer) = moderate(&api, Some(ADMIN), other).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(code(&answer), "action_id_reused");

    // A banned user's score is accepted (201) and stays hidden.
    score(&api, "x", 5).await;
    assert_eq!(strong_top(&api).await, [(1, "a".into()), (2, "b".into())]);
    let unban = json!({"action_id": Uuid::new_v4().to_string(), "action": "unban",
                       "user_id": "x", "reason": "appeal upheld"});
    // A support team's token (`moderate`) may moderate, and nothing an admin alone may do.
    let (status, answer) = moderate(&api, Some(SUPPORT), unban).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["actor"], "support");
    let declare = Request::put("/v1/boards/b")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {SUPPORT}"));
    let (status, answer) = send(
        &api.app,
        declare
            .body(Body::from(json!({"operator": "best"}).to_string()))
            .expect("request"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let body = json!({"event_id": Uuid::new_v4().to_string(), "user_id": "s", "delta": 1});
    let (status, answer) = post(&api, "/v1/boards/b/scores", Some(SUPPORT), body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(
        strong_top(&api).await,
        [(1, "x".into()), (2, "a".into()), (3, "b".into())]
    );

    let remove = json!({"action_id": Uuid::new_v4().to_string(), "action": "remove",
                        "user_id": "a", "board": "b", "reason": "test account"});
    let (status, answer) = moderate(&api, Some(ADMIN), remove).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(strong_top(&api).await, [(1, "x".into()), (2, "b".into())]);

    let audit: Vec<(String, String)> = api
        .db
        .client()
        .await
        .query(
            "SELECT action, actor FROM moderation_actions ORDER BY at",
            &[],
        )
        .await
        .expect("audit")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        audit,
        [
            ("ban".into(), "ops".into()),
            ("unban".into(), "support".into()),
            ("remove".into(), "ops".into())
        ]
    );
}

#[tokio::test]
async fn each_bad_field_has_its_code() {
    let api = api().await;
    let id = Uuid::new_v4().to_string();
    let cases = [
        (
            json!({"action_id": "nil", "action": "ban", "user_id": "x", "reason": "r"}),
            "invalid_action_id",
        ),
        (
            json!({"action_id": id, "action": "mute", "user_id": "x", "reason": "r"}),
            "invalid_action",
        ),
        (
            json!({"action_id": id, "action": "ban", "user_id": "", "reason": "r"}),
            "invalid_user_id",
        ),
        (
            json!({"action_id": id, "action": "remove", "user_id": "x", "reason": "r"}),
            "board_required",
        ),
        (
            json!({"action_id": id, "action": "remove", "user_id": "x", "board": "a b", "reason": "r"}),
            "invalid_board_id",
        ),
        (
            json!({"action_id": id, "action": "erase", "user_id": "x", "board": "b", "reason": "r"}),
            "board_not_allowed",
        ),
        (
            json!({"action_id": id, "action": "ban", "user_id": "x", "period": "20261130T000000Z", "reason": "r"}),
            "period_not_allowed",
        ),
        (
            json!({"action_id": id, "action": "remove", "user_id": "x", "board": "b", "period": "2026", "reason": "r"}),
            "invalid_period",
        ),
        (
            json!({"action_id": id, "action": "ban", "user_id": "x", "reason": " "}),
            "invalid_reason",
        ),
        (
            json!({"action_id": id, "action": "ban", "user_id": "x", "reason": "r".repeat(513)}),
            "invalid_reason",
        ),
    ];
    for (body, expected) in cases {
        let (status, answer) = moderate(&api, Some(ADMIN), body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(code(&answer), expected, "{body}: {answer}");
    }
    let (status, answer) = moderate(
        &api,
        Some(ADMIN),
        json!({"action_id": id, "action": "ban", "user_id": "x"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(code(&answer), "malformed_body");
    let audits: i64 = api
        .db
        .client()
        .await
        .query_one("SELECT count(*) FROM moderation_actions", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(audits, 0, "refused commands write nothing");
}
