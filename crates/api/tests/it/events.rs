//! The event feed, `GET /v1/events` (issue 40): commands posted through the HTTP api come out
//! of the feed once each, in position order, paged by cursor with filters, resumed with no gap
//! and no duplicate while commands keep arriving; the long poll answers as soon as an event
//! arrives, ends empty at its bound, and ends with its client; expired cursors, bad parameters
//! and callers without the scope are refused with their codes. The router in process, with the
//! event upkeep started as the daemon starts it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use ledgerboard_api::{AppState, router};
use ledgerboard_core::auth::hash_token;
use ledgerboard_core::board::definition::{self, Declaration, Operator};
use ledgerboard_core::config::Millis;
use ledgerboard_core::db::Database;
use ledgerboard_core::events::sequence::sweep;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_testkit::{TEST_TOKEN, TestDb, TestRedis, settings_for, wait_until};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::common::{self, Settings};

const FEED: &str = "feed-token";
const READER: &str = "reader-token";
const SUPPORT: &str = "support-token";
const WRITER: &str = "writer-token";

/// The router with its event upkeep running (stopped when dropped), the state it shares with
/// every request, and a database of its own.
struct Feed {
    db: TestDb,
    _redis: TestRedis,
    settings: Settings,
    state: AppState,
    app: Router,
    upkeep: CancellationToken,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.upkeep.cancel();
    }
}

async fn feed(tweak: impl FnOnce(&mut Settings)) -> Feed {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    let tokens = format!(
        "tests={}@admin;feed={}@events;reader={}@read;support={}@moderate;writer={}@write:*",
        hash_token(TEST_TOKEN),
        hash_token(FEED),
        hash_token(READER),
        hash_token(SUPPORT),
        hash_token(WRITER)
    );
    let mut settings: Settings =
        settings_for(&db.url, &redis, &[("LEDGERBOARD__AUTH__TOKENS", &tokens)]);
    settings.events.sequence_interval_ms = Millis::of(20);
    settings.api.rate_limit_per_s = 0;
    tweak(&mut settings);
    settings.validate().expect("valid settings");
    ledgerboard_core::db::migrate(&settings.database)
        .await
        .expect("migrate");
    let pool = Database::connect(&settings.database, "api-test").expect("pool");
    for board in ["alpha", "beta"] {
        let declaration = Declaration {
            operator: Some(Operator::Add),
            ..Declaration::default()
        };
        definition::declare(&pool, &BoardId::parse(board).expect("id"), &declaration)
            .await
            .expect("declare");
    }
    let store = Store::connect(&settings.redis).expect("redis pool");
    let state = AppState::new(pool, store, &settings);
    let upkeep = CancellationToken::new();
    state
        .start_event_upkeep(&settings, upkeep.clone())
        .expect("upkeep");
    let app = router(state.clone(), &settings.api);
    Feed {
        db,
        _redis: redis,
        settings,
        state,
        app,
        upkeep,
    }
}

impl Feed {
    /// `GET uri` with `token` (None: no header): the status and the JSON body.
    async fn get(&self, uri: &str, token: Option<&str>) -> (StatusCode, Value) {
        let mut request = Request::get(uri);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        common::send(&self.app, request.body(Body::empty()).expect("request")).await
    }

    /// A page with the feed's token: 200, or the test fails.
    async fn page(&self, query: &str) -> Value {
        let (status, body) = self.get(&format!("/v1/events?{query}"), Some(FEED)).await;
        assert_eq!(status, StatusCode::OK, "{query}: {body}");
        body
    }

    /// A command of `delta` for `user` on `board` through the api; its event id.
    async fn post(&self, board: &str, user: &str, delta: i64) -> Uuid {
        post(&self.app, board, user, delta).await
    }

    /// Waits until the feed's head is at least `position`.
    async fn head_reaches(&self, position: i64) {
        wait_until(Duration::from_secs(10), || async {
            self.page("limit=1")
                .await
                .get("head")
                .and_then(Value::as_i64)
                .is_some_and(|h| h >= position)
        })
        .await
        .unwrap_or_else(|| panic!("the head never reached {position}"));
    }
}

async fn post(app: &Router, board: &str, user: &str, delta: i64) -> Uuid {
    let id = Uuid::new_v4();
    let body = json!({"event_id": id.to_string(), "user_id": user, "delta": delta});
    let (status, answer) = common::send(app, common::command(board, body.to_string())).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    id
}

fn ids(page: &Value) -> Vec<Uuid> {
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_str().expect("id").parse().expect("uuid"))
        .collect()
}

/// Every page from `query`'s start (`after` absent) to the head, `limit` at a time: the events
/// in order, checking that `next` moves on and positions grow.
async fn all_pages(f: &Feed, query: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut after: Option<i64> = None;
    loop {
        let cursor = after.map(|a| format!("&after={a}")).unwrap_or_default();
        let page = f.page(&format!("{query}{cursor}")).await;
        let next = page["next"].as_i64().expect("next");
        let batch = page["events"].as_array().expect("events").clone();
        if batch.is_empty() && next == page["head"].as_i64().expect("head") {
            return events;
        }
        assert!(after.is_none_or(|a| next > a), "next moves on: {page}");
        events.extend(batch);
        after = Some(next);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_feed_pages_every_command_by_cursor_with_its_filters() {
    let f = feed(|_| {}).await;
    let mut posted = Vec::new();
    for i in 0..30 {
        let board = if i % 2 == 0 { "alpha" } else { "beta" };
        posted.push((board, f.post(board, &format!("u{}", i % 3), i + 1).await));
    }
    f.head_reaches(30).await;

    // Pages of 7 from the oldest: every command once, in the order they were posted (one
    // after the other, so in commit order), with their fields.
    let events = all_pages(&f, "limit=7").await;
    let got: Vec<Uuid> = events
        .iter()
        .map(|e| e["id"].as_str().expect("id").parse().expect("uuid"))
        .collect();
    assert_eq!(got, posted.iter().map(|p| p.1).collect::<Vec<_>>());
    let positions: Vec<i64> = events
        .iter()
        .map(|e| e["position"].as_i64().expect("p"))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    let first = &events[0];
    assert_eq!(
        (&first["kind"], &first["board"], &first["user_id"]),
        (&json!("score.accepted"), &json!("alpha"), &json!("u0"))
    );
    assert_eq!(
        (
            &first["data"]["score"],
            &first["data"]["version"],
            &first["data"]["previous"]
        ),
        (&json!(1), &json!(1), &Value::Null),
        "{first}"
    );
    // The fourth: u0's first command on beta (a board of its own: version 1 again).
    let fourth = &events[3];
    assert_eq!(
        (
            &fourth["board"],
            &fourth["user_id"],
            &fourth["data"]["version"]
        ),
        (&json!("beta"), &json!("u0"), &json!(1)),
        "{fourth}"
    );
    assert!(
        first["occurred_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );

    // One board; kinds that match, and one that matches nothing: its page is empty but moves
    // the cursor to the head.
    let alpha = all_pages(&f, "limit=4&boards=alpha").await;
    assert_eq!(alpha.len(), 15);
    assert!(alpha.iter().all(|e| e["board"] == json!("alpha")));
    let both = all_pages(&f, "boards=alpha,beta&kinds=score.accepted,review.held").await;
    assert_eq!(both.len(), 30);
    let none = f.page("kinds=period.closed").await;
    assert_eq!(ids(&none), Vec::<Uuid>::new());
    assert_eq!(none["next"], none["head"], "{none}");
    // The default page holds up to 100; a cursor at the head answers nothing.
    let head = none["head"].as_i64().expect("head");
    let at_head = f.page(&format!("after={head}")).await;
    assert_eq!((ids(&at_head).len(), &at_head["next"]), (0, &json!(head)));
}

#[tokio::test(flavor = "multi_thread")]
async fn resuming_by_cursor_while_commands_arrive_sees_every_event_once_in_order() {
    let f = feed(|_| {}).await;
    // Four writers, 60 commands each, through the api while the reader pages.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let app = f.app.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..60 {
                    let board = if (w + i) % 2 == 0 { "alpha" } else { "beta" };
                    ids.push(post(&app, board, &format!("w{w}-{}", i % 5), 1).await);
                }
                ids
            })
        })
        .collect();
    let mut seen: Vec<Uuid> = Vec::new();
    let mut last_position = 0;
    let mut after: Option<i64> = None;
    let started = Instant::now();
    while seen.len() < 240 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "saw {} of 240 events",
            seen.len()
        );
        let cursor = after.map(|a| format!("&after={a}")).unwrap_or_default();
        let page = f.page(&format!("limit=13&wait=1{cursor}")).await;
        for e in page["events"].as_array().expect("events") {
            let position = e["position"].as_i64().expect("position");
            assert!(
                position > last_position,
                "positions grow: {position} after {last_position}"
            );
            last_position = position;
            seen.push(e["id"].as_str().expect("id").parse().expect("uuid"));
        }
        after = Some(page["next"].as_i64().expect("next"));
    }
    let mut posted = BTreeSet::new();
    for w in writers {
        posted.extend(w.await.expect("writer"));
    }
    let unique: BTreeSet<Uuid> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "an event was seen twice");
    assert_eq!(unique, posted, "every command's event, and nothing else");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_poll_answers_as_soon_as_an_event_arrives_and_ends_empty_at_its_bound() {
    let f = Arc::new(feed(|_| {}).await);
    f.post("alpha", "u", 1).await;
    f.head_reaches(1).await;
    let head = f.page("").await["head"].as_i64().expect("head");

    // Waiting at the head (up to 20 s): a command arrives once the poll waits.
    let poll = {
        let f = f.clone();
        tokio::spawn(async move {
            let asked = Instant::now();
            let page = f.page(&format!("after={head}&wait=20")).await;
            (page, asked.elapsed())
        })
    };
    let waiting = || async { f.state.events_waiting.load(Ordering::Relaxed) == 1 };
    wait_until(Duration::from_secs(5), waiting)
        .await
        .expect("the poll waits");
    let id = f.post("beta", "v", 2).await;
    let (page, took) = poll.await.expect("poll");
    assert_eq!(ids(&page), vec![id], "{page}");
    assert!(
        took < Duration::from_secs(10),
        "answered in {took:?}, not at its bound"
    );
    assert_eq!(f.state.events_waiting.load(Ordering::Relaxed), 0);

    // Nothing comes: a bounded wait answers an empty page with the same cursor, at its bound.
    let head = page["next"].as_i64().expect("next");
    let asked = Instant::now();
    let empty = f.page(&format!("after={head}&wait=1")).await;
    let took = asked.elapsed();
    assert_eq!(
        (ids(&empty).len(), &empty["next"]),
        (0, &json!(head)),
        "{empty}"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // A filtered poll is not answered by events it does not match: it waits on from the new
    // head and ends empty at its bound, its cursor moved past them.
    let poll = {
        let f = f.clone();
        tokio::spawn(async move {
            f.page(&format!("after={head}&wait=2&kinds=review.held"))
                .await
        })
    };
    wait_until(Duration::from_secs(5), waiting)
        .await
        .expect("the filtered poll waits");
    f.post("alpha", "w", 3).await;
    let page = poll.await.expect("poll");
    assert_eq!(ids(&page).len(), 0, "{page}");
    assert_eq!(page["next"], json!(head + 1), "{page}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wait_is_cut_to_the_server_bound() {
    let f = feed(|s| s.api.events_max_wait_ms = Millis::of(300)).await;
    let asked = Instant::now();
    let page = f.page("wait=30").await;
    assert_eq!(ids(&page).len(), 0);
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_goes_away_mid_wait_leaves_no_wait_behind() {
    let f = feed(|_| {}).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = CancellationToken::new();
    let server = {
        let (app, api, stop) = (f.app.clone(), f.settings.api.clone(), stop.clone());
        tokio::spawn(async move {
            ledgerboard_api::serve(listener, app, &api, stop, Duration::from_secs(1)).await
        })
    };
    let mut client = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /v1/events?wait=25 HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {FEED}\r\n\r\n"
    );
    client.write_all(request.as_bytes()).await.expect("request");
    let waiting = |n: usize| {
        let state = f.state.clone();
        move || {
            let state = state.clone();
            async move { state.events_waiting.load(Ordering::Relaxed) == n }
        }
    };
    wait_until(Duration::from_secs(5), waiting(1))
        .await
        .expect("the poll waits");
    drop(client);
    // The request's future is dropped with its connection: well before its 25 s.
    wait_until(Duration::from_secs(5), waiting(0))
        .await
        .expect("the wait ended with its client");
    // The server still answers (nothing was left holding it).
    let mut again = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /v1/events HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {FEED}\r\nConnection: close\r\n\r\n"
    );
    again.write_all(request.as_bytes()).await.expect("request");
    let mut answer = String::new();
    again.read_to_string(&mut answer).await.expect("answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stop.cancel();
    server.await.expect("server").expect("served");
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_cursors_are_410_and_bad_parameters_400_with_their_codes() {
    let f = feed(|_| {}).await;
    for i in 0..3 {
        f.post("alpha", "u", i + 1).await;
    }
    f.head_reaches(3).await;
    let client = f.db.client().await;
    client
        .execute(
            "UPDATE events SET occurred_at = occurred_at - interval '2 hours'",
            &[],
        )
        .await
        .expect("age");
    let db = Database::connect(&f.settings.database, "sweep").expect("pool");
    assert_eq!(sweep(&db, 1, 1, 100).await.expect("sweep"), 3);
    let (status, body) = f.get("/v1/events?after=1", Some(FEED)).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::GONE, "cursor_expired"),
        "{body}"
    );
    // From the oldest kept, or the head: nothing lost is claimed.
    let fresh = f.page("").await;
    assert_eq!(
        (ids(&fresh).len(), &fresh["next"]),
        (0, &json!(3)),
        "{fresh}"
    );
    f.page("after=3").await;

    let many = (0..101)
        .map(|i| format!("b{i}"))
        .collect::<Vec<_>>()
        .join(",");
    for (query, want) in [
        ("after=-1", "invalid_after"),
        ("after=abc", "invalid_after"),
        ("after=1.5", "invalid_after"),
        ("after=99999", "invalid_after"),
        ("kinds=nope", "invalid_kinds"),
        ("kinds=", "invalid_kinds"),
        ("kinds=score.accepted,,review.held", "invalid_kinds"),
        ("kinds=score.accepted%20", "invalid_kinds"),
        ("boards=bad%20board", "invalid_boards"),
        ("boards=alpha~20261205T000000Z", "invalid_boards"),
        ("boards=", "invalid_boards"),
        (&format!("boards={many}"), "invalid_boards"),
        ("limit=0", "invalid_limit"),
        ("limit=1001", "invalid_limit"),
        ("limit=ten", "invalid_limit"),
        ("wait=31", "invalid_wait"),
        ("wait=-1", "invalid_wait"),
        ("wait=0.5", "invalid_wait"),
        ("nope=1", "invalid_query"),
        ("limit=1&limit=2", "invalid_query"),
    ] {
        let (status, body) = f.get(&format!("/v1/events?{query}"), Some(FEED)).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, want),
            "{query}: {body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_events_or_admin_scope_reads_the_feed_whoever_may_read() {
    // Reads open to anyone: the feed is not a read.
    let f = feed(|s| s.auth.reads = ledgerboard_api::settings::ReadAccess::Public).await;
    let (status, body) = f.get("/v1/events", None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNAUTHORIZED, "unauthenticated")
    );
    let (status, _) = f.get("/v1/events", Some("not-a-token")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    for token in [READER, SUPPORT, WRITER] {
        let (status, body) = f.get("/v1/events", Some(token)).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{token}"
        );
    }
    // Refused before its parameters are read.
    let (status, _) = f.get("/v1/events?limit=0", Some(READER)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for token in [FEED, TEST_TOKEN] {
        let (status, body) = f.get("/v1/events", Some(token)).await;
        assert_eq!(status, StatusCode::OK, "{token}: {body}");
    }
}
