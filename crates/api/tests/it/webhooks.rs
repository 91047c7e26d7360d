//! Webhook subscriptions through the api: admin only, created with the secret shown once,
//! http:// refused unless `api.webhook_allow_http` and a non-public address unless
//! `api.webhook_allow_private_addresses`, read, changed, listed, their parked deliveries listed
//! and requeued, deleted; every refusal with its stable code.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{TestApi, send, test_api};
use ledgerboard_core::auth::hash_token;
use serde_json::{Value, json};

const READER: &str = "reader-token";
const ADMIN: &str = "admin-token";

async fn api(allow_http: bool, allow_private_addresses: bool) -> TestApi {
    let tokens = format!(
        "reader={}@read;ops={}@admin",
        hash_token(READER),
        hash_token(ADMIN)
    );
    test_api(tokens, |s| {
        s.api.webhook_allow_http = allow_http;
        s.api.webhook_allow_private_addresses = allow_private_addresses;
    })
    .await
}

async fn call(
    api: &TestApi,
    method: &str,
    uri: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .expect("request");
    if method == "DELETE" {
        let (status, text) = common::send_text(&api.app, request).await;
        return (status, serde_json::from_str(&text).unwrap_or(Value::Null));
    }
    send(&api.app, request).await
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn webhooks_are_admin_only_created_read_changed_requeued_and_deleted() {
    let api = api(false, false).await;
    let hook = json!({"url": "https://example.com/hooks", "kinds": ["score.accepted"], "lanes": 4});
    let (status, body) = call(&api, "POST", "/v1/webhooks", READER, Some(hook.clone())).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden"),
        "{body}"
    );
    for (bad, expected) in [
        (
            json!({"url": "http://example.com/h"}),
            "webhook_http_refused",
        ),
        (json!({"url": "ftp://example.com/h"}), "invalid_url"),
        (
            json!({"url": "https://example.com/h", "kinds": ["nope"]}),
            "invalid_kind",
        ),
        (
            json!({"url": "https://example.com/h", "lanes": 65}),
            "invalid_lanes",
        ),
        (
            json!({"url": "https://example.com/h", "boards": ["a b"]}),
            "invalid_boards",
        ),
        (
            json!({"url": "https://example.com/h", "secret": "short"}),
            "invalid_secret",
        ),
    ] {
        let (status, body) = call(&api, "POST", "/v1/webhooks", ADMIN, Some(bad.clone())).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, expected),
            "{bad}: {body}"
        );
    }
    let (status, body) = call(&api, "POST", "/v1/webhooks", ADMIN, Some(json!({"url": 1}))).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "malformed_body")
    );

    let (status, created) = call(&api, "POST", "/v1/webhooks", ADMIN, Some(hook)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let secret = created["secret"].as_str().expect("secret").to_owned();
    assert_eq!(created["lanes"], 4);
    assert_eq!(created["circuit"], "closed");

    let (status, detail) = call(&api, "GET", &format!("/v1/webhooks/{id}"), ADMIN, None).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["lane_status"].as_array().map(Vec::len), Some(4));
    assert!(!detail.to_string().contains(&secret), "never shown again");
    let (status, page) = call(&api, "GET", "/v1/webhooks?limit=1", ADMIN, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["webhooks"][0]["id"], id.as_str());
    assert_eq!(
        page["next"],
        id.as_str(),
        "a full page says where the next starts"
    );

    let (status, changed) = call(
        &api,
        "PATCH",
        &format!("/v1/webhooks/{id}"),
        ADMIN,
        Some(json!({"enabled": false, "boards": ["b1"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(
        (changed["enabled"].clone(), changed["boards"].clone()),
        (json!(false), json!(["b1"]))
    );
    let (status, body) = call(
        &api,
        "PATCH",
        &format!("/v1/webhooks/{id}"),
        ADMIN,
        Some(json!({"url": "http://example.com/h"})),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "webhook_http_refused")
    );

    // A parked delivery, as the dispatcher parks one.
    api.db
        .client()
        .await
        .execute(
            "INSERT INTO webhook_parked (subscription_id, position, event_id, kind, board_id, body, attempts, last_error)
             VALUES ($1, 9, gen_random_uuid(), 'score.accepted', 'b1', '{}', 12, 'answered 500')",
            &[&id],
        )
        .await
        .expect("park");
    let (status, parked) = call(
        &api,
        "GET",
        &format!("/v1/webhooks/{id}/parked"),
        ADMIN,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{parked}");
    assert_eq!(parked["parked"][0]["position"], 9);
    assert_eq!(parked["parked"][0]["last_error"], "answered 500");
    let (status, requeued) = call(
        &api,
        "POST",
        &format!("/v1/webhooks/{id}/parked/requeue"),
        ADMIN,
        Some(json!({"positions": [9]})),
    )
    .await;
    assert_eq!(
        (status, requeued["requeued"].clone()),
        (StatusCode::OK, json!(1))
    );

    // Nothing is requeued by omission: a body is required (`{}` for all); the page's cursor is
    // a position or a subscription id, never anything else.
    let (status, body) = call(
        &api,
        "POST",
        &format!("/v1/webhooks/{id}/parked/requeue"),
        ADMIN,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call(
        &api,
        "GET",
        &format!("/v1/webhooks/{id}/parked?after=-1"),
        ADMIN,
        None,
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "out_of_range"),
        "{body}"
    );
    let (status, body) = call(&api, "GET", "/v1/webhooks?after=%C2%96%00", ADMIN, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = call(&api, "DELETE", &format!("/v1/webhooks/{id}"), ADMIN, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    for (method, uri) in [
        ("GET", format!("/v1/webhooks/{id}")),
        ("DELETE", format!("/v1/webhooks/{id}")),
        ("GET", format!("/v1/webhooks/{id}/parked")),
        ("POST", format!("/v1/webhooks/{id}/parked/requeue")),
    ] {
        let body = (method == "POST").then(|| json!({}));
        let (status, body) = call(&api, method, &uri, ADMIN, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {body}");
        if method != "DELETE" {
            assert_eq!(code(&body), "webhook_unknown");
        }
    }
}

#[tokio::test]
async fn http_receivers_are_accepted_where_the_setting_allows_them() {
    let api = api(true, true).await;
    let (status, created) = call(
        &api,
        "POST",
        "/v1/webhooks",
        ADMIN,
        Some(json!({"url": "http://127.0.0.1:9000/h", "secret": "0123456789abcdef0123"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["secret"], "0123456789abcdef0123");
}

/// A URL naming a loopback, private or link-local address is refused when it is registered or
/// changed to, with the address and its kind named, unless the setting allows it; a name is
/// left to the dispatcher, which judges what it resolves to when it delivers.
#[tokio::test]
async fn receivers_at_non_public_addresses_are_refused_unless_the_setting_allows_them() {
    let api = api(true, false).await;
    for (url, named) in [
        ("http://127.0.0.1:9000/h", "127.0.0.1 is a loopback address"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a link-local address",
        ),
        (
            "https://[fd00::7]/h",
            "fd00::7 is a private (unique local) address",
        ),
        ("http://localhost:9000/h", "localhost is a loopback address"),
    ] {
        let (status, body) = call(
            &api,
            "POST",
            "/v1/webhooks",
            ADMIN,
            Some(json!({"url": url})),
        )
        .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, "webhook_private_address"),
            "{url}: {body}"
        );
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains(named) && message.contains("api.webhook_allow_private_addresses"),
            "{url}: {message}"
        );
    }
    let (status, listed) = call(&api, "GET", "/v1/webhooks", ADMIN, None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(
        listed["webhooks"],
        json!([]),
        "nothing refused was stored: {listed}"
    );

    // A public one is created, and cannot be moved to a private address afterwards.
    let (status, created) = call(
        &api,
        "POST",
        "/v1/webhooks",
        ADMIN,
        Some(json!({"url": "https://receiver.example/h"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap_or_default();
    let path = format!("/v1/webhooks/{id}");
    let (status, body) = call(
        &api,
        "PATCH",
        &path,
        ADMIN,
        Some(json!({"url": "http://10.0.0.8/h"})),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "webhook_private_address"),
        "{body}"
    );
    let (status, read) = call(&api, "GET", &path, ADMIN, None).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(
        read["url"], "https://receiver.example/h",
        "unchanged: {read}"
    );
}
