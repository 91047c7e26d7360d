//! The reconciler and the online rebuild in cluster mode, on a Redis Cluster of the test's own:
//! the lock, a repair, a rebuild (its six keys share the board's slot), and a pass after the
//! board's slot moved to another master.

use crate::common;

use common::TestEnv;

use std::time::Duration;

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::cluster_slot;
use ledgerboard_harness::RedisCluster;
use ledgerboard_reconciler::pass::PassOptions;
use ledgerboard_reconciler::{Reconciler, rebuild};

#[tokio::test]
async fn reconcile_and_rebuild_work_on_a_cluster() {
    let cluster = RedisCluster::start().expect("a local Redis Cluster");
    let env = TestEnv::with_redis_url(Some(cluster.seeds().join(",")), |s| {
        s.redis.cluster = true;
    })
    .await;
    for board in ["b", "c", "d"] {
        env.seed(board, 300, 600).await;
    }
    common::drain(&env).await;
    for board in ["b", "c", "d"] {
        assert_eq!(
            env.projection(board).await,
            env.source(board).await,
            "{board}"
        );
    }

    // A member lost from board b: one pass under the lock repairs it.
    let store = env.store();
    let b = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("connection");
    let _: i64 = redis::cmd("ZREM")
        .arg(store.keys().scores(&b))
        .arg("u000007")
        .query_async(&mut conn)
        .await
        .expect("ZREM");
    drop(conn);
    let reconciler = Reconciler::new(env.settings.clone(), env.database(), env.store());
    let options = PassOptions::from_settings(&env.settings.reconciler);
    let report = reconciler.run_once(&options).await.expect("pass");
    assert!(report.completed, "{:?}", report.aborted);
    assert_eq!(report.boards.len(), 3);
    assert_eq!((report.totals.missing, report.totals.repaired), (1, 1));
    assert_eq!(env.projection("b").await, env.source("b").await);

    // An online rebuild: build, switch (one script over the board's keys), verifying pass.
    let rebuilt = rebuild::rebuild(
        &env.database(),
        &env.store(),
        &env.settings,
        &b,
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::Pass,
    )
    .await
    .expect("rebuild");
    assert_eq!(rebuilt.rows, 300);
    assert!(rebuilt.verify.as_ref().is_some_and(|p| p.completed));
    assert_eq!(env.projection("b").await, env.source("b").await);

    // The board's slot moves; the next pass reads and judges it on its new master.
    cluster
        .migrate_slot(cluster_slot(&store.keys().scores(&b)))
        .expect("slot migration");
    let after = reconciler
        .run_once(&options)
        .await
        .expect("pass after the move");
    assert!(after.completed, "{:?}", after.aborted);
    assert_eq!(after.totals.drift(), 0, "{:?}", after.totals);
    assert_eq!(after.totals.checked, 900);
}
