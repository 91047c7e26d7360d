//! Tokens beyond one board: `write:*`, several scopes in one entry, and a token's own
//! rate-limit bucket with an honest Retry-After. The router in process, on a database and a
//! Redis namespace of the test's own.

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use common::Settings;
use common::{TestApi, send_with_headers, test_api};
use ledgerboard_api::settings::ReadAccess;
use ledgerboard_core::auth::hash_token;
use serde_json::{Value, json};

const ANY: &str = "writes-every-board";
const MULTI: &str = "writes-two-boards-and-reads";
const EU: &str = "writes-season-eu";

async fn api(tweak: impl FnOnce(&mut Settings)) -> TestApi {
    let tokens = format!(
        "any={}@write:*;multi={} @ write:season-eu, write:season-us ,read;eu={}@write:season-eu",
        hash_token(ANY),
        hash_token(MULTI),
        hash_token(EU)
    );
    test_api(tokens, |s| {
        s.auth.reads = ReadAccess::Token;
        tweak(s);
    })
    .await
}

impl TestApi {
    async fn send_json(&self, request: Request<Body>) -> (StatusCode, HeaderMap, Value) {
        let (status, headers, text) = send_with_headers(&self.app, request).await;
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{status} not JSON ({e}): {text:?}"));
        (status, headers, body)
    }

    async fn post_delta(&self, board: &str, token: &str) -> (StatusCode, HeaderMap, Value) {
        let body = json!({"event_id": uuid::Uuid::new_v4(), "user_id": "u", "delta": 1});
        self.send_json(
            Request::post(format!("/v1/boards/{board}/scores"))
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::from(body.to_string()))
                .expect("request"),
        )
        .await
    }

    async fn read(&self, token: &str) -> StatusCode {
        self.send_json(
            Request::get("/v1/boards/season-eu/top?consistency=strong")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .0
    }
}

#[tokio::test]
async fn write_all_and_multi_scope_tokens_write_where_their_scopes_say() {
    let api = api(|_| {}).await;
    for board in ["season-eu", "season-us", "any-other-board"] {
        let (status, _, body) = api.post_delta(board, ANY).await;
        assert_eq!(status, StatusCode::CREATED, "write:* on {board}: {body}");
    }
    // Several scopes in one entry (spaces around `@` and `,` allowed): each one counts.
    for (board, expected) in [
        ("season-eu", StatusCode::CREATED),
        ("season-us", StatusCode::CREATED),
        ("season-asia", StatusCode::FORBIDDEN),
    ] {
        let (status, _, body) = api.post_delta(board, MULTI).await;
        assert_eq!(status, expected, "multi on {board}: {body}");
    }
    let (status, _, body) = api.post_delta("season-us", EU).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "forbidden", "{body}");
    // With `auth.reads = token` every valid token reads, whatever its write scopes.
    for token in [ANY, MULTI, EU] {
        assert_eq!(api.read(token).await, StatusCode::OK, "{token}");
    }
}

#[tokio::test]
async fn a_token_that_floods_meets_its_own_limit_and_an_honest_retry_after() {
    let api = api(|s| {
        s.api.rate_limit_per_s = 1;
        s.api.rate_limit_burst = 3;
    })
    .await;
    // The burst, then 429 with a Retry-After of whole seconds.
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..6 {
        let (status, headers, body) = api.post_delta("season-eu", ANY).await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(body["error"]["code"], "rate_limited", "{body}");
            retry_after = headers
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            assert!(
                retry_after.is_some(),
                "429 without a Retry-After: {headers:?}"
            );
        }
        statuses.push(status.as_u16());
    }
    assert_eq!(statuses, [201, 201, 201, 429, 429, 429]);
    let retry_after = retry_after.expect("a Retry-After");
    assert!((1..=2).contains(&retry_after), "Retry-After {retry_after}");

    // Other tokens have buckets of their own. The flooding token's bucket is for every call
    // it makes: its reads are limited too.
    let (status, _, body) = api.post_delta("season-eu", EU).await;
    assert_eq!(status, StatusCode::CREATED, "another token: {body}");
    let (status, _, body) = api.post_delta("season-us", MULTI).await;
    assert_eq!(status, StatusCode::CREATED, "a third token: {body}");
    assert_eq!(api.read(ANY).await, StatusCode::TOO_MANY_REQUESTS);

    // Waiting what Retry-After said is enough: time passing is what this checks.
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    let (status, _, body) = api.post_delta("season-eu", ANY).await;
    assert_eq!(status, StatusCode::CREATED, "after Retry-After: {body}");
}

/// The digests in `auth.tokens` say who may write: neither the api's settings nor the token
/// table built from them show one in `Debug` (logs, assertion messages) or `Serialize`.
#[test]
fn settings_and_the_token_table_never_show_a_digest() {
    let digest = hash_token(ANY);
    let entry = format!("any={digest}@write:*");
    let loaded = ledgerboard_core::config::load_from::<ledgerboard_api::settings::Sections>(
        None,
        Some(ledgerboard_core::config::env_map(&[
            ("LEDGERBOARD__AUTH__TOKENS", entry.as_str()),
            (
                "LEDGERBOARD__DATABASE__URL",
                "postgres://u:s3cret@db:5432/x",
            ),
        ])),
    )
    .expect("load");
    let table = ledgerboard_core::auth::TokenTable::parse(&entry).expect("parse");
    for text in [
        format!("{:?}", loaded.settings),
        serde_json::to_string(&loaded.settings.daemon).expect("serialize"),
        serde_json::to_string(&loaded.settings.database).expect("serialize"),
        format!("{table:?}"),
    ] {
        assert!(
            !text.contains(&digest) && !text.contains("s3cret"),
            "{text}"
        );
    }
    assert!(table.authenticate(ANY).is_some());
}
