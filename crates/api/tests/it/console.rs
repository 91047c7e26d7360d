//! The console over HTTP (issue 35): who is asking is checked before the request is read, a
//! form that does not parse is the console's own 400 page, and a store that does not answer is
//! shown as such, never as a state it only looks like (a verdict of `missing`, "no period", an
//! empty table), in the pages and in the JSON.

use crate::common;

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use common::{TestEnv, app_with, send, send_text, send_with_headers, test_api};
use ledgerboard_core::config::Millis;
use ledgerboard_testkit::{PostgresServer, RedisServer, TEST_TOKEN, TestRedis, test_tokens};
use serde_json::{Value, json};

/// What no page may show: a library's wording (serde's, axum's rejections, tokio-postgres's,
/// redis's) or the api's own error prefixes around it.
const LEAKS: [&str; 12] = [
    "Failed to deserialize",
    "missing field",
    "duplicate field",
    "Failed to buffer",
    "Content-Type",
    "db error",
    "database unavailable",
    "redis unavailable",
    "redis error",
    "Connection refused",
    "error connecting",
    "os error",
];

pub(crate) fn assert_no_leak(what: &str, page: &str) {
    for leak in LEAKS {
        assert!(!page.contains(leak), "{what}: shows {leak:?}: {page}");
    }
}

/// Every route of the console's router with its methods, read from the router's own source,
/// so that a route added later is checked too.
fn console_routes() -> Vec<(String, Vec<&'static str>)> {
    let source = include_str!("../../src/console/mod.rs");
    let start = source.find("pub fn routes(").expect("the router");
    let body = &source[start..];
    let body = &body[..body.find("\n}\n").expect("the router's end")];
    let mut routes = Vec::new();
    for call in body.split(".route(").skip(1) {
        let call = call.split(".route_layer(").next().unwrap_or(call);
        let path = call.split('"').nth(1).expect("a path literal");
        // A method is named as a call: `get(handler)` or `.post(handler)`.
        let methods = ["get", "post", "put", "delete", "patch"]
            .into_iter()
            .filter(|m| {
                call.match_indices(&format!("{m}(")).any(|(at, _)| {
                    !call[..at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                })
            })
            .collect::<Vec<_>>();
        assert!(!methods.is_empty(), "{path}: no method found in {call}");
        routes.push((path.to_owned(), methods));
    }
    routes
}

/// The routes that answer without a session, as they must: the login page and its form, the
/// assets (the login page uses the stylesheet).
fn open(path: &str) -> bool {
    path == "/console/login" || path.starts_with("/console/assets/")
}

pub(crate) fn request(
    method: &str,
    uri: &str,
    cookie: Option<&str>,
    form: Option<(&str, &str)>,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(token) = cookie {
        builder = builder.header(header::COOKIE, format!("lb_console={token}"));
    }
    match form {
        Some((kind, body)) => builder
            .header(header::CONTENT_TYPE, kind)
            .body(Body::from(body.to_owned())),
        None => builder.body(Body::empty()),
    }
    .expect("request")
}

pub(crate) const FORM: &str = "application/x-www-form-urlencoded";

fn location(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::LOCATION).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn every_console_route_checks_the_session_before_it_reads_the_request() {
    let api = test_api(test_tokens(), |_| {}).await;
    let routes = console_routes();
    let paths: Vec<&str> = routes.iter().map(|(p, _)| p.as_str()).collect();
    for expected in [
        "/console",
        "/console/boards/{board}/check",
        "/console/boards/{board}/rebuild",
        "/console/parked/requeue",
        "/console/moderation",
        "/console/logout",
        "/console/login",
    ] {
        assert!(paths.contains(&expected), "{expected} not in {paths:?}");
    }
    let mut checked = 0;
    for (path, methods) in &routes {
        let uri = path.replace("{board}", "b").replace("{id}", "w");
        if open(path) {
            continue;
        }
        for method in methods {
            // Without a session: the login redirect, whatever the request holds (no csrf, no
            // field at all, a body of another type, none).
            let attempts: Vec<Option<(&str, &str)>> = if *method == "get" {
                vec![None]
            } else {
                vec![
                    None,
                    Some((FORM, "")),
                    Some((FORM, "target=b")),
                    Some((FORM, "board=x&operator=add&action=ban&user_id=u&reason=r")),
                    Some(("application/json", "{\"csrf\": 1}")),
                ]
            };
            for form in attempts {
                let req = request(&method.to_uppercase(), &uri, None, form);
                let (status, headers, page) = send_with_headers(&api.app, req).await;
                assert_eq!(
                    (status, location(&headers)),
                    (StatusCode::SEE_OTHER, Some("/console/login")),
                    "{method} {uri} {form:?}: {page}"
                );
                // With a token that is not (or no longer) valid: the same.
                let req = request(&method.to_uppercase(), &uri, Some("lb_nope"), form);
                let (status, headers, page) = send_with_headers(&api.app, req).await;
                assert_eq!(
                    (status, location(&headers)),
                    (StatusCode::SEE_OTHER, Some("/console/login")),
                    "{method} {uri} {form:?} with an invalid token: {page}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "only {checked} requests checked");

    // The open routes stay reachable without a session, and the login form's own failure is
    // the login page's message, not serde's.
    let (status, page) = send_text(&api.app, request("GET", "/console/login", None, None)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let (status, page) = send_text(
        &api.app,
        request("POST", "/console/login", None, Some((FORM, "csrf=x"))),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("the form lacks its token"), "{page}");
    assert_no_leak("login without a token", &page);
    for asset in ["/console/assets/console.css", "/console/assets/console.js"] {
        let (status, _) = send_text(&api.app, request("GET", asset, None, None)).await;
        assert_eq!(status, StatusCode::OK, "{asset}");
    }
}

#[tokio::test]
async fn a_signed_in_operators_malformed_form_is_the_consoles_400_page() {
    let api = test_api(test_tokens(), |_| {}).await;
    let me = Some(TEST_TOKEN);
    // Each action without its csrf field, with fields missing, or of another content type.
    for (uri, body) in [
        ("/console", "board=b&operator=add"),
        ("/console/boards/b/check", "target=b"),
        ("/console/boards/b/rebuild", "target=b"),
        ("/console/moderation", "action=ban&user_id=u"),
        ("/console/logout", ""),
    ] {
        for form in [(FORM, body), ("application/json", "{\"csrf\":\"x\"}")] {
            let (status, page) = send_text(&api.app, request("POST", uri, me, Some(form))).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{uri} {form:?}: {page}");
            assert!(
                page.contains(r#"<code id="error-code">malformed_body</code>"#),
                "{uri}: not the console's error page: {page}"
            );
            assert!(page.contains("reload the page"), "{uri}: {page}");
            assert_no_leak(uri, &page);
        }
    }
    // The requeue form is read by hand: an id that is not one is its own message.
    let (status, page) = send_text(
        &api.app,
        request(
            "POST",
            "/console/parked/requeue",
            me,
            Some((FORM, "id=abc")),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("not an outbox id"), "{page}");
    // A query or a path the console never makes: the same page, not axum's text.
    for uri in [
        "/console/drift?notice=a&notice=b",
        "/console/boards/b?user=a&user=b",
    ] {
        let (status, page) = send_text(&api.app, request("GET", uri, me, None)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {page}");
        assert!(page.contains(r#"id="error-code">invalid_query<"#), "{page}");
        assert_no_leak(uri, &page);
    }
    let (status, page) = send_text(&api.app, request("GET", "/console/boards/%FF", me, None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains(r#"id="error-code">invalid_path<"#), "{page}");
    assert_no_leak("a path of invalid UTF-8", &page);
}

pub(crate) async fn declare(app: &Router, board: &str, body: Value) {
    let request = Request::put(format!("/v1/boards/{board}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {TEST_TOKEN}"))
        .body(Body::from(body.to_string()))
        .expect("request");
    let (status, answer) = send(app, request).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
}

async fn score(app: &Router, board: &str, user: &str, delta: i64) -> Value {
    let body =
        json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": user, "delta": delta});
    let (status, answer) = send(app, common::command(board, body.to_string())).await;
    assert!(status.is_success(), "{status} {answer}");
    answer
}

pub(crate) async fn page(app: &Router, uri: &str) -> (StatusCode, String) {
    send_text(app, request("GET", uri, Some(TEST_TOKEN), None)).await
}

/// The text of the element with `id`, up to its first tag.
pub(crate) fn text_of<'p>(page: &'p str, id: &str) -> &'p str {
    let at = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}: {page}"));
    let rest = &page[at..];
    let start = rest.find('>').expect("tag end") + 1;
    let rest = &rest[start..];
    &rest[..rest.find('<').unwrap_or(rest.len())]
}

#[tokio::test]
async fn redis_not_answering_is_shown_as_such_not_as_a_missing_projection() {
    let mut server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |s| {
        s.api.freshness_cache_ms = Millis::of(0);
        s.redis.connect_timeout_ms = Millis::of(300);
    })
    .await;
    let app = app_with(&env.settings);
    declare(&app, "b", json!({"operator": "add"})).await;
    for (user, delta) in [("alice", 30), ("bob", 20)] {
        score(&app, "b", user, delta).await;
    }
    common::seal(&env, "b").await;
    let (status, before) = page(&app, "/console/boards/b?user=alice").await;
    assert_eq!(status, StatusCode::OK, "{before}");
    assert_eq!(text_of(&before, "user-verdict"), "current", "{before}");
    assert_eq!(text_of(&before, "seal"), "whole", "{before}");

    server.stop();
    let (status, board) = page(&app, "/console/boards/b?user=alice").await;
    assert_eq!(status, StatusCode::OK, "{board}");
    assert_eq!(
        text_of(&board, "user-verdict"),
        "unknown: Redis did not answer",
        "{board}"
    );
    assert_eq!(
        text_of(&board, "seal"),
        "unknown: Redis did not answer",
        "{board}"
    );
    assert_eq!(
        text_of(&board, "user-projection"),
        "unknown: Redis did not answer"
    );
    assert_eq!(
        text_of(&board, "projected-unread"),
        "unknown: Redis did not answer"
    );
    assert!(
        text_of(&board, "user-why").starts_with("Redis did not answer"),
        "{board}"
    );
    for false_state in [
        "verdict-missing",
        ">missing<",
        "seal-missing",
        "Nothing in Redis.",
        "Redis lacks this member",
        "absent",
    ] {
        assert!(
            !board.contains(false_state),
            "shows {false_state:?}: {board}"
        );
    }
    // PostgreSQL's side is still shown: it answered.
    assert!(board.contains("rank 1 with 30 (version 1)"), "{board}");
    assert_no_leak("the board page", &board);

    let (status, boards) = page(&app, "/console").await;
    assert_eq!(status, StatusCode::OK, "{boards}");
    assert!(
        boards.contains(r#"<td class="seal seal-unknown">unknown: Redis did not answer</td>"#),
        "{boards}"
    );
    assert_no_leak("the boards page", &boards);
    let (status, figures) = page(&app, "/console/boards/b/freshness").await;
    assert_eq!(status, StatusCode::OK, "{figures}");
    let figures: Value = serde_json::from_str(&figures).expect("json");
    assert_eq!(
        (&figures["projection"], &figures["projection_class"]),
        (&json!("unknown: Redis did not answer"), &json!("unknown")),
        "{figures}"
    );

    // An action that needs Redis says it did not answer, with the console's 503 page.
    let csrf = ledgerboard_core::auth::csrf_token(TEST_TOKEN);
    let (status, answer) = send_text(
        &app,
        request(
            "POST",
            "/console/boards/b/check",
            Some(TEST_TOKEN),
            Some((FORM, &format!("csrf={csrf}&target=b"))),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert!(answer.contains("Redis did not answer"), "{answer}");
    assert_no_leak("the check action", &answer);

    // The JSON: a read that may only use the projection is 503 with the stable body; a
    // bounded one answers from PostgreSQL and states the projection as unknown (null), never
    // `missing`.
    let (status, eventual) = common::get(&app, "/v1/boards/b/top?consistency=eventual").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{eventual}");
    assert_eq!(eventual["error"]["code"], "unavailable", "{eventual}");
    let (status, bounded) = common::get(&app, "/v1/boards/b/top").await;
    assert_eq!(status, StatusCode::OK, "{bounded}");
    assert_eq!(
        (
            &bounded["freshness"]["source"],
            &bounded["freshness"]["reason"],
            &bounded["freshness"]["projection"]
        ),
        (&json!("database"), &json!("redis_error"), &Value::Null),
        "{bounded}"
    );
}

#[tokio::test]
async fn postgresql_not_answering_is_shown_as_such_on_every_page() {
    let pg = PostgresServer::start().unwrap_or_else(|e| panic!("a private PostgreSQL: {e}"));
    let redis = TestRedis::new();
    let mut settings = common::Settings::default();
    settings.database.url = pg.url().into();
    settings.database.connect_timeout_ms = Millis::of(500);
    settings.database.pool_wait_timeout_ms = Millis::of(500);
    settings.redis.url = redis.url.as_str().into();
    settings.redis.namespace = redis.namespace.clone();
    settings.auth.tokens = test_tokens().into();
    settings.api.freshness_cache_ms = Millis::of(0);
    settings.validate().expect("settings");
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate");
    let app = app_with(&settings);
    declare(&app, "p", json!({"operator": "add"})).await;
    score(&app, "p", "alice", 5).await;
    let pages = [
        "/console",
        "/console/boards/p",
        "/console/drift",
        "/console/parked",
        "/console/moderation",
        "/console/webhooks",
    ];
    for uri in pages {
        let (status, body) = page(&app, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    }

    let pg = tokio::task::spawn_blocking(move || {
        pg.ctl(&["-m", "immediate", "stop"]).expect("pg_ctl stop");
        pg
    })
    .await
    .expect("stop");
    for uri in pages {
        let (status, body) = page(&app, uri).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{uri}: {body}");
        assert!(body.contains("PostgreSQL did not answer"), "{uri}: {body}");
        assert!(
            body.contains(r#"id="error-code">unavailable<"#),
            "{uri}: {body}"
        );
        assert_no_leak(uri, &body);
    }
    // The live figures say which figure is unknown and why, not a zero lag.
    let (status, figures) = page(&app, "/console/boards/p/freshness").await;
    assert_eq!(status, StatusCode::OK, "{figures}");
    let figures: Value = serde_json::from_str(&figures).expect("json");
    assert_eq!(
        figures["lag"],
        json!("unknown: PostgreSQL did not answer"),
        "{figures}"
    );
    assert_no_leak("the freshness figures", &figures.to_string());
    let (status, strong) = common::get(&app, "/v1/boards/p/top?consistency=strong").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{strong}");
    assert_eq!(strong["error"]["code"], "unavailable", "{strong}");
    drop(pg);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_period_whose_close_cannot_be_read_is_not_shown_as_not_closed_or_empty() {
    let env = TestEnv::new(|_| {}).await;
    let app = app_with(&env.settings);
    declare(
        &app,
        "season",
        json!({"operator": "add", "reset": "manual"}),
    )
    .await;
    let alice = score(&app, "season", "alice", 30).await;
    let p1 = alice["period"].as_str().expect("a period");
    // Closing waits for the period's outbox rows to be projected: no projector runs here.
    env.mark_published(&format!("season~{p1}")).await;
    let reset = Request::post("/v1/boards/season/reset")
        .header(header::AUTHORIZATION, format!("Bearer {TEST_TOKEN}"))
        .body(Body::empty())
        .expect("request");
    let (status, answer) = send(&app, reset).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // The reset opens the next period at the next whole second.
    let client = env.db.client().await;
    ledgerboard_testkit::wait_until(Duration::from_secs(5), || async {
        let now: String = client
            .query_one("SELECT lb_command_board('season')", &[])
            .await
            .expect("current period")
            .get(0);
        now != format!("season~{p1}")
    })
    .await
    .expect("the next period opens");
    let closes = ledgerboard_reconciler::periods::close_due(&env.database())
        .await
        .expect("close");
    assert_eq!(closes.closed, 1, "{closes:?}");
    let (status, shown) = page(&app, "/console/boards/season").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert!(shown.contains("<td>alice</td>"), "{shown}");

    // The frozen standings cannot be read (their table dropped: a statement that fails at
    // once; a lock would meet the verification's own long bound first): not an empty table,
    // not a digest that "does not hold".
    let client = env.db.client().await;
    client
        .batch_execute("DROP TABLE period_standings CASCADE")
        .await
        .expect("drop");
    let (status, shown) = page(&app, "/console/boards/season").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert!(shown.contains("Frozen standings of"), "{shown}");
    let unread = "unknown: PostgreSQL answered with an error (see the api log)";
    assert_eq!(text_of(&shown, "standings-unread"), unread, "{shown}");
    assert!(
        text_of(&shown, "digest-check").starts_with("could not be checked: PostgreSQL"),
        "{shown}"
    );
    assert!(!shown.contains("<td>alice</td>"), "{shown}");
    assert_no_leak("the standings unread", &shown);

    // Nor the closes: whichever read meets it first (the periods, past their cache, or the
    // previous period's close), the section says what PostgreSQL did, not "not closed" or no
    // section at all.
    client
        .batch_execute("DROP TABLE period_closes CASCADE")
        .await
        .expect("drop");
    let (status, shown) = page(&app, "/console/boards/season").await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    let periods = &shown[shown
        .find("id=\"periods-heading\"")
        .expect("the periods section")..];
    assert!(periods.contains(unread), "{periods}");
    assert!(!periods.contains("id=\"standings\""), "{periods}");
    assert_no_leak("the close unread", &shown);
}
