//! The rebuild requests that reads, projectors and walks leave for the reconciler daemon.

use crate::common;

use std::time::Duration;

use common::{TestEnv, drain, redis_edit};
use ledgerboard_core::board::definition::BoardDefinition;
use ledgerboard_core::config::Count;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::{Seal, read, request_rebuild};
use ledgerboard_core::ranking::RankMode;
use ledgerboard_reconciler::requests::Requests;
use ledgerboard_reconciler::settings::Sections;
use ledgerboard_testkit::wait_until;

/// A board that breaks again while its requested rebuild is still running (here: after the
/// switch, during the catch-up pass), and is asked for again then, is rebuilt again by the
/// next look. The first CI failure of this design: the request was removed after the rebuild,
/// taking the second ask with it, and the board stayed broken until someone read it again
/// (chaos seed 1796144534615345377: "still not whole (Broken) 30s after the read").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_that_comes_while_the_board_is_rebuilt_is_served_after_it() {
    let env = TestEnv::new(|s| {
        // Many chunks, so the catch-up pass after the switch can be held between two of them;
        // and an orphan left in place by it, so only a rebuild makes the board whole again.
        s.reconciler.chunk_size = Count::of(100);
        s.reconciler.remove_orphans = false;
    })
    .await;
    env.seed("b", 5_000, 5_000).await;
    drain(&env).await;
    let board = BoardId::parse("b").expect("board");
    let store = env.store();
    // Lost its seal: the read that saw it asked for a rebuild.
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("DEL")
        .arg(store.keys().meta(&board))
        .query_async(&mut conn)
        .await
        .expect("DEL");
    request_rebuild(&store, &board).await.expect("ask");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Missing
    );

    let settings = env.settings.narrow::<Sections>();
    let first = tokio::spawn({
        let (db, store, settings) = (env.database(), store.clone(), settings.clone());
        async move { Requests::default().serve(&db, &store, &settings).await }
    });
    // The switch sealed the new generation; its catch-up pass is running.
    wait_until(Duration::from_secs(60), || async {
        read::board_seal(&store, &board).await.ok() == Some(Seal::Whole)
    })
    .await
    .expect("the requested rebuild never switched");
    // Hold the catch-up between two chunks: ACCESS EXCLUSIVE waits for the chunk being read
    // and blocks the next one.
    let mut client = env.db.client().await;
    let tx = client.transaction().await.expect("begin");
    tx.batch_execute(
        "SET LOCAL lock_timeout = '10s'; LOCK TABLE user_scores IN ACCESS EXCLUSIVE MODE",
    )
    .await
    .expect("lock user_scores");
    assert!(
        !first.is_finished(),
        "the rebuild and its catch-up ended before the board could be broken during them"
    );
    // A member added by hand right after the switch, and the read that saw it asks.
    redis_edit(&env, &["ZADD", "{z}", "1", "ghost"]).await;
    redis_edit(&env, &["HSET", "{v}", "ghost", "1"]).await;
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Broken
    );
    request_rebuild(&store, &board).await.expect("ask again");
    tx.commit().await.expect("release");
    let rebuilt = first.await.expect("serve task").expect("serve");
    assert_eq!(rebuilt, 1);
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Broken,
        "the catch-up pass removed the orphan: the test no longer tests the second ask"
    );

    // The daemon's next look, 250 ms later.
    let rebuilt = Requests::default()
        .serve(&env.database(), &store, &settings)
        .await
        .expect("serve");
    assert_eq!(rebuilt, 1, "the ask made during the rebuild was lost");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Whole
    );
    assert_eq!(env.projection("b").await, env.source("b").await);
    // And nothing is left to serve: a board found whole is not rebuilt again.
    request_rebuild(&store, &board).await.expect("a late ask");
    let rebuilt = Requests::default()
        .serve(&env.database(), &store, &settings)
        .await
        .expect("serve");
    assert_eq!(rebuilt, 0, "a whole board was rebuilt again");
    let mut conn = store.connection().await.expect("redis");
    let left: u64 = redis::cmd("SCARD")
        .arg(store.keys().rebuild_requests())
        .query_async(&mut conn)
        .await
        .expect("SCARD");
    assert_eq!(left, 0);
}

/// Issue 35: a board whose distinct scores (`:d`) no longer match the seal's `dcard` serves
/// every dense read from PostgreSQL, and each such read asks for a rebuild. The request check
/// judged the seal without `dcard`, found the board whole and declined the request, so the
/// board stayed broken for dense reads for ever. Now it is not whole, and the request is served.
#[tokio::test]
async fn a_board_with_wrong_distinct_scores_is_not_whole_and_its_request_is_served() {
    let env = TestEnv::new(|_| {}).await;
    env.seed("b", 50, 50).await;
    drain(&env).await;
    let board = BoardId::parse("b").expect("board");
    let store = env.store();
    ledgerboard_reconciler::rebuild::rebuild(
        &env.database(),
        &store,
        &env.settings,
        &board,
        Duration::from_secs(10),
    )
    .await
    .expect("rebuild");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Whole
    );
    // A distinct score added by hand: members, versions and metadata still match the seal.
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("ZADD")
        .arg(store.keys().distinct(&board))
        .arg(123_456_789)
        .arg("123456789")
        .query_async(&mut conn)
        .await
        .expect("ZADD :d");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Broken,
        "a seal whose dcard disagrees with :d is not whole"
    );
    // The read script counts :d only for a dense read: a dense page sees the wrong :d,
    // a competition page (which never reads :d) is served whole.
    let order = BoardDefinition::implicit(board.clone()).order();
    for (mode, seal) in [
        (RankMode::Dense, Seal::Broken),
        (RankMode::Competition, Seal::Whole),
    ] {
        let page = read::top(&store, &board, order, mode, 0, 10)
            .await
            .expect("top");
        assert_eq!((mode, page.seal), (mode, seal));
    }
    request_rebuild(&store, &board).await.expect("ask");
    let settings = env.settings.narrow::<Sections>();
    let served = Requests::default()
        .serve(&env.database(), &store, &settings)
        .await
        .expect("serve");
    assert_eq!(served, 1, "the request was declined as whole");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Whole
    );
    let distinct: Option<f64> = redis::cmd("ZSCORE")
        .arg(store.keys().distinct(&board))
        .arg("123456789")
        .query_async(&mut conn)
        .await
        .expect("ZSCORE :d");
    assert_eq!(
        distinct, None,
        "the rebuild counted the distinct scores afresh"
    );
}
