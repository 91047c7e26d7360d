//! Live updates (`GET /v1/boards/{board}/live`) over a real TCP connection: the api's own
//! server loop and a running projector on a database and Redis namespace of the test's own, an
//! SSE client reading the stream as it arrives (`ledgerboard_harness::sse`). Every wait is on a
//! condition: a message that says what is awaited, or heartbeats that prove the time passed.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{TestEnv, command, seal, send};
use ledgerboard_api::{AppState, router, serve};
use ledgerboard_core::auth::player;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_harness::sse::{self, EventStream, Item, Message};
use ledgerboard_projector::Projector;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);

/// The api served over TCP with its live updates, and a projector, on `env`.
struct Served {
    env: TestEnv,
    state: AppState,
    app: axum::Router,
    addr: SocketAddr,
    stop: CancellationToken,
    server: JoinHandle<std::io::Result<()>>,
    projector: (CancellationToken, JoinHandle<()>),
}

async fn served(redis_url: Option<String>, tweak: impl FnOnce(&mut common::Settings)) -> Served {
    let env = TestEnv::with_redis_url(redis_url, |s| {
        s.api.live_min_interval_ms = Millis::of(50);
        s.projector.poll_interval_ms = Millis::of(20);
        tweak(s);
    })
    .await;
    let state = AppState::new(env.database(), env.store(), &env.settings);
    let stop = CancellationToken::new();
    state.live.stop_on(stop.clone());
    let app = router(state.clone(), &env.settings.api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let api = env.settings.api.clone();
    let server = tokio::spawn({
        let (app, stop) = (app.clone(), stop.clone());
        async move { serve(listener, app, &api, stop, Duration::from_secs(5)).await }
    });
    let cancel = CancellationToken::new();
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let running = tokio::spawn(projector.run(cancel.clone()));
    Served {
        env,
        state,
        app,
        addr,
        stop,
        server,
        projector: (cancel, running),
    }
}

impl Served {
    async fn post(&self, board: &str, user: &str, delta: i64) {
        let body =
            json!({"event_id": uuid::Uuid::new_v4().to_string(), "user_id": user, "delta": delta});
        let (status, answer) = send(&self.app, command(board, body.to_string())).await;
        assert!(status.is_success(), "{status} {answer}");
    }

    /// `scores` posted, projected, and the board sealed by the real rebuild.
    async fn board(&self, board: &str, scores: &[(&str, i64)]) {
        for (user, score) in scores {
            self.post(board, user, *score).await;
        }
        assert!(self.env.wait_drained(WAIT).await, "projected");
        seal(&self.env, board).await;
    }

    async fn open(&self, path: &str, headers: &[(&str, &str)]) -> EventStream {
        sse::open(self.addr, path, headers, WAIT)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    async fn stop(self) {
        self.projector.0.cancel();
        self.stop.cancel();
        let _ = self.projector.1.await;
        let _ = self.server.await;
    }
}

fn data(m: &Message) -> Value {
    serde_json::from_str(&m.data).unwrap_or_else(|e| panic!("{e}: {}", m.data))
}

/// The sequence part of a message's id.
fn sequence(m: &Message) -> i64 {
    m.id.as_deref()
        .and_then(|id| id.split_once('.'))
        .and_then(|(s, _)| s.parse().ok())
        .unwrap_or_else(|| panic!("an id <sequence>.<digest>: {m:?}"))
}

fn users(entries: &Value) -> Vec<&str> {
    entries
        .as_array()
        .unwrap_or_else(|| panic!("entries: {entries}"))
        .iter()
        .map(|e| e["user_id"].as_str().unwrap_or("?"))
        .collect()
}

/// Messages until one satisfies `wanted` (what it is, for the failure's message).
async fn until(
    stream: &mut EventStream,
    what: &str,
    wanted: impl Fn(&Value) -> bool,
) -> (Message, Value) {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let m = stream
            .next_message(left)
            .await
            .unwrap_or_else(|e| panic!("waiting for {what}: {e}; seen {seen:#?}"));
        assert_eq!(m.event.as_deref(), Some("snapshot"), "{m:?}");
        let d = data(&m);
        if wanted(&d) {
            return (m, d);
        }
        seen.push(d);
    }
}

fn pubsub(d: &Value) -> bool {
    d["freshness"]["updates"] == "pubsub"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_gets_a_snapshot_then_every_change_with_growing_ids_and_freshness() {
    let s = served(None, |_| {}).await;
    s.board("b", &[("alice", 10), ("bob", 20)]).await;
    let mut stream = s.open("/v1/boards/b/live?top=3", &[]).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    assert_eq!(stream.header("cache-control"), Some("no-cache"));
    assert_eq!(stream.header("x-accel-buffering"), Some("no"));
    let (first, d) = until(&mut stream, "the snapshot, by pub/sub", |d| {
        pubsub(d) && users(&d["top"]["entries"]) == ["bob", "alice"]
    })
    .await;
    assert_eq!(d["board"], "b");
    assert_eq!(d["top"]["total"], 2);
    let f = &d["freshness"];
    assert_eq!(
        (&f["source"], &f["projection"], &f["reason"]),
        (&json!("projection"), &json!("whole"), &Value::Null),
        "{d}"
    );
    assert!(f["lag_ms"].is_i64() && f["pending"].is_i64(), "{f}");

    s.post("b", "carol", 30).await;
    let (second, _) = until(&mut stream, "carol first", |d| {
        users(&d["top"]["entries"]) == ["carol", "bob", "alice"]
    })
    .await;
    assert!(sequence(&second) > sequence(&first), "{first:?} {second:?}");
    s.post("b", "alice", 25).await;
    let (third, d) = until(&mut stream, "alice first", |d| {
        users(&d["top"]["entries"]) == ["alice", "carol", "bob"]
    })
    .await;
    assert!(sequence(&third) > sequence(&second), "{second:?} {third:?}");
    assert_eq!(d["top"]["entries"][0]["score"], 35);
    drop(stream);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_player_sees_its_own_entry_move_below_the_top() {
    let secret = crate::players::SECRET;
    let s = served(None, |s| {
        s.auth.player_keys = format!("k1=HS256:{secret}").into();
    })
    .await;
    s.board(
        "b",
        &[("alice", 10), ("bob", 20), ("carol", 30), ("dave", 40)],
    )
    .await;
    let exp = player::now_s() + 600;
    let token = crate::players::mint("k1", secret, &crate::players::claims("alice", &["b"], exp));
    let bearer = format!("Bearer {token}");
    let mut stream = s
        .open(
            "/v1/boards/b/live?top=1&radius=1",
            &[("authorization", &bearer)],
        )
        .await;
    assert_eq!(stream.status, 200);
    let (first, d) = until(&mut stream, "alice 4th", |d| d["me"]["entry"]["rank"] == 4).await;
    assert_eq!(users(&d["top"]["entries"]), ["dave"]);
    assert_eq!(users(&d["me"]["around"]), ["bob", "alice"]);

    // Alice passes bob and carol: the first one does not change, her entry does.
    s.post("b", "alice", 25).await;
    let (second, d) = until(&mut stream, "alice 2nd", |d| d["me"]["entry"]["rank"] == 2).await;
    assert_eq!(users(&d["top"]["entries"]), ["dave"]);
    assert_eq!(users(&d["me"]["around"]), ["dave", "alice", "carol"]);
    assert_eq!(d["me"]["entry"]["score"], 35);
    assert!(sequence(&second) > sequence(&first));

    // A token that does not name the board has no own part there: refused.
    let other = crate::players::mint("k1", secret, &crate::players::claims("alice", &["x"], exp));
    let refused = s
        .open(
            "/v1/boards/b/live",
            &[("authorization", &format!("Bearer {other}"))],
        )
        .await;
    assert_eq!(refused.status, 403);
    let body: Value = serde_json::from_str(&refused.rest(WAIT).await.expect("body")).expect("JSON");
    assert_eq!(body["error"]["code"], "player_board");
    drop(stream);
    s.stop().await;
}

/// Heartbeats (every 200 ms here) are the clock of the negative wait: three of them with no
/// message in between mean no snapshot was sent again.
#[tokio::test(flavor = "multi_thread")]
async fn a_reconnect_gets_no_duplicate_when_nothing_changed_and_the_snapshot_when_it_did() {
    let s = served(None, |s| s.api.live_heartbeat_ms = Millis::of(200)).await;
    s.board("b", &[("alice", 10)]).await;
    let mut first = s.open("/v1/boards/b/live", &[]).await;
    let (m, _) = until(&mut first, "the snapshot, by pub/sub", pubsub).await;
    let id = m.id.clone().expect("an id");
    drop(first);

    let mut resumed = s.open("/v1/boards/b/live", &[("last-event-id", &id)]).await;
    let mut heartbeats = 0;
    while heartbeats < 3 {
        match resumed.next(WAIT).await.expect("the stream") {
            Some(Item::Comment(c)) => {
                assert_eq!(c, "hb");
                heartbeats += 1;
            }
            other => panic!("nothing changed since {id}, yet: {other:?}"),
        }
    }
    drop(resumed);

    s.post("b", "bob", 50).await;
    assert!(s.env.wait_drained(WAIT).await);
    let mut after = s.open("/v1/boards/b/live", &[("last-event-id", &id)]).await;
    let m = after.next_message(WAIT).await.expect("the new snapshot");
    assert_eq!(users(&data(&m)["top"]["entries"]), ["bob", "alice"]);
    assert!(
        sequence(&m)
            > id.split('.')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(i64::MAX)
    );
    drop(after);
    s.stop().await;
}

/// Per client (here the forwarded address, the peer being a trusted proxy) and per process,
/// each refusal with its status, code and Retry-After; a closed stream gives its slot back.
#[tokio::test(flavor = "multi_thread")]
async fn the_connection_caps_answer_429_and_503_with_their_codes() {
    let s = served(None, |s| {
        s.api.trusted_proxies = "127.0.0.1/32".into();
        s.api.live_max_connections = Count::of(2);
        s.api.live_max_per_client = Count::of(1);
    })
    .await;
    s.board("b", &[("alice", 10)]).await;
    let from = |ip: &'static str| [("x-forwarded-for", ip)];
    let a = s.open("/v1/boards/b/live", &from("10.0.0.1")).await;
    assert_eq!(a.status, 200);
    let twice = s.open("/v1/boards/b/live", &from("10.0.0.1")).await;
    assert_eq!(twice.status, 429);
    assert_eq!(twice.header("retry-after"), Some("5"));
    let body: Value = serde_json::from_str(&twice.rest(WAIT).await.expect("body")).expect("JSON");
    assert_eq!(body["error"]["code"], "live_client_limit");
    let c = s.open("/v1/boards/b/live", &from("10.0.0.2")).await;
    assert_eq!(c.status, 200);
    let full = s.open("/v1/boards/b/live", &from("10.0.0.3")).await;
    assert_eq!(full.status, 503);
    assert_eq!(full.header("retry-after"), Some("5"));
    let body: Value = serde_json::from_str(&full.rest(WAIT).await.expect("body")).expect("JSON");
    assert_eq!(body["error"]["code"], "live_full");
    assert_eq!(s.state.live.open(), 2);

    drop(a);
    let live = s.state.live.clone();
    assert!(
        ledgerboard_testkit::wait_until(WAIT, || async { live.open() == 1 })
            .await
            .is_some(),
        "a closed stream gives its slot back"
    );
    let again = s.open("/v1/boards/b/live", &from("10.0.0.3")).await;
    assert_eq!(again.status, 200);
    drop((c, again));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn heartbeats_arrive_and_streams_end_when_the_api_stops() {
    let s = served(None, |s| s.api.live_heartbeat_ms = Millis::of(200)).await;
    s.board("b", &[("alice", 10)]).await;
    let mut stream = s.open("/v1/boards/b/live", &[]).await;
    until(&mut stream, "the snapshot, by pub/sub", pubsub).await;
    for _ in 0..2 {
        match stream.next(WAIT).await.expect("the stream") {
            Some(Item::Comment(c)) => assert_eq!(c, "hb"),
            other => panic!("a heartbeat, not {other:?}"),
        }
    }
    let started = std::time::Instant::now();
    s.stop.cancel();
    // Heartbeats may still come before the end, but the end must come within 3 s.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match stream.next(left).await {
            Ok(None) => break,
            Ok(Some(_)) => {}
            Err(e) => panic!("the stream did not end within 3 s of the stop: {e}"),
        }
    }
    let server = tokio::time::timeout(Duration::from_secs(3), s.server)
        .await
        .expect("the server stops within its grace, streams and all");
    assert!(matches!(server, Ok(Ok(()))), "{server:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    s.projector.0.cancel();
    let _ = s.projector.1.await;
}

/// The subscriber's connection is killed and SUBSCRIBE refused (an ACL on a Redis of the
/// test's own): messages say `"updates":"polling"` and changes still arrive, by the slow
/// timer; once SUBSCRIBE is allowed again they say `pubsub`.
#[tokio::test(flavor = "multi_thread")]
async fn without_pub_sub_the_stream_polls_and_says_so() {
    let redis = ledgerboard_harness::RedisServer::start().expect("a redis-server of our own");
    let s = served(Some(redis.url()), |s| s.api.live_poll_ms = Millis::of(300)).await;
    s.board("b", &[("alice", 10)]).await;
    let mut stream = s.open("/v1/boards/b/live", &[]).await;
    until(&mut stream, "the snapshot, by pub/sub", pubsub).await;

    redis
        .command(&["ACL", "SETUSER", "default", "-subscribe"])
        .expect("ACL");
    redis
        .command(&["CLIENT", "KILL", "TYPE", "pubsub"])
        .expect("CLIENT KILL");
    until(&mut stream, "updates: polling", |d| {
        d["freshness"]["updates"] == "polling"
    })
    .await;
    s.post("b", "bob", 50).await;
    let (_, d) = until(&mut stream, "bob, by polling", |d| {
        users(&d["top"]["entries"]) == ["bob", "alice"]
    })
    .await;
    assert_eq!(d["freshness"]["updates"], "polling");

    redis
        .command(&["ACL", "SETUSER", "default", "+subscribe"])
        .expect("ACL");
    until(&mut stream, "updates: pubsub again", pubsub).await;
    drop(stream);
    s.stop().await;
}
