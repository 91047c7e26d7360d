//! Access control and hostile input: who may write, read and how often, and input that must
//! be refused with a clear answer while PostgreSQL stays unchanged.

use crate::common;

use std::io::{Read, Write};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::{Settings, TestApi, send_with_headers, test_api};
use ledgerboard_api::settings::ReadAccess;
use ledgerboard_core::auth::hash_token;
use ledgerboard_testkit::{
    Process, TestDb, TestRedis, daemon_env, http_request, wait_until_blocking,
};
use serde_json::{Value, json};
use uuid::Uuid;

const EU: &str = "eu-game-server-token";
const READER: &str = "reader-token";
const ADMIN: &str = "admin-token";

async fn api(tweak: impl FnOnce(&mut Settings)) -> TestApi {
    let tokens = format!(
        "eu={}@write:season-eu;reader={}@read;ops={}@admin",
        hash_token(EU),
        hash_token(READER),
        hash_token(ADMIN)
    );
    test_api(tokens, tweak).await
}

impl TestApi {
    async fn send(&self, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
        send_with_headers(&self.app, request).await
    }

    async fn post(
        &self,
        board: &str,
        token: Option<&str>,
        body: String,
    ) -> (StatusCode, axum::http::HeaderMap, String) {
        let mut request = Request::post(format!("/v1/boards/{board}/scores"))
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.send(request.body(Body::from(body)).expect("request"))
            .await
    }

    async fn get(
        &self,
        uri: &str,
        token: Option<&str>,
    ) -> (StatusCode, axum::http::HeaderMap, String) {
        let mut request = Request::get(uri);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.send(request.body(Body::empty()).expect("request"))
            .await
    }

    /// Rows in score_events, user_scores and the outbox together.
    async fn rows(&self) -> i64 {
        let client = self.db.client().await;
        client
            .query_one(
                "SELECT (SELECT count(*) FROM score_events) + (SELECT count(*) FROM user_scores) \
                 + (SELECT count(*) FROM leaderboard_outbox)",
                &[],
            )
            .await
            .expect("count")
            .get(0)
    }
}

fn command(user: &str, delta: i64) -> String {
    json!({"event_id": Uuid::new_v4().to_string(), "user_id": user, "delta": delta}).to_string()
}

fn code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    v["error"]["code"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn writes_need_a_valid_token_scoped_to_their_board() {
    let api = api(|_| {}).await;
    // No token, a wrong token, a malformed header: 401, and nothing is written.
    let (status, headers, body) = api.post("season-eu", None, command("ann", 5)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(code(&body), "unauthenticated");
    assert!(
        headers[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ascii")
            .starts_with("Bearer")
    );
    let (status, _, body) = api
        .post("season-eu", Some("not-a-token"), command("ann", 5))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        !body.contains("not-a-token"),
        "the token is never echoed: {body}"
    );
    let basic = Request::post("/v1/boards/season-eu/scores")
        .header(header::AUTHORIZATION, "Basic YTpi")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(command("ann", 5)))
        .expect("request");
    assert_eq!(api.send(basic).await.0, StatusCode::UNAUTHORIZED);
    // A token for another board, or a read-only token: 403, nothing written.
    let (status, _, body) = api.post("season-us", Some(EU), command("ann", 5)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(code(&body), "forbidden");
    let (status, _, _) = api.post("season-eu", Some(READER), command("ann", 5)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Refused before the body is looked at: a bad body without a token is still 401.
    let (status, _, _) = api.post("season-eu", None, "{not json".into()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(api.rows().await, 0, "a refused write changed PostgreSQL");
    // The right token writes; admin writes anywhere.
    assert_eq!(
        api.post("season-eu", Some(EU), command("ann", 5)).await.0,
        StatusCode::CREATED
    );
    assert_eq!(
        api.post("season-us", Some(ADMIN), command("bob", 5))
            .await
            .0,
        StatusCode::CREATED
    );
    assert_eq!(api.rows().await, 6);
}

#[tokio::test]
async fn reads_are_public_or_need_a_token_by_setting() {
    let public = api(|_| {}).await;
    assert_eq!(
        public
            .get("/v1/boards/season-eu/top?consistency=strong", None)
            .await
            .0,
        StatusCode::OK
    );
    let closed = api(|s| s.auth.reads = ReadAccess::Token).await;
    let (status, _, body) = closed
        .get("/v1/boards/season-eu/top?consistency=strong", None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    for token in [READER, EU, ADMIN] {
        let (status, _, body) = closed
            .get("/v1/boards/season-eu/top?consistency=strong", Some(token))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, _, _) = closed.get("/v1/boards/season-eu/top", Some("wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn hostile_input_gets_a_clear_answer_and_writes_nothing() {
    let api = api(|_| {}).await;
    let ten_mb_user = "u".repeat(10 << 20);
    let cases: Vec<(&str, String, StatusCode)> = vec![
        (
            "a 10 MB user id",
            command(&ten_mb_user, 1),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            "an oversized body",
            format!("{{\"pad\":\"{}\"}}", "x".repeat(20_000)),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            "a delta of 2^63",
            format!(
                r#"{{"event_id":"{}","user_id":"ann","delta":9223372036854775808}}"#,
                Uuid::new_v4()
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "a NUL in the user id",
            command("an\u{0}n", 1),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "a user id of 129 bytes",
            command(&"u".repeat(129), 1),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        ("not JSON", "\u{feff}{".into(), StatusCode::BAD_REQUEST),
    ];
    for (what, body, want) in cases {
        let (status, _, answer) = api.post("season-eu", Some(EU), body).await;
        assert_eq!(status, want, "{what}: {}", &answer[..answer.len().min(300)]);
        assert!(!code(&answer).is_empty(), "{what}: the JSON error shape");
    }
    // Paths with NUL bytes, invalid UTF-8 or characters outside the id alphabet.
    for path in [
        "/v1/boards/a%00b/scores",
        "/v1/boards/%FF%FE/scores",
        "/v1/boards/a%20b/scores",
    ] {
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {ADMIN}"))
            .body(Body::from(command("ann", 1)))
            .expect("request");
        let (status, _, body) = api.send(request).await;
        assert!(status.is_client_error(), "{path}: {status} {body}");
        assert!(!code(&body).is_empty(), "{path}: {body}");
    }
    for uri in [
        "/v1/boards/season-eu/top?limit=-1",
        "/v1/boards/season-eu/top?limit=100000",
        "/v1/boards/season-eu/top?offset=-5",
        "/v1/boards/season-eu/users/%FF/around?radius=1000",
        "/v1/boards/season-eu/users/a%00/around",
    ] {
        let (status, _, body) = api.get(uri, None).await;
        assert!(status.is_client_error(), "{uri}: {status} {body}");
        assert!(!code(&body).is_empty(), "{uri}: {body}");
    }
    assert_eq!(api.rows().await, 0);
}

#[tokio::test]
async fn a_flood_above_the_rate_limit_gets_429_with_retry_after() {
    let api = api(|s| {
        s.api.rate_limit_per_s = 5;
        s.api.rate_limit_burst = 5;
    })
    .await;
    let mut answers = Vec::new();
    for _ in 0..20 {
        let (status, headers, _) = api
            .get("/v1/boards/season-eu/top?consistency=strong", None)
            .await;
        answers.push((status, headers.get(header::RETRY_AFTER).cloned()));
    }
    let limited: Vec<_> = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert!(limited.len() >= 10, "{answers:?}");
    assert!(
        limited.iter().all(|(_, retry)| retry.is_some()),
        "{answers:?}"
    );
    // A token has a bucket of its own: the anonymous flood does not stop it.
    let (status, _, _) = api.post("season-eu", Some(EU), command("ann", 1)).await;
    assert_eq!(status, StatusCode::CREATED);
}

/// The real server: a client that never finishes its headers is disconnected, and past
/// `api.max_connections` further clients wait until a connection closes.
#[tokio::test]
async fn slow_and_excess_connections_cannot_hold_the_daemon() {
    let db = TestDb::create().await;
    let redis = TestRedis::new();
    ledgerboard_testkit::migrate(&db.url).await;
    let mut env = daemon_env(&db, &redis);
    env.extend([
        // The daemon binds a port of its own choice and logs it (no port found free and bound
        // again later).
        ("LEDGERBOARD__API__LISTEN".into(), "127.0.0.1:0".into()),
        ("LEDGERBOARD__API__HEADER_TIMEOUT_MS".into(), "300".into()),
        ("LEDGERBOARD__API__MAX_CONNECTIONS".into(), "2".into()),
    ]);
    let env = ledgerboard_testkit::env_refs(&env);
    let mut daemon = Process::start(env!("CARGO_BIN_EXE_ledgerboard-api"), &[], &env);
    let addr = daemon
        .wait_for_addr("ledgerboard-api started", Duration::from_secs(20))
        .to_string();

    // Headers never finished: the server closes the connection after the timeout.
    let mut slow = std::net::TcpStream::connect(&addr).expect("connect");
    slow.write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n")
        .expect("partial headers");
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = Vec::new();
    let read = slow.read_to_end(&mut buf);
    assert!(
        read.is_ok(),
        "the server kept a connection without headers open: {read:?}"
    );
    assert!(
        !String::from_utf8_lossy(&buf).contains("200 OK"),
        "a half request was served"
    );

    // Two connections hold both permits; a third is not served until one of them closes.
    let held: Vec<_> = (0..2)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&addr).expect("connect");
            c.write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("request");
            let mut first = [0u8; 12];
            c.read_exact(&mut first)
                .expect("answer on a held connection");
            c
        })
        .collect();
    let mut third = std::net::TcpStream::connect(&addr).expect("connect (backlog)");
    third
        .write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("request");
    // Not accepted: it waits in the listen backlog (a broken cap would take it at once), and
    // nothing has been answered on it.
    wait_until_blocking(Duration::from_secs(10), || accept_queue(&addr) == 1)
        .expect("the third connection waits, un-accepted, in the listen backlog");
    third.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    let read = third.read(&mut byte);
    assert!(
        matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a third connection was served beyond the cap: {read:?}"
    );
    third.set_nonblocking(false).expect("blocking");
    drop(held);
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut answer = String::new();
    third
        .read_to_string(&mut answer)
        .expect("answer once a permit is free");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // And the daemon still serves.
    assert_eq!(http_request(&addr, "GET", "/openapi.json", "").0, 200);
    assert!(
        daemon
            .terminate(Duration::from_secs(10))
            .is_some_and(|s| s.success())
    );
}

/// How many connections wait, un-accepted, in the accept queue of the socket listening at
/// `addr` (127.0.0.1:port): a listening socket's `rx_queue` in Linux's /proc/net/tcp.
fn accept_queue(addr: &str) -> usize {
    let port: u16 = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    let local = format!("0100007F:{port:04X}");
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // 0A: LISTEN; field 4 is tx_queue:rx_queue in hex.
            (fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&"0A"))
                .then(|| fields.get(4)?.split(':').nth(1))
                .flatten()
                .and_then(|rx| usize::from_str_radix(rx, 16).ok())
        })
        .sum()
}
