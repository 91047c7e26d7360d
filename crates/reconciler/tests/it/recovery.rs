//! The reconciler recovering from what others left behind: a lock whose holder died, a pass
//! aborted half-way, a Redis whose script cache was emptied, a rebuild that died half-way.

use crate::common;

use std::time::{Duration, Instant};

use common::{TestEnv, drain, options, reconciler, redis_edit};
use ledgerboard_core::config::{Count, Millis};
use ledgerboard_core::model::BoardId;
use ledgerboard_reconciler::ReconcilerError;
use ledgerboard_reconciler::rebuild::rebuild;
use ledgerboard_testkit::{RedisServer, wait_until};

async fn redis_conn(env: &TestEnv) -> redis::aio::MultiplexedConnection {
    redis::Client::open(env.settings.redis.url.as_str())
        .expect("redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("redis connection")
}

async fn zcard(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> u64 {
    redis::cmd("ZCARD")
        .arg(key)
        .query_async(conn)
        .await
        .expect("ZCARD")
}

/// A replica took the lock and died: nobody renews it, nobody releases it. Until its TTL runs
/// out every pass is `Busy`; then the next one takes it and completes.
#[tokio::test]
async fn a_lock_left_by_a_dead_holder_is_taken_once_it_expires() {
    let env = TestEnv::new(|_| {}).await;
    env.seed("b", 20, 20).await;
    drain(&env).await;
    let lock = env.store().keys().reconciler_lock();
    let mut conn = redis_conn(&env).await;
    let _: () = redis::cmd("SET")
        .arg(&lock)
        .arg("dead-replica-token")
        .arg("PX")
        .arg(1_500)
        .query_async(&mut conn)
        .await
        .expect("the dead holder's lock");
    let planted = Instant::now();
    let r = reconciler(&env);
    let opts = options(&env);
    assert!(
        matches!(r.run_once(&opts).await, Err(ReconcilerError::Busy)),
        "a live lock of another holder was taken"
    );
    let found = std::sync::Mutex::new(None);
    let (runner, opts_ref, found_ref) = (&r, &opts, &found);
    let took = wait_until(Duration::from_secs(10), || async move {
        match runner.run_once(opts_ref).await {
            Ok(pass) => {
                *found_ref.lock().expect("report slot") = Some(pass);
                true
            }
            Err(ReconcilerError::Busy) => false,
            Err(e) => panic!("{e}"),
        }
    })
    .await
    .expect("the dead holder's lock was never taken over");
    assert!(
        planted.elapsed() >= Duration::from_millis(1_400),
        "taken after {took:?}, before the dead holder's lock expired"
    );
    let report = found.into_inner().expect("report slot").expect("a pass");
    assert!(report.completed, "{report:?}");
    assert_eq!(report.totals.checked, 20, "{:?}", report.totals);
    // Released at the end: the key is gone, not left to expire.
    let held: Option<String> = redis::cmd("GET")
        .arg(&lock)
        .query_async(&mut conn)
        .await
        .expect("GET");
    assert_eq!(held, None);
}

/// A pass that loses its lock in the middle of board `b` stops; the next pass (any replica)
/// resumes after `a`, the last board it finished, walks `b` and `c`, then wraps round to `a`.
#[tokio::test]
async fn a_pass_aborted_midway_is_resumed_after_its_last_finished_board() {
    let env = TestEnv::new(|s| {
        s.reconciler.chunk_size = Count::of(50);
        s.reconciler.lock_renew_ms = Millis::of(100);
        s.reconciler.lock_ttl_ms = Millis::of(1_000);
    })
    .await;
    // Rows projected into a Redis that then lost them: every member is missing.
    env.seed("a", 20, 20).await;
    env.seed("b", 20_000, 20_000).await;
    env.seed("c", 20, 20).await;
    for board in ["a", "b", "c"] {
        env.mark_published(board).await;
    }
    let store = env.store();
    let scores = |board: &str| store.keys().scores(&BoardId::parse(board).expect("board"));
    let r = reconciler(&env);
    let opts = options(&env);
    let pass = tokio::spawn(async move { r.run_once(&opts).await });
    let mut conn = redis_conn(&env).await;
    // Board a is done and b is under way: take the lock from the pass.
    while zcard(&mut conn, &scores("b")).await < 500 {
        assert!(
            !pass.is_finished(),
            "the pass ended before its lock could be taken"
        );
        tokio::task::yield_now().await;
    }
    let _: () = redis::cmd("SET")
        .arg(store.keys().reconciler_lock())
        .arg("intruder")
        .query_async(&mut conn)
        .await
        .expect("steal the lock");
    let aborted = pass.await.expect("task").expect("pass ran");
    assert!(!aborted.completed, "{aborted:?}");
    assert_eq!(aborted.resumed_after, None);
    assert_eq!(zcard(&mut conn, &scores("a")).await, 20);
    assert_eq!(
        zcard(&mut conn, &scores("c")).await,
        0,
        "c is after the abort"
    );

    // The intruder goes away; the next pass takes up the walk where the aborted one stopped.
    let _: () = redis::cmd("DEL")
        .arg(store.keys().reconciler_lock())
        .query_async(&mut conn)
        .await
        .expect("DEL");
    let resumed = reconciler(&env)
        .run_once(&options(&env))
        .await
        .expect("pass");
    assert!(resumed.completed, "{resumed:?}");
    assert_eq!(resumed.resumed_after.as_deref(), Some("a"), "{resumed:?}");
    let order: Vec<&str> = resumed.boards.iter().map(|b| b.board.as_str()).collect();
    assert_eq!(order, ["b", "c", "a"]);
    for board in ["a", "b", "c"] {
        assert_eq!(
            env.projection(board).await,
            env.source(board).await,
            "{board}"
        );
    }
}

/// Drift for each of the pass's scripts: repair (a wrong score, a lost member) and
/// remove_orphan (a member with no source row).
async fn plant_one_drift_per_script(env: &TestEnv) {
    redis_edit(env, &["ZADD", "{z}", "999", "u000001"]).await;
    redis_edit(env, &["ZREM", "{z}", "u000002"]).await;
    redis_edit(env, &["HDEL", "{v}", "u000002"]).await;
    redis_edit(env, &["ZADD", "{z}", "5", "ghost"]).await;
    redis_edit(env, &["HSET", "{v}", "ghost", "1"]).await;
}

/// A Redis restarted (or failed over) has an empty script cache: every script the reconciler
/// sends by its SHA answers NOSCRIPT once, is loaded and sent again. The repairs, the orphan
/// removal, the lock's renewal and release and a rebuild all work on such a server.
#[tokio::test]
async fn the_reconcilers_scripts_are_reloaded_after_the_script_cache_is_emptied() {
    let mut server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |s| {
        s.reconciler.chunk_size = Count::of(5);
        s.reconciler.lock_renew_ms = Millis::of(100);
    })
    .await;
    env.seed("b", 20, 20).await;
    drain(&env).await;
    for emptied in ["SCRIPT FLUSH", "a restart"] {
        plant_one_drift_per_script(&env).await;
        if emptied == "SCRIPT FLUSH" {
            server.command(&["SCRIPT", "FLUSH"]).expect("SCRIPT FLUSH");
        } else {
            server.stop();
            server.restart();
        }
        let report = reconciler(&env)
            .run_once(&options(&env))
            .await
            .expect("pass");
        assert!(report.completed, "after {emptied}: {report:?}");
        let t = &report.totals;
        assert_eq!(
            (
                t.corrupt, t.missing, t.orphan, t.repaired, t.removed, t.failed
            ),
            (1, 1, 1, 2, 1, 0),
            "after {emptied}: {report:?}"
        );
        assert!(
            report.boards.iter().all(|b| b.error.is_none()),
            "{report:?}"
        );
        assert_eq!(env.projection("b").await, env.source("b").await);
    }

    // The rebuild's chunk and switch scripts too.
    server.command(&["SCRIPT", "FLUSH"]).expect("SCRIPT FLUSH");
    let report = rebuild(
        &env.database(),
        &env.store(),
        &env.settings,
        &BoardId::parse("b").expect("board"),
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await
    .expect("rebuild after SCRIPT FLUSH");
    assert_eq!(report.rows, 20);
    assert_eq!(env.projection("b").await, env.source("b").await);
}

/// A rebuild that died half-way (its process killed) leaves its new generation behind: some
/// rows in `:rebuild` keys and a seal that expires with the lock's TTL. The next rebuild
/// deletes that generation before it starts, so nothing of the dead one reaches the live
/// board, and no `:rebuild` or `:retired` key is left afterwards.
#[tokio::test]
async fn a_rebuild_that_died_half_way_is_cleaned_up_by_the_next_one() {
    let env = TestEnv::new(|s| {
        s.reconciler.chunk_size = Count::of(10);
        s.reconciler.lock_ttl_ms = Millis::of(1_000);
        s.reconciler.lock_renew_ms = Millis::of(100);
    })
    .await;
    env.seed("b", 3_000, 3_000).await;
    drain(&env).await;
    let board = BoardId::parse("b").expect("board");
    let store = env.store();
    let keys = store.keys().clone();
    let (db, settings, rebuilding) = (env.database(), env.settings.clone(), board.clone());
    let first = tokio::spawn({
        let store = store.clone();
        async move {
            rebuild(
                &db,
                &store,
                &settings,
                &rebuilding,
                Duration::from_secs(10),
                ledgerboard_reconciler::rebuild::Verify::No,
            )
            .await
        }
    });
    let mut conn = redis_conn(&env).await;
    while zcard(&mut conn, &keys.rebuild_scores(&board)).await < 50 {
        assert!(
            !first.is_finished(),
            "the rebuild ended before it could be killed"
        );
        tokio::task::yield_now().await;
    }
    // Killed: nothing of it runs any more (its lock's renewal went with it).
    first.abort();
    assert!(first.await.is_err_and(|e| e.is_cancelled()));
    // What a dead build may hold that the source no longer has.
    let _: () = redis::pipe()
        .cmd("ZADD")
        .arg(keys.rebuild_scores(&board))
        .arg(1)
        .arg("ghost")
        .ignore()
        .cmd("HSET")
        .arg(keys.rebuild_versions(&board))
        .arg("ghost")
        .arg(1)
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("plant");
    let leftovers = env.redis.keys();
    assert!(
        leftovers.contains(&keys.rebuild_scores(&board)),
        "{leftovers:?}"
    );

    // The next rebuild waits for the dead one's lock to expire, then starts clean.
    let report = rebuild(
        &env.database(),
        &store,
        &env.settings,
        &board,
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::Pass,
    )
    .await
    .expect("the next rebuild");
    assert_eq!(report.rows, 3_000);
    assert!(
        report.verify.as_ref().is_some_and(|p| p.completed),
        "{:?}",
        report.verify
    );
    assert_eq!(env.projection("b").await, env.source("b").await);
    let generations = [
        keys.rebuild_scores(&board),
        keys.rebuild_versions(&board),
        keys.rebuild_meta(&board),
        keys.retired_scores(&board),
        keys.retired_versions(&board),
    ];
    let left: Vec<String> = env
        .redis
        .keys()
        .into_iter()
        .filter(|k| generations.contains(k))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}
