//! Board definitions through the api: who may declare and read them, create / show / list,
//! the refusal to change the rule of a board with entries, bounds errors, an idempotent PUT,
//! and a PUT that the api's own definition cache shows at once.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{Settings, TestApi, send, test_api};
use ledgerboard_api::settings::ReadAccess;
use ledgerboard_core::auth::hash_token;
use serde_json::{Value, json};

const WRITER: &str = "writer-token";
const READER: &str = "reader-token";
const ADMIN: &str = "admin-token";

async fn api(tweak: impl FnOnce(&mut Settings)) -> TestApi {
    let tokens = format!(
        "game={}@write:*;reader={}@read;ops={}@admin",
        hash_token(WRITER),
        hash_token(READER),
        hash_token(ADMIN)
    );
    test_api(tokens, tweak).await
}

async fn put(api: &TestApi, board: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut request = Request::put(format!("/v1/boards/{board}"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    send(
        &api.app,
        request.body(Body::from(body.to_string())).expect("request"),
    )
    .await
}

async fn get(api: &TestApi, uri: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut request = Request::get(uri);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    send(&api.app, request.body(Body::empty()).expect("request")).await
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

async fn declared(api: &TestApi) -> i64 {
    api.db
        .client()
        .await
        .query_one("SELECT count(*) FROM board_definitions", &[])
        .await
        .expect("count")
        .get(0)
}

#[tokio::test]
async fn only_admin_tokens_declare_and_reads_follow_auth_reads() {
    let api = api(|s| s.auth.reads = ReadAccess::Token).await;
    let body = json!({"operator": "best"});
    let (status, answer) = put(&api, "lap", None, body.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{answer}");
    let (status, answer) = put(&api, "lap", Some(WRITER), body.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let (status, answer) = put(&api, "lap", Some(READER), body.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(declared(&api).await, 0, "refused PUTs write nothing");
    let (status, answer) = put(&api, "lap", Some(ADMIN), body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");

    for uri in ["/v1/boards/lap", "/v1/boards"] {
        let (status, answer) = get(&api, uri, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}: {answer}");
        let (status, answer) = get(&api, uri, Some(READER)).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {answer}");
    }
}

#[tokio::test]
async fn boards_are_declared_shown_listed_and_put_again_harmlessly() {
    let api = api(|_| {}).await;
    // Undeclared: the implicit definition.
    let (status, weekly) = get(&api, "/v1/boards/weekly", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        weekly,
        json!({"board": "weekly", "display_name": "", "operator": "add", "sort": "descending",
               "tie_break": "user_id", "min_score": -9007199254740991i64,
               "max_score": 9007199254740991i64, "min_delta": -1000, "max_delta": 1000,
               "reset": "never", "time_zone": "UTC", "write_policy": "server", "revision": 0, "declared": false})
    );
    // Read once: the api's cache now holds the implicit definition; the PUT must replace it.
    let trial = json!({"operator": "best", "sort": "ascending", "tie_break": "earliest",
                       "min_score": 1, "max_score": 3600000, "display_name": "Time trial"});
    let (status, created) = put(&api, "trial", Some(ADMIN), trial.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["revision"], 1);
    assert!(created.get("min_delta").is_none(), "{created}");
    let (status, again) = put(&api, "trial", Some(ADMIN), trial.clone()).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        again, created,
        "the same PUT changes nothing, not even the revision"
    );

    let (_, shown) = get(&api, "/v1/boards/weekly", None).await;
    assert_eq!(shown["revision"], 0);
    let (status, weekly) = put(
        &api,
        "weekly",
        Some(ADMIN),
        json!({"operator": "add", "max_delta": 50}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{weekly}");
    let (_, shown) = get(&api, "/v1/boards/weekly", None).await;
    assert_eq!(
        shown, weekly,
        "this api's cache forgot the implicit definition at the PUT"
    );
    assert_eq!(
        (shown["declared"].clone(), shown["max_delta"].clone()),
        (json!(true), json!(50))
    );

    // A replacement: what it leaves out takes the defaults again.
    let (status, replaced) = put(&api, "trial", Some(ADMIN), json!({"operator": "latest"})).await;
    assert_eq!(status, StatusCode::OK, "{replaced}");
    assert_eq!(
        (
            replaced["revision"].clone(),
            replaced["sort"].clone(),
            replaced["display_name"].clone()
        ),
        (json!(2), json!("descending"), json!(""))
    );

    put(&api, "alpha", Some(ADMIN), json!({"operator": "add"})).await;
    let (status, page) = get(&api, "/v1/boards?limit=2", None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let boards = |page: &Value| -> Vec<String> {
        page["boards"]
            .as_array()
            .expect("boards")
            .iter()
            .map(|b| b["board"].as_str().expect("board").to_owned())
            .collect()
    };
    assert_eq!(boards(&page), ["alpha", "trial"]);
    assert_eq!(page["next"], "trial");
    let (_, last) = get(&api, "/v1/boards?limit=2&after=trial", None).await;
    assert_eq!(boards(&last), ["weekly"]);
    assert!(last.get("next").is_none(), "{last}");
    for (uri, status, expected) in [
        (
            "/v1/boards?limit=0",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_range",
        ),
        (
            "/v1/boards?limit=1001",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_range",
        ),
        (
            "/v1/boards?after=no%20spaces",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_board_id",
        ),
        (
            "/v1/boards?page=2",
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
    ] {
        let (got, answer) = get(&api, uri, None).await;
        assert_eq!((got, code(&answer)), (status, expected), "{uri}: {answer}");
    }
}

#[tokio::test]
async fn bad_definitions_get_their_own_codes_and_write_nothing() {
    let api = api(|_| {}).await;
    let max = 9007199254740991i64;
    for (body, expected) in [
        (json!({}), "invalid_operator"),
        (json!({"operator": "max"}), "invalid_operator"),
        (json!({"operator": "best", "sort": "up"}), "invalid_sort"),
        (
            json!({"operator": "best", "tie_break": "first"}),
            "invalid_tie_break",
        ),
        (
            json!({"operator": "best", "min_score": -max - 1}),
            "invalid_score_bounds",
        ),
        (
            json!({"operator": "best", "max_score": max + 1}),
            "invalid_score_bounds",
        ),
        (
            json!({"operator": "best", "min_score": 10, "max_score": 9}),
            "invalid_score_bounds",
        ),
        (
            json!({"operator": "best", "max_score": 1.5}),
            "invalid_score_bounds",
        ),
        (
            json!({"operator": "add", "min_delta": 5, "max_delta": 4}),
            "invalid_delta_bounds",
        ),
        (
            json!({"operator": "add", "max_delta": 1e300}),
            "invalid_delta_bounds",
        ),
        (
            json!({"operator": "latest", "max_delta": 10}),
            "delta_bounds_not_allowed",
        ),
        (
            json!({"operator": "add", "display_name": "x".repeat(129)}),
            "invalid_display_name",
        ),
        (
            json!({"operator": "add", "display_name": "a\u{7}b"}),
            "invalid_display_name",
        ),
    ] {
        let (status, answer) = put(&api, "weekly", Some(ADMIN), body.clone()).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::UNPROCESSABLE_ENTITY, expected),
            "{body}: {answer}"
        );
    }
    let (status, answer) = put(
        &api,
        "weekly",
        Some(ADMIN),
        json!({"operator": "add", "sortt": "x"}),
    )
    .await;
    assert_eq!(
        (status, code(&answer)),
        (StatusCode::BAD_REQUEST, "malformed_body"),
        "{answer}"
    );
    let (status, answer) = put(&api, "no{braces}", Some(ADMIN), json!({"operator": "add"})).await;
    assert_eq!(
        (status, code(&answer)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_board_id"),
        "{answer}"
    );
    // The largest exact bounds are accepted.
    let (status, answer) = put(
        &api,
        "wide",
        Some(ADMIN),
        json!({"operator": "best", "min_score": -max, "max_score": max}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(declared(&api).await, 1);
}

#[tokio::test]
async fn the_rule_of_a_board_with_entries_is_refused_and_its_bounds_are_not() {
    let api = api(|_| {}).await;
    // An entry on an undeclared board, through the command path.
    let command = Request::post("/v1/boards/weekly/scores")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {WRITER}"))
        .body(Body::from(
            json!({"event_id": "6f9619ff-8b86-4011-b42d-00c04fc964ff", "user_id": "u", "delta": 3})
                .to_string(),
        ))
        .expect("request");
    let (status, answer) = send(&api.app, command).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");

    for body in [
        json!({"operator": "best"}),
        json!({"operator": "add", "sort": "ascending"}),
        json!({"operator": "add", "tie_break": "earliest"}),
    ] {
        let (status, answer) = put(&api, "weekly", Some(ADMIN), body.clone()).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::CONFLICT, "board_has_entries"),
            "{body}: {answer}"
        );
    }
    assert_eq!(declared(&api).await, 0);
    // Keeping the rule, bounds and a name may be declared.
    let (status, answer) = put(
        &api,
        "weekly",
        Some(ADMIN),
        json!({"operator": "add", "min_delta": 0, "max_delta": 100, "display_name": "Weekly"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) = put(
        &api,
        "weekly",
        Some(ADMIN),
        json!({"operator": "add", "max_delta": 10}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["revision"], 2);
    let (status, answer) = put(&api, "weekly", Some(ADMIN), json!({"operator": "latest"})).await;
    assert_eq!(
        (status, code(&answer)),
        (StatusCode::CONFLICT, "board_has_entries"),
        "{answer}"
    );
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("add, descending"), "{message}");
    let (_, shown) = get(&api, "/v1/boards/weekly", None).await;
    assert_eq!(
        (shown["operator"].clone(), shown["revision"].clone()),
        (json!("add"), json!(2))
    );
}
