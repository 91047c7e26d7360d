//! The reconciler never reports normal progress as drift: commands committed and on their way
//! to Redis are `lagging`, a command projected while a pass looks is never `ahead`, and only
//! invented state is. Real PostgreSQL, real Redis, the real command path and a real projector.

use crate::common;

use common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ledgerboard_core::board::ScoreCommand;
use ledgerboard_core::board::apply_score_command;
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::{BoardId, Delta, UserId};
use ledgerboard_core::projection::scripts::{REPAIR, evalsha, send_pipeline};
use ledgerboard_projector::Projector;
use tokio_util::sync::CancellationToken;

/// One command through the real command path (the api's): `user` of board b gains `delta`.
async fn command(db: &Database, user: &str, delta: i64) {
    let command = ScoreCommand::add(
        uuid::Uuid::new_v4().into(),
        BoardId::parse("b").expect("board"),
        UserId::parse(user).expect("user"),
        Delta::new(delta).expect("delta"),
    );
    apply_score_command(db, &command, None)
        .await
        .expect("command");
}

/// Passes over a board that two writers keep changing (hot users, so every chunk holds members
/// the projector is writing while the pass reads) while a real projector keeps up: each pass
/// finds no drift and nothing ahead, whatever it finds lagging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_under_constant_writes_find_no_drift_and_nothing_ahead() {
    const USERS: i64 = 2_000;
    const PASSES: usize = 25;
    let env = projected_env(USERS, |s| {
        s.reconciler.chunk_size = Count::of(50);
        s.projector.poll_interval_ms = Millis::of(20);
    })
    .await;
    let cancel = CancellationToken::new();
    let projector = Projector::new(env.settings.clone(), env.database(), env.store());
    let projector = tokio::spawn(projector.run(cancel.clone()));

    let commands = Arc::new(AtomicU64::new(0));
    let writing = CancellationToken::new();
    let writers: Vec<_> = (0..2_u64)
        .map(|w| {
            let (db, stop, commands) = (env.database(), writing.clone(), commands.clone());
            tokio::spawn(async move {
                let mut n = w;
                while !stop.is_cancelled() {
                    // Every 12th user, across the whole board: each chunk of 50 has hot members.
                    let user = format!("u{:06}", (n * 12 + w) % USERS as u64);
                    command(&db, &user, 1 + (n % 5) as i64).await;
                    commands.fetch_add(1, Ordering::Relaxed);
                    n += 2;
                }
            })
        })
        .collect();

    let r = reconciler(&env);
    let opts = options(&env);
    let (mut lagging, mut checked, mut repaired_or_skipped) = (0, 0, 0);
    let started = Instant::now();
    for pass in 0..PASSES {
        let before = commands.load(Ordering::Relaxed);
        let report = r.run_once(&opts).await.expect("pass");
        let during = commands.load(Ordering::Relaxed) - before;
        let t = &report.totals;
        assert!(report.completed, "pass {pass}: {:?}", report.aborted);
        assert!(during > 0, "pass {pass}: no command ran during the pass");
        assert_eq!(t.checked, USERS as u64, "pass {pass}: {t:?}");
        assert_eq!(t.ahead, 0, "pass {pass}: progress reported as ahead: {t:?}");
        assert_eq!(
            (t.missing, t.stale, t.corrupt, t.orphan, t.drift()),
            (0, 0, 0, 0, 0),
            "pass {pass}: progress reported as drift: {t:?}"
        );
        assert_eq!(t.current + t.lagging, t.checked, "pass {pass}: {t:?}");
        lagging += t.lagging;
        checked += t.checked;
        repaired_or_skipped += t.repaired + t.skipped;
    }
    let elapsed = started.elapsed();
    writing.cancel();
    for writer in writers {
        writer.await.expect("writer");
    }
    assert_eq!(repaired_or_skipped, 0, "a pass tried to repair progress");
    eprintln!(
        "{PASSES} passes in {elapsed:?} under {} commands: {checked} rows checked, {lagging} lagging, 0 drift",
        commands.load(Ordering::Relaxed)
    );
    // The writes were real and the projector kept up: drained, Redis equals PostgreSQL.
    assert!(env.wait_drained(Duration::from_secs(30)).await);
    cancel.cancel();
    projector.await.expect("projector stops");
    assert_eq!(env.projection("b").await, env.source("b").await);
}

/// With no projector running, committed commands leave their members lagging: counted, not
/// drift, not repaired, Redis untouched. Once a member's row is parked (the projector gave up),
/// the member is stale and repaired.
#[tokio::test]
async fn committed_commands_are_lagging_until_their_row_is_parked() {
    let env = projected_env(20, |_| {}).await;
    let db = env.database();
    for user in ["u000001", "u000002", "u000003"] {
        command(&db, user, 5).await;
    }
    command(&db, "u000003", 7).await; // two pending versions of one member
    command(&db, "newcomer", 9).await; // not in Redis at all yet
    let before = env.projection("b").await;
    assert_ne!(before, env.source("b").await);

    let report = pass(&env).await;
    assert!(report.completed, "{:?}", report.aborted);
    let t = &report.totals;
    assert_eq!(
        (t.checked, t.lagging, t.current, t.drift()),
        (21, 4, 17, 0),
        "{t:?}"
    );
    assert_eq!((t.repaired, t.skipped, t.failed), (0, 0, 0), "{t:?}");
    assert_eq!(env.projection("b").await, before, "Redis changed");

    // The projector gave up on u000002's row: nothing will bring it to Redis but a repair.
    assert_eq!(env.park("b", "u000002").await, 1);
    let report = pass(&env).await;
    let t = &report.totals;
    assert_eq!(
        (t.lagging, t.stale, t.drift(), t.repaired),
        (3, 1, 1, 1),
        "{t:?}"
    );
    let (source, projection) = (env.source("b").await, env.projection("b").await);
    assert_eq!(projection.get("u000002"), source.get("u000002"));
    for user in ["u000001", "u000003", "newcomer"] {
        assert_eq!(
            projection.get(user),
            before.get(user),
            "{user} was repaired"
        );
    }
}

/// A version edited up in Redis by hand is invented state: the re-check still finds it ahead
/// (and leaves it by default); with repair_ahead the pass writes PostgreSQL's state over it.
#[tokio::test]
async fn an_invented_version_is_ahead_after_the_recheck_and_repair_ahead_restores_the_source() {
    let env = projected_env(10, |_| {}).await;
    redis_edit(&env, &["HSET", "{v}", "u000004", "99"]).await;
    redis_edit(&env, &["ZADD", "{z}", "123456", "u000004"]).await;

    let report = pass(&env).await;
    let t = &report.totals;
    assert_eq!(
        (t.ahead, t.lagging, t.drift(), t.repaired),
        (1, 0, 1, 0),
        "{t:?}"
    );
    assert_eq!(
        env.projection("b").await.get("u000004"),
        Some(&(123456, 99))
    );

    let mut forced = options(&env);
    forced.repair_ahead = true;
    let report = reconciler(&env).run_once(&forced).await.expect("pass");
    assert_eq!(
        (report.totals.ahead, report.totals.repaired),
        (1, 1),
        "{:?}",
        report.totals
    );
    assert_eq!(env.projection("b").await, env.source("b").await);
}

/// The force repair of an ahead member writes only while Redis still holds the version the
/// pass observed: a version written after the observation (here by hand, standing for the
/// projector or a person) is never overwritten with the older source state.
#[tokio::test]
async fn the_force_repair_never_overwrites_a_version_written_after_the_observation() {
    let env = projected_env(3, |_| {}).await;
    redis_edit(&env, &["HSET", "{v}", "u000001", "100"]).await;
    redis_edit(&env, &["ZADD", "{z}", "500", "u000001"]).await;
    let store = env.store();
    let board = BoardId::parse("b").expect("board");
    let keys = store.keys();
    let board_keys = [
        keys.scores(&board),
        keys.versions(&board),
        keys.meta(&board),
        keys.distinct(&board),
        keys.metadata(&board),
    ];
    let board_keys: Vec<&str> = board_keys.iter().map(String::as_str).collect();
    let source = env.source("b").await["u000001"];
    let mut conn = store.connection().await.expect("redis");
    let force = |observed: &str| {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        evalsha(&mut pipe, &REPAIR, &board_keys)
            .arg("u000001")
            .arg(source.0)
            .arg(source.1)
            .arg("force")
            .arg(observed)
            // No tie key (ties by user id), no metadata.
            .arg("")
            .arg("");
        pipe
    };
    // Observed 99; Redis holds 100 by the time the repair arrives.
    let replies = send_pipeline(&mut conn, &REPAIR, &force("99"))
        .await
        .expect("repair");
    assert_eq!(
        replies.into_iter().collect::<Result<Vec<_>, _>>().ok(),
        Some(vec!["skipped".to_owned()])
    );
    assert_eq!(env.projection("b").await.get("u000001"), Some(&(500, 100)));
    // Observed 100, still there: repaired to the source.
    let replies = send_pipeline(&mut conn, &REPAIR, &force("100"))
        .await
        .expect("repair");
    assert_eq!(
        replies.into_iter().collect::<Result<Vec<_>, _>>().ok(),
        Some(vec!["repaired".to_owned()])
    );
    assert_eq!(env.projection("b").await.get("u000001"), Some(&source));
}
