//! The entry counts (`board_entry_counts`, migration V10): a statement moves each board's count
//! once, however many rows it adds or removes (a bulk load used to cost the square of its
//! size), counting never waits for another transaction, and the sum over a board's rows is its
//! number of visible members.

use ledgerboard_core::config::DatabaseSettings;
use ledgerboard_core::db::migrate;
use ledgerboard_testkit::TestDb;

async fn migrated() -> TestDb {
    let db = TestDb::create().await;
    let settings = DatabaseSettings {
        url: db.url.as_str().into(),
        ..DatabaseSettings::default()
    };
    migrate(&settings).await.expect("migrate");
    db
}

async fn counted(client: &tokio_postgres::Client, board: &str) -> i64 {
    client
        .query_one(
            "SELECT coalesce(sum(entries), 0)::bigint FROM board_entry_counts WHERE board_id = $1",
            &[&board],
        )
        .await
        .expect("count")
        .get(0)
}

async fn visible(client: &tokio_postgres::Client, board: &str) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM user_scores WHERE board_id = $1 AND NOT hidden",
            &[&board],
        )
        .await
        .expect("members")
        .get(0)
}

#[tokio::test]
async fn a_bulk_statement_moves_each_boards_count_once() {
    let db = migrated().await;
    let client = db.client().await;
    client.batch_execute("BEGIN").await.expect("begin");
    client
        .batch_execute(
            "INSERT INTO user_scores (board_id, user_id, score, version, hidden)
             SELECT CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END, 'p-' || g, g, 1, g % 10 = 0
             FROM generate_series(1, 10000) g",
        )
        .await
        .expect("bulk insert");
    // Deferred count triggers (V9's) would fire here; the row count of count-row writes is
    // read inside the transaction, where it is already known.
    client
        .batch_execute("SET CONSTRAINTS ALL IMMEDIATE")
        .await
        .expect("immediate");
    let writes: i64 = client
        .query_one(
            "SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables
             WHERE relname = 'board_entry_counts'",
            &[],
        )
        .await
        .expect("stats")
        .get(0);
    assert!(
        writes <= 2,
        "{writes} writes of count rows for one statement over two boards"
    );
    client.batch_execute("COMMIT").await.expect("commit");
    for board in ["even", "odd"] {
        assert_eq!(counted(&client, board).await, visible(&client, board).await);
    }
    assert_eq!(counted(&client, "odd").await, 5_000);
    assert_eq!(counted(&client, "even").await, 4_000);

    // A bulk delete, hiding and showing: the sums follow.
    client
        .batch_execute(
            "DELETE FROM user_scores WHERE board_id = 'odd' AND user_id LIKE 'p-1%';
             UPDATE user_scores SET hidden = NOT hidden WHERE board_id = 'even' AND user_id LIKE 'p-2%'",
        )
        .await
        .expect("delete and hide");
    for board in ["even", "odd"] {
        assert_eq!(counted(&client, board).await, visible(&client, board).await);
    }
}

#[tokio::test]
async fn counting_never_waits_for_another_transaction() {
    let db = migrated().await;
    let (a, b) = (db.client().await, db.client().await);
    // B's first member creates the board's only count row, numbered by B's process id.
    b.batch_execute("SET lock_timeout = '2s'")
        .await
        .expect("timeout");
    b.batch_execute(
        "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('w', 'b1', 1, 1)",
    )
    .await
    .expect("b1");
    // A takes that row and holds it: its member is not committed.
    a.batch_execute(
        "BEGIN; INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('w', 'a1', 1, 1);
         SET CONSTRAINTS ALL IMMEDIATE",
    )
    .await
    .expect("a1");
    // B adds, hides and removes members meanwhile: each must count without waiting for A
    // (a wait would end in lock_timeout's error).
    for statement in [
        "INSERT INTO user_scores (board_id, user_id, score, version) VALUES ('w', 'b2', 1, 1), ('w', 'b3', 1, 1)",
        "UPDATE user_scores SET hidden = true WHERE board_id = 'w' AND user_id = 'b2'",
        "DELETE FROM user_scores WHERE board_id = 'w' AND user_id = 'b3'",
    ] {
        b.batch_execute(statement)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    a.batch_execute("COMMIT").await.expect("commit");
    assert_eq!(counted(&b, "w").await, 2, "b1 and a1");
    assert_eq!(visible(&b, "w").await, 2);
}
