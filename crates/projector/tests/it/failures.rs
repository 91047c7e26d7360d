//! What the projector does with a row the projection script refuses (LBCORRUPT, LBBADARG):
//! retried after a growing back-off, then parked; and, in leased mode, what it does with its
//! leases when Redis is down: gives them back at once.

use crate::common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

use common::{TestEnv, start_replica};
use ledgerboard_core::config::Millis;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::scripts::PROJECT;
use ledgerboard_projector::settings::ClaimMode;
use ledgerboard_testkit::{RedisServer, wait_until};
use tokio_util::sync::CancellationToken;

/// A member whose stored version is not a number: its row fails with LBCORRUPT and nothing
/// is written; each failure puts the next attempt further off (200 ms, then 400 ms: base 200,
/// doubling, capped at 400), and the third failure parks it with the error. The other
/// members' rows are published.
#[tokio::test]
async fn a_corrupt_member_is_retried_with_a_growing_back_off_then_parked() {
    let env = TestEnv::new(|s| {
        s.projector.max_attempts = 3;
        s.projector.retry_base_ms = Millis::of(200);
        s.projector.retry_max_ms = Millis::of(400);
        s.projector.poll_interval_ms = Millis::of(20);
    })
    .await;
    env.seed("b", 5, 5).await;
    let store = env.store();
    let board = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::cmd("HSET")
        .arg(store.keys().versions(&board))
        .arg("u000001")
        .arg("not-a-number")
        .query_async(&mut conn)
        .await
        .expect("plant");

    let cancel = CancellationToken::new();
    let (_, handle) = start_replica(&env, &cancel);
    // The delay to the next attempt, seen after each failure: attempts -> largest delay (ms).
    let delays = RefCell::new(BTreeMap::<i32, f64>::new());
    let client = env.db.client().await;
    let (client, delays_ref) = (&client, &delays);
    wait_until(Duration::from_secs(15), || async move {
        let row = client
            .query_one(
                "SELECT attempts, parked_at IS NOT NULL,
                        extract(epoch FROM next_attempt_at - now())::float8 * 1000
                 FROM leaderboard_outbox WHERE board_id = 'b' AND user_id = 'u000001'",
                &[],
            )
            .await
            .expect("the corrupt member's row");
        let (attempts, parked, delay): (i32, bool, f64) = (row.get(0), row.get(1), row.get(2));
        if attempts > 0 && !parked {
            let mut seen = delays_ref.borrow_mut();
            let largest = seen.entry(attempts).or_insert(f64::MIN);
            *largest = largest.max(delay);
        }
        parked
    })
    .await
    .expect("the corrupt row was never parked");
    cancel.cancel();
    handle.await.expect("stops");

    let delays = delays.into_inner();
    let (first, second) = (delays.get(&1).copied(), delays.get(&2).copied());
    assert!(
        first.is_some_and(|d| d > 0.0 && d <= 200.0),
        "after the first failure: {delays:?}"
    );
    assert!(
        second.is_some_and(|d| d > 200.0 && d <= 400.0),
        "after the second failure the back-off must have grown past the base: {delays:?}"
    );
    let row = client
        .query_one(
            "SELECT attempts, last_error FROM leaderboard_outbox
             WHERE board_id = 'b' AND user_id = 'u000001'",
            &[],
        )
        .await
        .expect("parked row");
    let (attempts, error): (i32, String) = (row.get(0), row.get(1));
    assert_eq!(attempts, 3);
    assert!(error.contains("LBCORRUPT"), "{error}");
    assert_eq!(env.outbox_counts().await, (0, 1, 4));
    // Nothing was written for the corrupt member, and the others are projected.
    let scores: BTreeMap<String, f64> = redis::cmd("ZRANGE")
        .arg(store.keys().scores(&board))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .expect("ZRANGE");
    let stored: String = redis::cmd("HGET")
        .arg(store.keys().versions(&board))
        .arg("u000001")
        .query_async(&mut conn)
        .await
        .expect("HGET");
    assert_eq!(stored, "not-a-number");
    let expected: BTreeMap<String, f64> = env
        .source("b")
        .await
        .into_iter()
        .filter(|(user, _)| user != "u000001")
        .map(|(user, (score, _))| (user, score as f64))
        .collect();
    assert_eq!(scores, expected);
}

/// The projection script refuses arguments that are not numbers with LBBADARG and writes
/// nothing. The projector never sends such arguments (scores and versions are integers), so
/// the script is called directly, with a good row after the bad one in the same call. The
/// refusal is the row's answer (`failed:LBBADARG …`), not an error of the call: such a row
/// takes the path of the LBCORRUPT row above (attempts, back-off, parked) instead of stalling
/// every batch as an outage would, and the other rows of its board's call still apply.
#[tokio::test]
async fn the_projection_script_refuses_bad_arguments_with_lbbadarg() {
    let env = TestEnv::new(|_| {}).await;
    let store = env.store();
    let keys = store.keys();
    let board = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    for (n, (score, version)) in [("ten", "1"), ("10", "one"), ("10", "")]
        .into_iter()
        .enumerate()
    {
        let bad = ledgerboard_core::model::EventId::from(uuid::Uuid::new_v4());
        let good = ledgerboard_core::model::EventId::from(uuid::Uuid::new_v4());
        let reply: Vec<String> = PROJECT
            .key(keys.scores(&board))
            .key(keys.versions(&board))
            .key(keys.meta(&board))
            .key(keys.distinct(&board))
            .key(keys.metadata(&board))
            .key(keys.rebuild_scores(&board))
            .key(keys.rebuild_versions(&board))
            .key(keys.rebuild_meta(&board))
            .key(keys.rebuild_distinct(&board))
            .key(keys.rebuild_metadata(&board))
            .key(keys.tombstones(&board))
            .key(keys.changes(&board))
            .key(keys.event_marker(&board, &bad))
            .key(keys.event_marker(&board, &good))
            .arg(60_000)
            // No live channel: nothing published.
            .arg("")
            .arg("b")
            // No tie key, no metadata, no moderation.
            .arg("alice")
            .arg(score)
            .arg(version)
            .arg("")
            .arg("")
            .arg("")
            .arg(format!("bob-{n}"))
            .arg("7")
            .arg("1")
            .arg("")
            .arg("")
            .arg("")
            .invoke_async(&mut conn)
            .await
            .expect("the call is answered row by row");
        assert_eq!(reply.len(), 2, "{reply:?}");
        assert!(
            reply[0].starts_with("failed:LBBADARG"),
            "{score}/{version}: {reply:?}"
        );
        // Unsealed: the board was never built.
        assert_eq!(reply[1], "applied_unsealed", "{reply:?}");
        let alice: Option<f64> = redis::cmd("ZSCORE")
            .arg(keys.scores(&board))
            .arg("alice")
            .query_async(&mut conn)
            .await
            .expect("ZSCORE");
        assert_eq!(alice, None, "nothing written for the refused row");
        let marker: bool = redis::cmd("EXISTS")
            .arg(keys.event_marker(&board, &bad))
            .query_async(&mut conn)
            .await
            .expect("EXISTS");
        assert!(!marker, "no marker for the refused row");
    }
}

/// A row refused because its member's stored state is corrupt asks for the board's rebuild,
/// and so does a call refused because a board key has the wrong type: the refused rows are
/// held back until the board is rebuilt, so the board lags and a bounded read answers from
/// PostgreSQL without reading Redis; nothing else would ask before the reconciler's next
/// pass (lbchaos: "still not whole (Broken) 30s after the read"). A row applied to a sealed
/// board, or refused for a bad argument, asks for nothing.
#[tokio::test]
async fn a_row_refused_at_corrupt_keys_asks_for_the_boards_rebuild() {
    use ledgerboard_core::model::{EventId, ProjectionEntry, UserId};
    use ledgerboard_core::projection::{RowOutcome, apply_batch};

    let env = TestEnv::new(|_| {}).await;
    let store = env.store();
    let keys = store.keys();
    let mut conn = store.connection().await.expect("redis");
    let row = |board: &BoardId, user: &str, version: i64| ProjectionEntry {
        outbox_id: 0,
        event_id: EventId::from(uuid::Uuid::new_v4()),
        board: board.clone(),
        user_id: UserId::parse(user).expect("user"),
        score: 10 * version,
        version,
        key: Default::default(),
        metadata: None,
        change: Default::default(),
    };
    let requested = async |conn: &mut _| -> Vec<String> {
        let mut boards: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.rebuild_requests())
            .query_async(conn)
            .await
            .expect("SMEMBERS");
        boards.sort();
        boards
    };
    let ttl = Duration::from_secs(60);
    let (corrupt, wrong, fine) = (
        BoardId::parse("corrupt").expect("board"),
        BoardId::parse("wrong").expect("board"),
        BoardId::parse("fine").expect("board"),
    );
    // Three boards with a member each, then sealed (a seal is what makes a row `applied`
    // rather than `applied_unsealed`, which asks for a rebuild on its own).
    let first = [
        row(&corrupt, "u1", 1),
        row(&wrong, "u1", 1),
        row(&fine, "u1", 1),
    ];
    apply_batch(&store, &first, ttl).await.expect("first batch");
    let _: () = redis::cmd("DEL")
        .arg(keys.rebuild_requests())
        .query_async(&mut conn)
        .await
        .expect("DEL");
    for b in [&corrupt, &wrong, &fine] {
        let _: () = redis::cmd("HSET")
            .arg(keys.meta(b))
            .arg("card")
            .arg(1)
            .query_async(&mut conn)
            .await
            .expect("seal");
    }
    let _: () = redis::cmd("HSET")
        .arg(keys.versions(&corrupt))
        .arg("u1")
        .arg("not-a-number")
        .query_async(&mut conn)
        .await
        .expect("corrupt a version");
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg(keys.distinct(&wrong))
        .ignore()
        .cmd("SET")
        .arg(keys.distinct(&wrong))
        .arg("a string")
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("a board key of the wrong type");

    let second = [
        row(&corrupt, "u1", 2),
        row(&wrong, "u1", 2),
        row(&fine, "u1", 2),
    ];
    let outcomes = apply_batch(&store, &second, ttl)
        .await
        .expect("second batch");
    assert!(
        matches!(&outcomes[0], RowOutcome::Failed(m) if m.contains("LBCORRUPT")),
        "{outcomes:?}"
    );
    assert!(
        matches!(&outcomes[1], RowOutcome::Failed(m) if m.contains("LBWRONGTYPE")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[2], RowOutcome::Applied);
    assert_eq!(requested(&mut conn).await, ["corrupt", "wrong"]);
}

/// Leased mode with Redis down: a claimed batch cannot be applied, and its leases (30 s) are
/// given back at once rather than left to expire, so once Redis is back every row is projected
/// long before a lease could have run out.
#[tokio::test]
async fn leases_are_released_on_a_redis_outage() {
    let mut server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |s| {
        s.projector.mode = ClaimMode::Leased;
        s.projector.lease_ms = Millis::of(30_000);
        s.projector.outage_backoff_max_ms = Millis::of(200);
        s.redis.response_timeout_ms = Millis::of(300);
        s.redis.connect_timeout_ms = Millis::of(300);
        s.database.statement_timeout_ms = Millis::of(1_000);
    })
    .await;
    env.seed("b", 50, 200).await;
    server.stop();
    let cancel = CancellationToken::new();
    let (stats, handle) = start_replica(&env, &cancel);
    wait_until(Duration::from_secs(15), || async {
        stats.snapshot().outages >= 1
    })
    .await
    .unwrap_or_else(|| panic!("no outage counted: {:?}", stats.snapshot()));
    // Between its retries (outage back-off up to 200 ms) the projector holds no lease.
    let client = env.db.client().await;
    wait_until(Duration::from_secs(5), || async {
        client
            .query_one(
                "SELECT count(*) FROM leaderboard_outbox WHERE lease_owner IS NOT NULL",
                &[],
            )
            .await
            .expect("leases")
            .get::<_, i64>(0)
            == 0
    })
    .await
    .expect("the rows stay leased after the outage");
    assert_eq!(env.outbox_counts().await, (200, 0, 0));

    server.restart();
    let drained = wait_until(Duration::from_secs(10), || async {
        env.outbox_counts().await.0 == 0
    })
    .await;
    cancel.cancel();
    handle.await.expect("stops");
    assert!(
        drained.is_some(),
        "rows still wait for their leases: {:?}",
        env.outbox_counts().await
    );
    assert_eq!(env.outbox_counts().await, (0, 0, 200));
    assert_eq!(env.projection("b").await, env.source("b").await);
}
