//! Identical top reads in flight at once share one Redis read; a finished read is never
//! reused. Against a private redis-server, whose command counters are this test's alone.

use std::sync::Arc;

use ledgerboard_api::coalesce::{Start, TopReads, TopRequest};
use ledgerboard_core::board::definition::{Order, Sort, TieBreak};
use ledgerboard_core::config::{Count, RedisSettings};
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::Store;
use ledgerboard_core::ranking::RankMode;
use ledgerboard_testkit::RedisServer;

/// `ZRANGE` calls the server has answered so far.
async fn zrange_calls(store: &Store) -> u64 {
    let mut conn = store.connection().await.expect("connection");
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .expect("info");
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_zrange:calls="))
        .and_then(|l| l.split(',').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

/// A page of a descending board whose ties go by user id.
fn page(board: &BoardId, mode: RankMode, offset: u64, limit: u64) -> TopRequest {
    TopRequest {
        board: board.clone(),
        order: Order::of(Sort::Descending, TieBreak::UserId),
        mode,
        start: Start::Offset(offset),
        limit,
    }
}

#[tokio::test]
async fn concurrent_identical_reads_share_one_redis_read() {
    let server = RedisServer::start();
    let settings = RedisSettings {
        url: server.url().into(),
        namespace: "coalesce".into(),
        pool_max_size: Count::of(64),
        ..RedisSettings::default()
    };
    let store = Store::connect(&settings).expect("store");
    let board = BoardId::parse("hot").expect("board");
    let key = store.keys().scores(&board);
    let mut conn = store.connection().await.expect("connection");
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(&key);
    for i in 0..5_000 {
        zadd.arg(i).arg(format!("player-{i}"));
    }
    let () = zadd.query_async(&mut conn).await.expect("seed");

    let reads = Arc::new(TopReads::default());
    let before = zrange_calls(&store).await;
    let requests = 200;
    let mut tasks = Vec::new();
    for _ in 0..requests {
        let (reads, store, board) = (reads.clone(), store.clone(), board.clone());
        tasks.push(tokio::spawn(async move {
            let request = page(&board, RankMode::Ordinal, 0, 100);
            reads.top(&store, &request).await.expect("read")
        }));
    }
    let mut pages = Vec::new();
    for t in tasks {
        pages.push(t.await.expect("task"));
    }
    let sent = zrange_calls(&store).await - before;
    assert!(
        (1..requests / 2).contains(&sent),
        "{sent} Redis reads for {requests} concurrent identical requests"
    );
    for page in &pages {
        assert_eq!(page.value.entries.len(), 100);
        assert_eq!(page.value.entries[0].user_id, "player-4999");
        assert_eq!(page.value, pages[0].value);
    }

    // Another page is another read, and a finished read is not served again: a change made
    // after it is seen by the next request.
    let other = reads
        .top(&store, &page(&board, RankMode::Ordinal, 100, 10))
        .await
        .expect("read");
    assert_eq!(other.value.entries[0].user_id, "player-4899");
    let () = redis::cmd("ZADD")
        .arg(&key)
        .arg(1_000_000)
        .arg("newcomer")
        .query_async(&mut conn)
        .await
        .expect("zadd");
    let after = reads
        .top(&store, &page(&board, RankMode::Ordinal, 0, 100))
        .await
        .expect("read");
    assert_eq!(after.value.entries[0].user_id, "newcomer");

    // Reads of the same page in another rank mode are other reads: each answer has the ranks
    // of its own mode. Every score here is shared by 10 members.
    let tied = BoardId::parse("tied").expect("board");
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(store.keys().scores(&tied));
    for i in 0..1_000 {
        zadd.arg(i / 10).arg(format!("p-{i:04}"));
    }
    let () = zadd.query_async(&mut conn).await.expect("seed");
    let mut tasks = Vec::new();
    for i in 0..100 {
        let mode = if i % 2 == 0 {
            RankMode::Ordinal
        } else {
            RankMode::Competition
        };
        let (reads, store, request) = (reads.clone(), store.clone(), page(&tied, mode, 5, 20));
        tasks.push(tokio::spawn(async move {
            (mode, reads.top(&store, &request).await.expect("read"))
        }));
    }
    for t in tasks {
        let (mode, page) = t.await.expect("task");
        let ranks: Vec<u64> = page.value.entries.iter().map(|e| e.rank).collect();
        let expected: Vec<u64> = match mode {
            RankMode::Competition => (5..25).map(|i| i / 10 * 10 + 1).collect(),
            _ => (6..26).collect(),
        };
        assert_eq!(ranks, expected, "{mode:?}");
    }
}
