//! A removal racing a score command of the same member, against the real PostgreSQL (found by
//! the chaos run's moderation mix, issue 22). A command whose statement took its snapshot
//! before the removal committed, and whose insert then waited on the row the removal deletes,
//! wrote the new entry from that old snapshot: from version 1 instead of the removal's version
//! plus one, at or below the tombstone the projection keeps, so Redis dropped its score as
//! stale. The removal now takes the table lock a ban takes, so the command waits for it and
//! reads `removed_entries` after its commit.

use std::time::{Duration, Instant};

use ledgerboard_core::board::moderation::{Action, Command, moderate};
use ledgerboard_core::board::{self, apply_score_command};
use ledgerboard_core::config::{Count, DatabaseSettings};
use ledgerboard_core::db::{Database, migrate};
use ledgerboard_core::domain::{BoardId, UserId};
use ledgerboard_testkit::TestDb;
use serde_json::Number;
use uuid::Uuid;

const BOARD: &str = "race";
const USER: &str = "racer";

async fn add(db: &Database, delta: i64) -> (i64, i64) {
    let board = BoardId::parse(BOARD).expect("board");
    let def = board::definitions::get(db, &board)
        .await
        .expect("definition");
    let n = Number::from(delta);
    let cmd = board::command(
        &def,
        &Uuid::new_v4().to_string(),
        USER,
        None,
        Some(&n),
        None,
    )
    .expect("command");
    let outcome = apply_score_command(db, &cmd, None).await.expect("applied");
    (outcome.score, outcome.version)
}

/// Waits until `n` sessions of the database wait for a lock.
async fn waiting(client: &tokio_postgres::Client, n: i64) {
    let started = Instant::now();
    loop {
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .await
            .expect("pg_stat_activity");
        if row.get::<_, i64>(0) >= n {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "fewer than {n} sessions waiting for a lock"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_command_racing_a_removal_continues_from_the_removals_version() {
    let test_db = TestDb::create().await;
    let settings = DatabaseSettings {
        url: test_db.url.as_str().into(),
        pool_max_size: Count::of(10),
        ..DatabaseSettings::default()
    };
    migrate(&settings).await.expect("migrate");
    let db = Database::connect(&settings, "moderation-race-test").expect("pool");
    add(&db, 5).await;
    assert_eq!(add(&db, 5).await, (10, 2));

    // A third session holds the entry's row, so that the removal's DELETE queues on it first
    // and the command behind it: the order of the race, made deterministic.
    let mut holder = test_db.client().await;
    let hold = holder.transaction().await.expect("begin");
    hold.execute(
        "SELECT 1 FROM user_scores WHERE board_id = $1 AND user_id = $2 FOR UPDATE",
        &[&BOARD, &USER],
    )
    .await
    .expect("row lock");
    let watcher = test_db.client().await;

    let removal = tokio::spawn({
        let db = db.clone();
        async move {
            moderate(
                &db,
                &Command {
                    action_id: Uuid::new_v4(),
                    action: Action::Remove {
                        board: BoardId::parse(BOARD).expect("board"),
                        user: UserId::parse(USER).expect("user"),
                    },
                    reason: "race".into(),
                    actor: "test".into(),
                },
            )
            .await
        }
    });
    waiting(&watcher, 1).await;
    let command = tokio::spawn({
        let db = db.clone();
        async move { add(&db, 7).await }
    });
    waiting(&watcher, 2).await;
    hold.commit().await.expect("release the row");

    let removed = removal.await.expect("removal task").expect("removal");
    assert_eq!(removed.result["entries"], 1, "{:?}", removed.result);
    // The removal kept version 3 (the entry's 2, plus one); the command came after it, so its
    // new entry starts from its own delta at version 4, above the projection's tombstone.
    assert_eq!(command.await.expect("command task"), (7, 4));
    let row = watcher
        .query_one(
            "SELECT s.score, s.version, r.version FROM user_scores s
             JOIN removed_entries r USING (board_id, user_id)
             WHERE s.board_id = $1 AND s.user_id = $2",
            &[&BOARD, &USER],
        )
        .await
        .expect("entry and tombstone");
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, i64>(1),
            row.get::<_, i64>(2)
        ),
        (7, 4, 3)
    );
}
