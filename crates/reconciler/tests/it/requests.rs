//! The rebuild requests that reads, projectors and walks leave for the reconciler daemon.

use crate::common;

use std::time::Duration;

use common::{TestEnv, drain};
use ledgerboard_core::board::definition::BoardDefinition;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::{Seal, Store, generation, read, request_rebuild};
use ledgerboard_core::ranking::RankMode;
use ledgerboard_reconciler::requests::Requests;
use ledgerboard_reconciler::settings::Sections;
use ledgerboard_testkit::wait_until;

/// A board that breaks again while its requested rebuild is still running (here: during the
/// build, in the generation about to go live), and is asked for again then, is rebuilt again by
/// the next look. The first CI failure of this design: the request was removed after the
/// rebuild, taking the second ask with it, and the board stayed broken until someone read it
/// again (chaos seed 1796144534615345377: "still not whole (Broken) 30s after the read").
/// Fails if `claim_request` is moved after the rebuild: the second serve then rebuilds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_that_comes_while_the_board_is_rebuilt_is_served_after_it() {
    let env = TestEnv::new(|s| {
        // An orphan left in place by any pass, so only a rebuild makes the board whole again.
        s.reconciler.remove_orphans = false;
    })
    .await;
    env.seed("b", 5_000, 5_000).await;
    drain(&env).await;
    let board = BoardId::parse("b").expect("board");
    let store = env.store();
    // Lost its seal: the read that saw it asked for a rebuild.
    lose_seal(&store, &board).await;
    request_rebuild(&store, &board).await.expect("ask");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Missing
    );

    // Hold the build at its first chunk: ACCESS EXCLUSIVE blocks its read of the source rows,
    // after the build's seal is written.
    let mut client = env.db.client().await;
    let tx = client.transaction().await.expect("begin");
    tx.batch_execute(
        "SET LOCAL lock_timeout = '10s'; LOCK TABLE user_scores IN ACCESS EXCLUSIVE MODE",
    )
    .await
    .expect("lock user_scores");
    let settings = env.settings.narrow::<Sections>();
    let first = tokio::spawn({
        let (db, store, settings) = (env.database(), store.clone(), settings.clone());
        async move { Requests::default().serve(&db, &store, &settings).await }
    });
    let build_seal = store.keys().rebuild_meta(&board);
    wait_until(Duration::from_secs(30), || async {
        let Ok(mut conn) = store.connection().await else {
            return false;
        };
        let exists: Option<i64> = redis::cmd("EXISTS")
            .arg(&build_seal)
            .query_async(&mut conn)
            .await
            .ok();
        exists == Some(1)
    })
    .await
    .expect("the requested rebuild never began its build");
    assert!(!first.is_finished(), "the rebuild ended while held");
    // A member added by hand to the generation about to go live (its scores alone, so the
    // switch's seal cannot count it whole), and the read that saw the board asks again.
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("ZADD")
        .arg(store.keys().rebuild_scores(&board))
        .arg(1)
        .arg("ghost")
        .query_async(&mut conn)
        .await
        .expect("ZADD");
    request_rebuild(&store, &board).await.expect("ask again");
    tx.commit().await.expect("release");
    let rebuilt = first.await.expect("serve task").expect("serve");
    assert_eq!(rebuilt, 1);
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Broken,
        "the ghost did not go live with the new generation: the test no longer tests the second ask"
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
    generation::want_distinct(&store, &board)
        .await
        .expect("mark dense");
    rebuild(&env, &board).await;
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

/// A board never read with dense ranks is rebuilt without distinct scores (no `:d`, no
/// `dcard`). Its first dense read falls back (broken), marks the board, and asks for a rebuild;
/// the request is served although every member is whole, and the rebuilt board answers dense
/// reads from Redis. Fails if the request check ignores the mark (`distinct_missing` in
/// `requests.rs`): the request is then declined as whole, and dense reads fall back for good.
#[tokio::test]
async fn a_dense_read_of_a_board_without_distinct_scores_marks_it_and_its_rebuild_keeps_them() {
    let env = TestEnv::new(|_| {}).await;
    let (board, store) = sealed_board(&env, "b").await;
    assert_eq!(
        kept_distinct(&store, &board).await,
        (None, 0),
        "an unmarked board keeps no distinct scores"
    );
    let order = BoardDefinition::implicit(board.clone()).order();
    let competition = read::top(&store, &board, order, RankMode::Competition, 0, 10)
        .await
        .expect("top");
    assert_eq!(competition.seal, Seal::Whole);
    assert!(
        !generation::distinct_missing(&store, &board)
            .await
            .expect("mark")
    );
    let dense = read::top(&store, &board, order, RankMode::Dense, 0, 10)
        .await
        .expect("top");
    assert_eq!(dense.seal, Seal::Broken, "a dense read cannot be served");
    assert!(
        generation::distinct_missing(&store, &board)
            .await
            .expect("mark"),
        "the dense read marked the board"
    );
    request_rebuild(&store, &board).await.expect("ask");
    let settings = env.settings.narrow::<Sections>();
    let served = Requests::default()
        .serve(&env.database(), &store, &settings)
        .await
        .expect("serve");
    assert_eq!(served, 1, "the request was declined as whole");
    let dense = read::top(&store, &board, order, RankMode::Dense, 0, 10)
        .await
        .expect("top");
    assert_eq!(dense.seal, Seal::Whole);
    let kept = kept_distinct(&store, &board).await;
    assert_eq!(kept.0, Some(kept.1.to_string()));
    assert!(kept.1 > 0);
    assert!(
        !generation::distinct_missing(&store, &board)
            .await
            .expect("mark")
    );
}

/// The reconciler's rebuild of `board`, as `lbctl rebuild` runs it (no pass after it).
async fn rebuild(env: &TestEnv, board: &BoardId) {
    ledgerboard_reconciler::rebuild::rebuild(
        &env.database(),
        &env.store(),
        &env.settings,
        board,
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await
    .expect("rebuild");
}

/// A board of 50 members, drained and rebuilt (sealed, no distinct scores kept).
async fn sealed_board(env: &TestEnv, name: &str) -> (BoardId, Store) {
    env.seed(name, 50, 50).await;
    drain(env).await;
    let board = BoardId::parse(name).expect("board");
    rebuild(env, &board).await;
    (board, env.store())
}

/// Deletes the board's seal (`:m`) and nothing else.
async fn lose_seal(store: &Store, board: &BoardId) {
    let mut conn = store.connection().await.expect("redis");
    let _: i64 = redis::cmd("DEL")
        .arg(store.keys().meta(board))
        .query_async(&mut conn)
        .await
        .expect("DEL");
}

/// The board's seal's `dcard` and how many distinct scores `:d` holds (0 when it is absent).
async fn kept_distinct(store: &Store, board: &BoardId) -> (Option<String>, u64) {
    let mut conn = store.connection().await.expect("redis");
    redis::pipe()
        .cmd("HGET")
        .arg(store.keys().meta(board))
        .arg("dcard")
        .cmd("ZCARD")
        .arg(store.keys().distinct(board))
        .query_async(&mut conn)
        .await
        .expect("dcard, :d")
}

/// A board whose members are all in place but whose seal was lost (its `:m` deleted, nothing
/// else) is asked for by the walk: no repair writes to it and no orphan scan runs, so the walk
/// judges the seal it read with the board's sizes (one round trip), and finds it missing.
/// Fails if that seal is taken as whole without being read.
#[tokio::test]
async fn a_walk_asks_for_a_board_whose_seal_alone_was_lost() {
    let env = TestEnv::new(|_| {}).await;
    let (board, store) = sealed_board(&env, "sl").await;
    // The projector's ask for the new board taken off, as a served request is.
    generation::claim_request(&store, generation::RequestKind::NotWhole, "sl")
        .await
        .expect("claim");
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Whole
    );
    lose_seal(&store, &board).await;
    // Before the pass: the seal is gone, nothing asked for the board.
    assert_eq!(
        read::board_seal(&store, &board).await.expect("seal"),
        Seal::Missing
    );
    let asked = || async {
        generation::requested(&store, generation::RequestKind::NotWhole, 100)
            .await
            .expect("requests")
    };
    assert!(
        asked().await.is_empty(),
        "asked before the pass: {:?}",
        asked().await
    );
    let report = common::pass(&env).await;
    assert!(report.completed, "{report:?}");
    assert_eq!(
        report.totals.missing, 0,
        "every member was in place: {report:?}"
    );
    assert_eq!(asked().await, vec!["sl".to_owned()]);
}
