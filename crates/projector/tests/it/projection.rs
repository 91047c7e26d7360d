//! The projector against the real PostgreSQL and Redis.

use crate::common;

use std::time::Duration;

use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::db::outbox;
use ledgerboard_core::model::{BoardId, EventId, ProjectionEntry, UserId};
use ledgerboard_core::projection::{RowOutcome, apply_batch};
use ledgerboard_projector::Projector;
use ledgerboard_projector::settings::{ClaimMode, UnsafeRedisAction};
use ledgerboard_testkit::{RedisServer, wait_until};
use tokio_util::sync::CancellationToken;

use common::{TestEnv as Env, start_replica};

const TTL: Duration = Duration::from_secs(60);

fn entry(id: i64, board: &str, user: &str, score: i64, version: i64) -> ProjectionEntry {
    ProjectionEntry {
        outbox_id: id,
        event_id: EventId::from(uuid::Uuid::new_v4()),
        board: BoardId::parse(board).expect("board"),
        user_id: UserId::parse(user).expect("user"),
        score,
        version,
        key: Default::default(),
        metadata: None,
        change: Default::default(),
    }
}

#[tokio::test]
async fn repeated_and_reordered_deliveries_change_nothing() {
    let env = Env::new(|_| {}).await;
    let store = env.store();
    let v1 = entry(1, "b", "alice", 10, 1);
    let v2 = entry(2, "b", "alice", 25, 2);

    assert_eq!(
        apply_batch(&store, std::slice::from_ref(&v2), TTL)
            .await
            .expect("apply"),
        vec![RowOutcome::Applied]
    );
    // The same event again: its marker says duplicate.
    assert_eq!(
        apply_batch(&store, std::slice::from_ref(&v2), TTL)
            .await
            .expect("apply"),
        vec![RowOutcome::Duplicate]
    );
    // An older version arriving late is stale, and so is the same version under another event.
    let mut v2_again = v2.clone();
    v2_again.event_id = EventId::from(uuid::Uuid::new_v4());
    assert_eq!(
        apply_batch(&store, &[v1.clone(), v2_again], TTL)
            .await
            .expect("apply"),
        vec![RowOutcome::Stale, RowOutcome::Stale]
    );
    let projection = env.projection("b").await;
    assert_eq!(projection.get("alice"), Some(&(25, 2)));
    assert_eq!(projection.len(), 1);
}

#[tokio::test]
async fn a_wrong_typed_key_fails_the_row_without_writing() {
    let env = Env::new(|_| {}).await;
    let store = env.store();
    let board = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::cmd("SET")
        .arg(store.keys().versions(&board))
        .arg("oops")
        .query_async(&mut conn)
        .await
        .expect("plant");
    let outcomes = apply_batch(
        &store,
        &[entry(1, "b", "alice", 10, 1), entry(2, "c", "bob", 5, 1)],
        TTL,
    )
    .await
    .expect("apply");
    assert!(
        matches!(&outcomes[0], RowOutcome::Failed(m) if m.contains("LBWRONGTYPE")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], RowOutcome::Applied);
    // Nothing was written next to the wrong-typed key: no scores, no marker.
    let keys = env.redis.keys();
    assert!(
        !keys
            .iter()
            .any(|k| k.contains("{b}:z") || k.contains("{b}:e:")),
        "{keys:?}"
    );
}

#[tokio::test]
async fn scores_at_the_exact_range_bounds_project_exactly() {
    let env = Env::new(|_| {}).await;
    let max = (1_i64 << 53) - 1;
    let store = env.store();
    apply_batch(
        &store,
        &[
            entry(1, "b", "top", max, 1),
            entry(2, "b", "bottom", -max, 1),
            entry(3, "b", "next", max - 1, 1),
        ],
        TTL,
    )
    .await
    .expect("apply");
    let p = env.projection("b").await;
    assert_eq!(p.get("top"), Some(&(max, 1)));
    assert_eq!(p.get("bottom"), Some(&(-max, 1)));
    assert_eq!(p.get("next"), Some(&(max - 1, 1)));
}

#[tokio::test]
async fn a_crash_between_redis_and_commit_is_redelivered_to_the_same_state() {
    let env = Env::new(|_| {}).await;
    env.seed("b", 50, 200).await;
    let db = env.database();
    let store = env.store();
    {
        // The "crash": claim and apply, then drop the transaction without committing.
        let mut client = db.client().await.expect("client");
        let tx = client.transaction().await.expect("begin");
        let claimed = outbox::claim(&tx, db.statements(), 1000)
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 200);
        let entries: Vec<_> = claimed
            .into_iter()
            .map(|c| c.entry.expect("valid"))
            .collect();
        let outcomes = apply_batch(&store, &entries, TTL).await.expect("apply");
        assert!(outcomes.iter().all(|o| *o == RowOutcome::Applied));
        drop(tx);
    }
    assert_eq!(
        env.outbox_counts().await,
        (200, 0, 0),
        "nothing was published"
    );

    let projector = Projector::new(env.settings.clone(), db.clone(), store);
    let worker = projector.worker(0);
    let mut client = db.client().await.expect("client");
    let tally = worker.batch(&mut client).await.expect("redelivery");
    assert_eq!(
        (tally.claimed, tally.applied, tally.duplicate),
        (200, 0, 200)
    );
    assert_eq!(env.outbox_counts().await, (0, 0, 200));
    assert_eq!(env.projection("b").await, env.source("b").await);
}

#[tokio::test]
async fn four_replicas_drain_20000_rows_exactly_once() {
    let env = Env::new(|s| s.projector.batch_size = Count::of(500)).await;
    env.seed("alpha", 1_000, 12_000).await;
    env.seed("beta", 700, 8_000).await;
    let cancel = CancellationToken::new();
    let replicas: Vec<_> = (0..4).map(|_| start_replica(&env, &cancel)).collect();
    assert!(
        env.wait_drained(Duration::from_secs(120)).await,
        "not drained: {:?}",
        env.outbox_counts().await
    );
    cancel.cancel();
    let mut delivered = 0;
    let mut busy_replicas = 0;
    for (stats, handle) in replicas {
        handle.await.expect("replica stops");
        let s = stats.snapshot();
        assert_eq!((s.failed, s.parked), (0, 0), "{s:?}");
        delivered += s.delivered();
        busy_replicas += usize::from(s.claimed() > 0);
    }
    // Every row claimed and delivered once: no row went to two replicas.
    assert_eq!(delivered, 20_000);
    assert!(busy_replicas >= 2, "the rows were shared between replicas");
    assert_eq!(env.outbox_counts().await, (0, 0, 20_000));
    for board in ["alpha", "beta"] {
        let source = env.source(board).await;
        assert_eq!(env.projection(board).await, source, "board {board}");
    }
}

#[tokio::test]
async fn a_poison_row_is_parked_while_the_rest_drain_and_requeue_recovers_it() {
    let env = Env::new(|s| {
        s.projector.max_attempts = 3;
        s.projector.retry_base_ms = Millis::of(1);
        s.projector.retry_max_ms = Millis::of(10);
    })
    .await;
    env.seed("good", 100, 1_000).await;
    env.seed("poison", 3, 3).await;
    let store = env.store();
    let poison = BoardId::parse("poison").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::cmd("SET")
        .arg(store.keys().scores(&poison))
        .arg("not a zset")
        .query_async(&mut conn)
        .await
        .expect("plant");

    let cancel = CancellationToken::new();
    let (stats, handle) = start_replica(&env, &cancel);
    assert!(env.wait_drained(Duration::from_secs(60)).await);
    cancel.cancel();
    handle.await.expect("stops");
    assert_eq!(env.outbox_counts().await, (0, 3, 1_000));
    assert_eq!(env.projection("good").await, env.source("good").await);
    let s = stats.snapshot();
    assert_eq!(s.parked, 3, "{s:?}");
    assert_eq!(s.failed, 9, "three attempts each: {s:?}");
    let parked = outbox::list_parked(&env.database(), 10)
        .await
        .expect("list");
    assert_eq!(parked.len(), 3);
    assert!(parked.iter().all(|p| {
        p.attempts == 3
            && p.last_error
                .as_deref()
                .is_some_and(|e| e.contains("LBWRONGTYPE"))
    }));

    // The operator fixes Redis and requeues: the rows drain.
    let _: () = redis::cmd("DEL")
        .arg(store.keys().scores(&poison))
        .query_async(&mut conn)
        .await
        .expect("fix");
    assert_eq!(
        outbox::requeue_parked(&env.database(), None, Some("poison"))
            .await
            .expect("requeue"),
        3
    );
    let cancel = CancellationToken::new();
    let (_, handle) = start_replica(&env, &cancel);
    assert!(env.wait_drained(Duration::from_secs(30)).await);
    cancel.cancel();
    handle.await.expect("stops");
    assert_eq!(env.outbox_counts().await, (0, 0, 1_003));
    assert_eq!(env.projection("poison").await, env.source("poison").await);
}

#[tokio::test]
async fn redis_stopped_mid_drain_then_started_again_everything_drains() {
    let mut server = RedisServer::start();
    let env = Env::with_redis_url(Some(server.url()), |s| {
        s.projector.batch_size = Count::of(50);
        s.projector.outage_backoff_max_ms = Millis::of(200);
        s.redis.response_timeout_ms = Millis::of(300);
        s.redis.connect_timeout_ms = Millis::of(300);
    })
    .await;
    env.seed("b", 200, 6_000).await;
    let cancel = CancellationToken::new();
    let (stats, handle) = start_replica(&env, &cancel);
    // Stop Redis once part of the backlog is through.
    wait_until(Duration::from_secs(30), || async {
        env.outbox_counts().await.2 >= 500
    })
    .await
    .expect("500 rows projected before the outage");
    server.stop();
    // Several failed rounds, not a moment: each one must leave the rows pending, unparked.
    wait_until(Duration::from_secs(10), || async {
        stats.snapshot().outages >= 3
    })
    .await
    .unwrap_or_else(|| panic!("no outage counted: {:?}", stats.snapshot()));
    let (pending_during_outage, parked, _) = env.outbox_counts().await;
    assert!(
        pending_during_outage > 0,
        "the outage came too late to matter"
    );
    assert_eq!(parked, 0);
    // The restarted server has the data but not the script: NOSCRIPT, reload, resend.
    server.restart();
    assert!(
        env.wait_drained(Duration::from_secs(60)).await,
        "{:?}",
        env.outbox_counts().await
    );
    cancel.cancel();
    handle.await.expect("stops");
    let s = stats.snapshot();
    assert!(s.outages > 0, "{s:?}");
    assert_eq!((s.failed, s.parked), (0, 0), "{s:?}");
    assert_eq!(env.outbox_counts().await, (0, 0, 6_000));
    assert_eq!(env.projection("b").await, env.source("b").await);
}

#[tokio::test]
async fn redis_out_of_memory_backs_off_without_parking() {
    let server = RedisServer::start();
    let env = Env::with_redis_url(Some(server.url()), |s| {
        s.projector.outage_backoff_max_ms = Millis::of(100);
        s.projector.max_attempts = 2;
    })
    .await;
    env.seed("b", 100, 1_000).await;
    server
        .command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .expect("policy");
    server
        .command(&["CONFIG", "SET", "maxmemory", "1"])
        .expect("limit");
    let cancel = CancellationToken::new();
    let (stats, handle) = start_replica(&env, &cancel);
    // More rounds than `max_attempts` (2): had an outage charged an attempt, rows would be
    // parked by now.
    wait_until(Duration::from_secs(10), || async {
        stats.snapshot().outages >= 5
    })
    .await
    .unwrap_or_else(|| panic!("too few outages counted: {:?}", stats.snapshot()));
    assert_eq!(
        env.outbox_counts().await,
        (1_000, 0, 0),
        "nothing projected, nothing parked"
    );
    server
        .command(&["CONFIG", "SET", "maxmemory", "0"])
        .expect("free");
    assert!(env.wait_drained(Duration::from_secs(30)).await);
    cancel.cancel();
    handle.await.expect("stops");
    let s = stats.snapshot();
    assert_eq!((s.failed, s.parked, s.applied), (0, 0, 1_000), "{s:?}");
    assert_eq!(env.projection("b").await, env.source("b").await);
}

#[tokio::test]
async fn a_commit_wakes_an_idle_projector() {
    // A poll interval far longer than the test: only the NOTIFY can wake the projector.
    let env = Env::new(|s| s.projector.poll_interval_ms = Millis::of(600_000)).await;
    let cancel = CancellationToken::new();
    let (_, handle) = start_replica(&env, &cancel);
    // A command committed before the projector LISTENs would be missed until the next poll:
    // wait until its session is listening.
    let observer = env.db.client().await;
    wait_until(Duration::from_secs(10), || async {
        observer
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND query LIKE 'LISTEN %'",
                &[],
            )
            .await
            .expect("pg_stat_activity")
            .get::<_, i64>(0)
            > 0
    })
    .await
    .expect("the projector never LISTENed");
    let db = env.database();
    let command = ledgerboard_core::board::ScoreCommand::add(
        EventId::from(uuid::Uuid::new_v4()),
        BoardId::parse("live").expect("board"),
        UserId::parse("player").expect("user"),
        ledgerboard_core::model::Delta::new(42).expect("delta"),
    );
    ledgerboard_core::board::apply_score_command(&db, &command, None)
        .await
        .expect("command");
    assert!(
        env.wait_drained(Duration::from_secs(10)).await,
        "the notification did not wake it"
    );
    assert_eq!(env.projection("live").await.get("player"), Some(&(42, 1)));
    cancel.cancel();
    handle.await.expect("stops");
}

#[tokio::test]
async fn leased_mode_drains_and_takes_over_expired_leases() {
    let env = Env::new(|s| {
        s.projector.mode = ClaimMode::Leased;
        s.projector.lease_ms = Millis::of(20_000);
        s.redis.response_timeout_ms = Millis::of(500);
        s.database.statement_timeout_ms = Millis::of(1_000);
    })
    .await;
    env.seed("b", 100, 1_000).await;
    let db = env.database();
    // A replica that claimed 300 rows and died: its lease (short, by the database clock)
    // must run out before anyone else takes them.
    let client = db.client().await.expect("client");
    // Taken before the claim: the lease started no earlier.
    let lease_taken = std::time::Instant::now();
    let stolen = outbox::claim_leased(
        &client,
        db.statements(),
        300,
        "dead-replica",
        Duration::from_millis(1_500),
    )
    .await
    .expect("lease");
    assert_eq!(stolen.len(), 300);
    drop(client);

    let cancel = CancellationToken::new();
    let (stats, handle) = start_replica(&env, &cancel);
    let free_rows_done = wait_until(Duration::from_secs(10), || async {
        env.outbox_counts().await.2 >= 700
    })
    .await
    .expect("the 700 free rows drain");
    let (pending, _, published) = env.outbox_counts().await;
    // Only meaningful while the dead replica's lease (1.5 s) still runs.
    assert!(
        lease_taken.elapsed() < Duration::from_millis(1_500),
        "the free rows took {free_rows_done:?}: the lease ran out before the check"
    );
    assert_eq!(
        (pending, published),
        (300, 700),
        "leased rows wait for their lease"
    );
    assert!(env.wait_drained(Duration::from_secs(30)).await);
    cancel.cancel();
    handle.await.expect("stops");
    assert_eq!(stats.snapshot().delivered(), 1_000);
    assert_eq!(env.projection("b").await, env.source("b").await);
}

#[tokio::test]
async fn retention_deletes_old_published_rows_one_projector_at_a_time() {
    let env = Env::new(|_| {}).await;
    env.seed("b", 10, 100).await;
    let client = env.db.client().await;
    client
        .batch_execute(
            "UPDATE leaderboard_outbox SET published_at = now() - interval '2 hours' WHERE id <= 40;
             UPDATE leaderboard_outbox SET published_at = now() WHERE id > 40 AND id <= 70;",
        )
        .await
        .expect("age rows");
    let db = env.database();
    let hour = Some(Duration::from_secs(3_600));

    // While another projector holds the retention lock, this one skips.
    let mut holder = env.db.client().await;
    let tx = holder.transaction().await.expect("begin");
    tx.query_one(ledgerboard_core::db::outbox::RETENTION_LOCK.sql(), &[])
        .await
        .expect("lock");
    let skipped = outbox::retention_pass(&db, hour, None, 15, 100)
        .await
        .expect("pass");
    assert!(
        skipped.skipped && skipped.outbox_deleted == 0,
        "{skipped:?}"
    );
    tx.rollback().await.expect("release");

    let report = outbox::retention_pass(&db, hour, None, 15, 100)
        .await
        .expect("pass");
    assert_eq!(report.outbox_deleted, 40, "{report:?}");
    assert_eq!(env.outbox_counts().await, (30, 0, 30));
    // Events stay: their retention is off by default.
    let events: i64 = client
        .query_one("SELECT count(*) FROM score_events", &[])
        .await
        .expect("n")
        .get(0);
    assert_eq!(events, 100);
    // With event retention on, only events whose outbox row is gone and that are old go.
    client
        .execute(
            "UPDATE score_events SET created_at = now() - interval '3 days'",
            &[],
        )
        .await
        .expect("age");
    let report = outbox::retention_pass(&db, None, Some(Duration::from_secs(86_400)), 7, 100)
        .await
        .expect("pass");
    assert_eq!(report.events_deleted, 40);
}

#[tokio::test]
async fn an_evicting_redis_is_reported_or_refused() {
    let server = RedisServer::start();
    server
        .command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"])
        .expect("policy");
    let warn = Env::with_redis_url(Some(server.url()), |_| {}).await;
    let projector = Projector::new(warn.settings.clone(), warn.database(), warn.store());
    projector
        .check_redis()
        .await
        .expect("warn mode starts anyway");

    let refuse = Env::with_redis_url(Some(server.url()), |s| {
        s.projector.unsafe_redis = UnsafeRedisAction::Refuse;
    })
    .await;
    let projector = Projector::new(refuse.settings.clone(), refuse.database(), refuse.store());
    let err = projector.check_redis().await.expect_err("refuse mode");
    assert!(err.to_string().contains("allkeys-lru"), "{err}");

    server
        .command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .expect("policy");
    projector.check_redis().await.expect("a safe policy passes");
}

#[tokio::test]
async fn shutdown_abandons_a_stuck_batch_within_the_grace() {
    let hole = ledgerboard_testkit::BlackHole::start();
    let env = Env::with_redis_url(Some(format!("redis://{}", hole.addr())), |s| {
        s.redis.connect_timeout_ms = Millis::of(3_000);
        s.redis.response_timeout_ms = Millis::of(3_000);
        s.database.statement_timeout_ms = Millis::of(8_000);
        s.shutdown.grace_ms = Millis::of(300);
    })
    .await;
    env.seed("b", 10, 10).await;
    let cancel = CancellationToken::new();
    let (_, handle) = start_replica(&env, &cancel);
    // The batch is waiting on Redis once it holds the rows: another session can claim none.
    let client = env.db.client().await;
    let claim = format!("{} ", ledgerboard_core::db::outbox::CLAIM.sql());
    wait_until(Duration::from_secs(10), || async {
        client
            .query(&claim, &[&100_i64])
            .await
            .expect("claim")
            .is_empty()
    })
    .await
    .expect("the projector claimed the rows");
    let stopping = std::time::Instant::now();
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("run() returns")
        .expect("no panic");
    // Grace (300 ms) plus scheduling slack, well below the 3 s Redis timeout.
    assert!(
        stopping.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        stopping.elapsed()
    );
    // The abandoned rows are still pending (their locks went with the dropped session).
    assert_eq!(env.outbox_counts().await, (10, 0, 0));
    let claimable = client
        .query(&claim, &[&100_i64])
        .await
        .expect("claim after shutdown");
    assert_eq!(claimable.len(), 10, "no row is left locked");
}
