//! 10,005 boards with skewed traffic: 5 hot boards take three rows in four, 10,000 cold boards
//! one row each, interleaved in arrival order. Two projector replicas must drain them exactly and
//! in arrival order whatever the board (a cold board's row is never held back behind later hot
//! rows); then the reconciler walks the boards in bounded passes that continue one another, and
//! reports each board with drift, without ever scanning Redis's key space.

use crate::common;

use common::TestEnv;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ledgerboard_core::config::Count;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_projector::Projector;
use ledgerboard_reconciler::Reconciler;
use ledgerboard_reconciler::pass::PassOptions;
use ledgerboard_testkit::{RedisServer, seed_skewed_boards, source_boards};
use tokio_util::sync::CancellationToken;

const ROWS: i64 = 40_000;
const HOT: i64 = 5;
const HOT_USERS: i64 = 200;
const COLD: usize = 10_000;
const BATCH: usize = 250;
const WORKERS: usize = 2;
const REPLICAS: usize = 2;

/// The same boards read back from Redis, 500 boards per pipeline.
async fn projection(
    store: &Store,
    boards: &[String],
) -> BTreeMap<String, BTreeMap<String, (i64, i64)>> {
    let mut conn = store.connection().await.expect("redis");
    let mut out = BTreeMap::new();
    for chunk in boards.chunks(500) {
        let mut pipe = redis::pipe();
        for board in chunk {
            let id = BoardId::parse(board).expect("board");
            pipe.cmd("ZRANGE")
                .arg(store.keys().scores(&id))
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES");
            pipe.cmd("HGETALL").arg(store.keys().versions(&id));
        }
        let replies: Vec<redis::Value> = pipe.query_async(&mut conn).await.expect("read back");
        for (board, pair) in chunk.iter().zip(replies.chunks(2)) {
            let scores: Vec<(String, f64)> =
                redis::from_redis_value(pair[0].clone()).expect("scores");
            let versions: BTreeMap<String, i64> =
                redis::from_redis_value(pair[1].clone()).expect("versions");
            let members = scores
                .into_iter()
                .map(|(u, s)| {
                    let v = versions.get(&u).copied().unwrap_or(-1);
                    (u, (s as i64, v))
                })
                .collect();
            out.insert(board.clone(), members);
        }
    }
    out
}

/// How far arrival order was overtaken: for each cold row, the highest id among rows published
/// in an earlier batch, minus its own id (0 when no later row went first).
async fn cold_rows_overtaken_by(env: &TestEnv) -> i64 {
    env.db
        .client()
        .await
        .query_one(
            "WITH batches AS (
                 SELECT published_at, max(id) AS max_id FROM leaderboard_outbox GROUP BY published_at
             ), earlier AS (
                 SELECT published_at,
                        max(max_id) OVER (ORDER BY published_at
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS max_id
                 FROM batches
             )
             SELECT coalesce(max(greatest(e.max_id - o.id, 0)), 0)::bigint
             FROM leaderboard_outbox o JOIN earlier e USING (published_at)
             WHERE o.board_id LIKE 'cold-%'",
            &[],
        )
        .await
        .expect("overtaking")
        .get(0)
}

async fn redis_commands(server: &RedisServer) -> String {
    let client = redis::Client::open(server.url()).expect("client");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connection");
    redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .expect("INFO")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_boards_drain_in_arrival_order_and_are_reconciled_incrementally() {
    // A Redis of its own: its command statistics must show no key-space scan.
    let server = RedisServer::start();
    let env = TestEnv::with_redis_url(Some(server.url()), |s| {
        s.projector.batch_size = Count::of(BATCH);
        s.projector.workers = Count::of(WORKERS);
        s.reconciler.max_boards_per_pass = 4_000;
        // Every board listed in the bounded passes' reports (the full pass below lists 100).
        s.reconciler.report_max_boards = 20_000;
    })
    .await;
    seed_skewed_boards(&env.db.client().await, ROWS, 4, HOT, HOT_USERS).await;

    let cancel = CancellationToken::new();
    let replicas: Vec<_> = (0..REPLICAS)
        .map(|_| {
            let projector = Projector::new(env.settings.clone(), env.database(), env.store());
            tokio::spawn(projector.run(cancel.clone()))
        })
        .collect();
    assert!(
        env.wait_drained(Duration::from_secs(240)).await,
        "not drained: {:?}",
        env.outbox_counts().await
    );
    cancel.cancel();
    for replica in replicas {
        replica.await.expect("replica stops");
    }
    assert_eq!(env.outbox_counts().await, (0, 0, ROWS));

    // Correct: every board equals PostgreSQL.
    let expected = source_boards(&env.db.client().await).await;
    assert_eq!(expected.len(), COLD + HOT as usize);
    let names: Vec<String> = expected.keys().cloned().collect();
    let store = env.store();
    let projected = projection(&store, &names).await;
    let unequal: Vec<&String> = names
        .iter()
        .filter(|b| expected.get(*b) != projected.get(*b))
        .collect();
    assert!(
        unequal.is_empty(),
        "{} boards differ: {:?}",
        unequal.len(),
        &unequal[..unequal.len().min(5)]
    );

    // Fair: claims follow arrival order across boards. A row can be overtaken only by the
    // batches running beside its own; hot boards never push cold rows back.
    let overtaken = cold_rows_overtaken_by(&env).await;
    let concurrent_rows = (REPLICAS * WORKERS * BATCH) as i64;
    assert!(
        overtaken <= 2 * concurrent_rows,
        "a cold row waited behind {overtaken} later rows (batches in flight hold {concurrent_rows})"
    );
    eprintln!("cold rows overtaken by at most {overtaken} ids ({concurrent_rows} rows in flight)");

    // Drift on two cold boards, in the first and the third slice of the walk.
    let mut conn = store.connection().await.expect("redis");
    let (early, late) = (
        BoardId::parse("cold-00042").expect("board"),
        BoardId::parse("cold-09000").expect("board"),
    );
    let _: () = redis::pipe()
        .cmd("ZREM")
        .arg(store.keys().scores(&early))
        .arg("u1")
        .ignore()
        .cmd("ZADD")
        .arg(store.keys().scores(&late))
        .arg(5)
        .arg("u1")
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("plant drift");

    // Passes of at most 4,000 boards continue one another: 3 of them cover every board.
    let reconciler = Reconciler::new(env.settings.clone(), env.database(), env.store());
    let options = PassOptions::from_settings(&env.settings.reconciler);
    let mut covered = BTreeSet::new();
    let mut resumed = Vec::new();
    let mut repaired_boards = BTreeMap::new();
    for _ in 0..3 {
        let report = reconciler.run_once(&options).await.expect("pass");
        assert!(report.completed && report.more, "{:?}", report.aborted);
        assert_eq!(report.boards.len(), 4_000);
        resumed.push(report.resumed_after.clone());
        for b in &report.boards {
            assert!(
                covered.insert(b.board.clone()) || resumed.len() == 3,
                "{} twice",
                b.board
            );
            if b.counts.repaired > 0 {
                repaired_boards.insert(b.board.clone(), b.counts.clone());
            }
            assert_eq!(
                b.counts.checked,
                expected[&b.board].len() as u64,
                "{}",
                b.board
            );
        }
    }
    assert_eq!(
        covered.len(),
        COLD + HOT as usize,
        "every board in three passes"
    );
    assert_eq!(
        resumed,
        vec![
            None,
            Some("cold-03999".to_owned()),
            Some("cold-07999".to_owned())
        ]
    );
    assert_eq!(repaired_boards.len(), 2, "{repaired_boards:?}");
    assert_eq!(repaired_boards["cold-00042"].missing, 1);
    assert_eq!(repaired_boards["cold-09000"].corrupt, 1);

    // A pass over every board whose report lists 100: the one board with drift (planted
    // again, far past the first 100 in the walk) is listed, clean ones fill the rest, and
    // every board counts.
    let _: () = redis::cmd("ZADD")
        .arg(store.keys().scores(&late))
        .arg(6)
        .arg("u1")
        .query_async(&mut conn)
        .await
        .expect("plant drift again");
    let mut all = options.clone();
    all.max_boards = 0;
    all.report_max_boards = 100;
    let full = reconciler.run_once(&all).await.expect("full pass");
    assert!(full.completed && !full.more);
    assert_eq!(full.boards_visited, (COLD + HOT as usize) as u64);
    assert_eq!(full.boards.len(), 100);
    assert_eq!(full.boards_unlisted, full.boards_visited - 100);
    let noteworthy: Vec<&str> = full
        .boards
        .iter()
        .filter(|b| b.counts.drift() > 0)
        .map(|b| b.board.as_str())
        .collect();
    assert_eq!(noteworthy, ["cold-09000"]);
    assert_eq!(full.totals.corrupt, 1, "{:?}", full.totals);
    assert_eq!(full.totals.drift(), 1, "{:?}", full.totals);
    let members: usize = expected.values().map(BTreeMap::len).sum();
    assert_eq!(full.totals.checked, members as u64);
    eprintln!(
        "full pass over {} boards: {} ms",
        full.boards_visited, full.duration_ms
    );
    drop(conn);
    assert_eq!(projection(&store, &names).await, expected);

    let stats = redis_commands(&server).await;
    for scan in ["cmdstat_scan:", "cmdstat_keys:"] {
        assert!(!stats.contains(scan), "the key space was scanned:\n{stats}");
    }
}
