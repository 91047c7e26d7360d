//! The dispatcher as a process: it keeps the start-up contract of every daemon, and one killed
//! with SIGKILL in the middle of a stream loses nothing: its lanes' leases run out, the next
//! process delivers from where the lanes stand (what was delivered but not recorded comes
//! again; receivers deduplicate by event id).

use std::time::Duration;

use crate::common::{
    Answer, Receiver, assert_all_signed, assert_in_order_per_board, env, post, subscribe, written,
};
use ledgerboard_testkit::{Process, daemon_env, env_refs, wait_until};

const BINARY: &str = env!("CARGO_BIN_EXE_ledgerboard-dispatcher");

#[tokio::test]
async fn starts_refuses_an_unmigrated_database_and_stops_cleanly() {
    ledgerboard_testkit::check_daemon_lifecycle(BINARY, "ledgerboard-dispatcher", &[]).await;
}

#[tokio::test]
async fn a_dispatcher_killed_mid_stream_and_restarted_loses_nothing() {
    let env = env(|_| {}).await;
    let db = env.database();
    // A busy receiver (20 ms an answer) and a backlog: when the process is killed, its lanes
    // are leased, in the middle of their turns.
    let receiver = Receiver::start().await;
    receiver.script(vec![], Answer::Slow(Duration::from_millis(20)));
    subscribe(&db, &receiver, "crash", 4, &[]).await;
    for i in 0..150 {
        post(&db, &format!("kb{}", i % 6), &format!("u{}", i % 7), 1).await;
    }
    let vars = vars(&env);
    let vars = env_refs(&vars);
    let mut first = Process::start_ready(BINARY, &[], &vars);

    // Commands keep coming while the dispatcher is killed and restarted.
    let poster = {
        let db = env.database();
        tokio::spawn(async move {
            for i in 150..300 {
                post(&db, &format!("kb{}", i % 6), &format!("u{}", i % 7), 1).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    wait_until(Duration::from_secs(30), || async {
        receiver.delivered_ids().len() >= 50
    })
    .await
    .expect("deliveries under way");
    let leased = leased(&env).await;
    assert!(leased > 0, "the kill must come while lanes are leased");
    first.kill();
    let at_kill = receiver.delivered_ids().len();
    let _second = Process::start_ready(BINARY, &[], &vars);
    poster.await.expect("poster");
    let client = env.db.client().await;
    let expected = written(&client).await;
    assert_eq!(expected.len(), 300);
    wait_until(Duration::from_secs(60), || async {
        receiver.delivered_ids() == expected
    })
    .await
    .unwrap_or_else(|| {
        panic!(
            "{} of {} delivered after the restart",
            receiver.delivered_ids().len(),
            expected.len()
        )
    });
    let log = receiver.log();
    assert_all_signed(&log);
    assert_in_order_per_board(&log);
    eprintln!(
        "killed after {at_kill} deliveries with {leased} lanes leased; {} requests for {} events",
        log.len(),
        expected.len()
    );
}

/// The settings of a dispatcher process on `env`: http receivers, quick retries, and a short
/// lease (above 1 s + 3 round trips of 1 s + 1 s), so a killed process's lanes come free soon.
fn vars(env: &crate::common::TestEnv) -> Vec<(String, String)> {
    let mut vars = daemon_env(&env.db, &env.redis);
    for (k, v) in [
        ("LEDGERBOARD__DISPATCHER__ALLOW_HTTP", "true"),
        ("LEDGERBOARD__DISPATCHER__ALLOW_PRIVATE_ADDRESSES", "true"),
        ("LEDGERBOARD__DISPATCHER__REQUEST_TIMEOUT_MS", "1000"),
        ("LEDGERBOARD__DISPATCHER__CONNECT_TIMEOUT_MS", "1000"),
        ("LEDGERBOARD__DISPATCHER__BACKOFF_FIRST_MS", "20"),
        ("LEDGERBOARD__DISPATCHER__BACKOFF_MAX_MS", "200"),
        ("LEDGERBOARD__DISPATCHER__POLL_INTERVAL_MS", "50"),
        ("LEDGERBOARD__DISPATCHER__BATCH_SIZE", "5"),
        ("LEDGERBOARD__DATABASE__STATEMENT_TIMEOUT_MS", "1000"),
        ("LEDGERBOARD__DISPATCHER__LEASE_MS", "8000"),
        ("LEDGERBOARD__EVENTS__SEQUENCE_INTERVAL_MS", "20"),
    ] {
        vars.push((k.into(), v.into()));
    }
    vars
}

async fn leased(env: &crate::common::TestEnv) -> i64 {
    env.db
        .client()
        .await
        .query_one(
            "SELECT count(*) FROM webhook_lanes WHERE lease_until > now()",
            &[],
        )
        .await
        .expect("leases")
        .get(0)
}

#[tokio::test]
async fn sigterm_mid_stream_finishes_the_deliveries_in_flight_and_gives_the_lanes_back() {
    let env = env(|_| {}).await;
    let db = env.database();
    let receiver = Receiver::start().await;
    receiver.script(vec![], Answer::Slow(Duration::from_millis(20)));
    subscribe(&db, &receiver, "term", 4, &[]).await;
    for i in 0..200 {
        post(&db, &format!("tb{}", i % 6), "u", 1).await;
    }
    let vars = vars(&env);
    let mut daemon = Process::start_ready(BINARY, &[], &env_refs(&vars));
    wait_until(Duration::from_secs(30), || async {
        receiver.delivered_ids().len() >= 20
    })
    .await
    .expect("deliveries under way");
    assert!(leased(&env).await > 0, "lanes are leased mid-stream");
    let status = daemon
        .terminate(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no exit on SIGTERM: {}", daemon.stderr()));
    assert!(status.success(), "{}", daemon.stderr());
    // Every lane was given back: another replica may take it at once, not after its lease.
    assert_eq!(leased(&env).await, 0, "leases left after a graceful stop");
    let delivered = receiver.delivered_ids().len();
    assert!(delivered < 200, "stopped mid-stream ({delivered} of 200)");
}
