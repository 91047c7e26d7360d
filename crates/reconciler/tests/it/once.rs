//! `ledgerboard-reconciler --once` as an operator runs it: the acceptance scenario.

use crate::common;

use common::TestEnv;
use std::time::Duration;

use ledgerboard_core::model::BoardId;
use ledgerboard_projector::Projector;
use ledgerboard_testkit::Process;

const BINARY: &str = env!("CARGO_BIN_EXE_ledgerboard-reconciler");

/// The settings that point the binary at the test's database and Redis namespace.
fn daemon_env(env: &TestEnv) -> Vec<(&'static str, &str)> {
    vec![
        (
            "LEDGERBOARD__DATABASE__URL",
            env.settings.database.url.as_str(),
        ),
        ("LEDGERBOARD__REDIS__URL", env.settings.redis.url.as_str()),
        (
            "LEDGERBOARD__REDIS__NAMESPACE",
            env.settings.redis.namespace.as_str(),
        ),
    ]
}

fn once(env: &TestEnv, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["--once"];
    args.extend_from_slice(extra);
    let mut command = std::process::Command::new(BINARY);
    command.args(&args).envs(daemon_env(env));
    let output = command.output().expect("run the reconciler");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON report on stdout")
}

/// Three hand edits (a wrong score, a deleted version, a deleted member): one pass reports each
/// in a drift class, none as current, and leaves the projection equal to PostgreSQL; a second
/// pass finds nothing to repair.
#[tokio::test]
async fn three_hand_edits_are_found_and_repaired_in_one_pass() {
    let env = TestEnv::new(|_| {}).await;
    env.seed("b", 5, 5).await;
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let mut client = env.database().client().await.expect("client");
    projector
        .worker(0)
        .batch(&mut client)
        .await
        .expect("project");
    let store = env.store();
    let board = BoardId::parse("b").expect("board");
    let (z, v) = (store.keys().scores(&board), store.keys().versions(&board));
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(&z)
        .arg(123456)
        .arg("u000000")
        .cmd("HDEL")
        .arg(&v)
        .arg("u000001")
        .cmd("ZREM")
        .arg(&z)
        .arg("u000002")
        .query_async(&mut conn)
        .await
        .expect("hand edits");

    let dry = once(&env, &["--dry-run", "--board", "b"]);
    assert_eq!(dry["totals"]["repaired"], 0);
    let report = once(&env, &[]);
    let t = &report["totals"];
    assert_eq!(report["completed"], true);
    assert_eq!(
        (
            t["corrupt"].as_u64(),
            t["missing"].as_u64(),
            t["current"].as_u64()
        ),
        (Some(1), Some(2), Some(2)),
        "{report}"
    );
    assert_eq!(t["repaired"], 3);
    assert!(report["rows_per_s"].is_number() && report["duration_ms"].is_number());
    assert_eq!(env.projection("b").await, env.source("b").await);

    let second = once(&env, &[]);
    assert_eq!(
        (
            second["totals"]["repaired"].as_u64(),
            second["totals"]["current"].as_u64()
        ),
        (Some(0), Some(5)),
        "{second}"
    );
}

#[tokio::test]
async fn the_daemon_reconciles_on_its_schedule_and_stops_cleanly() {
    let env = TestEnv::new(|_| {}).await;
    env.seed("b", 3, 3).await;
    env.mark_published("b").await; // projected, then lost from Redis: all missing
    let mut envs = daemon_env(&env);
    envs.extend([
        ("LEDGERBOARD__RECONCILER__INTERVAL_MS", "200"),
        ("LEDGERBOARD__SHUTDOWN__GRACE_MS", "1000"),
        ("LEDGERBOARD__RECONCILER__ADMIN_LISTEN", "127.0.0.1:0"),
    ]);
    let mut daemon = Process::start(BINARY, &[], &envs);
    assert!(
        daemon.wait_for_log("reconciliation pass", Duration::from_secs(20)),
        "{}",
        daemon.stderr()
    );
    let repaired = ledgerboard_testkit::wait_until(Duration::from_secs(10), || async {
        env.projection("b").await == env.source("b").await
    })
    .await;
    assert!(repaired.is_some(), "not repaired: {}", daemon.stderr());
    let status = daemon
        .terminate(Duration::from_secs(10))
        .expect("stops on SIGTERM");
    assert!(status.success(), "{}", daemon.stderr());
}
