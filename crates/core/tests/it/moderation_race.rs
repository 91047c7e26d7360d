//! A removal racing a score command of the same member, against the real PostgreSQL (found by
//! the chaos run's moderation mix, issue 22). A command whose statement took its snapshot
//! before the removal committed, and whose insert then waited on the row the removal deletes,
//! wrote the new entry from that old snapshot: from version 1 instead of the removal's version
//! plus one, at or below the tombstone the projection keeps, so Redis dropped its score as
//! stale. The removal now takes the table lock a ban takes, so the command waits for it and
//! reads `removed_entries` after its commit. An erasure sweeps under it what a command that
//! committed during the erasure's long statement left.

use ledgerboard_core::board::moderation::{Action, Command, moderate};
use ledgerboard_core::board::{self, apply_score_command};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::{BoardId, UserId};
use ledgerboard_testkit::TestDb;

use crate::common::{Env, env, lock_waits};
use ledgerboard_core::model::Submitted;
use serde_json::Number;
use uuid::Uuid;

const BOARD: &str = "race";
const USER: &str = "racer";

async fn add(db: &Database, delta: i64) -> (i64, i64) {
    let board = BoardId::parse(BOARD).expect("board");
    let def = board::definition::get(db, &board)
        .await
        .expect("definition");
    let n = Submitted::One(Number::from(delta));
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

/// A database of its own, with the member at (10, 2).
async fn setup() -> (TestDb, Database) {
    let Env { test_db, db, .. } = env().await;
    add(&db, 5).await;
    assert_eq!(add(&db, 5).await, (10, 2));
    (test_db, db)
}

async fn erase(db: &Database) -> serde_json::Value {
    moderate(
        db,
        &Command {
            action_id: Uuid::new_v4(),
            action: Action::Erase {
                user: UserId::parse(USER).expect("user"),
            },
            reason: "race".into(),
            actor: "test".into(),
        },
    )
    .await
    .expect("erasure")
    .result
}

/// The member at (10, 2), and `action` raced by an add of 7: the action's
/// statement queues on the member's row first and the command behind it (a third session holds
/// the row, then lets go). Answers the action's result, the command's (score, version), and a
/// session to look with.
async fn race(
    action: Action,
) -> (
    serde_json::Value,
    (i64, i64),
    tokio_postgres::Client,
    TestDb,
) {
    let (test_db, db) = setup().await;

    // A third session holds the entry's row, so that the moderation's DELETE queues on it first
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

    let moderation = tokio::spawn({
        let db = db.clone();
        async move {
            moderate(
                &db,
                &Command {
                    action_id: Uuid::new_v4(),
                    action,
                    reason: "race".into(),
                    actor: "test".into(),
                },
            )
            .await
        }
    });
    lock_waits(&watcher, 1).await;
    let command = tokio::spawn({
        let db = db.clone();
        async move { add(&db, 7).await }
    });
    lock_waits(&watcher, 2).await;
    hold.commit().await.expect("release the row");

    let done = moderation
        .await
        .expect("moderation task")
        .expect("moderation");
    let landed = command.await.expect("command task");
    (done.result, landed, watcher, test_db)
}

#[tokio::test]
async fn a_command_racing_a_removal_continues_from_the_removals_version() {
    let (removed, landed, watcher, _db) = race(Action::Remove {
        board: BoardId::parse(BOARD).expect("board"),
        user: UserId::parse(USER).expect("user"),
    })
    .await;
    assert_eq!(removed["entries"], 1, "{removed:?}");
    // The removal kept version 3 (the entry's 2, plus one); the command came after it, so its
    // new entry starts from its own delta at version 4, above the projection's tombstone.
    assert_eq!(landed, (7, 4));
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

/// An erasure racing a command of the user that commits while the erasure runs: the command's
/// event must be erased too. The command is written by hand in a transaction the test holds
/// (its entry and its event, as a score statement writes them), so that it commits exactly
/// while the erasure's long statement waits for its row: that statement's snapshot predates the
/// commit, so without the sweep after it (under the table lock) the event stayed under the
/// user's id.
#[tokio::test]
async fn an_erasure_takes_the_event_of_a_command_committing_during_it() {
    let (test_db, db) = setup().await;
    let mut commander = test_db.client().await;
    let command = commander.transaction().await.expect("begin");
    command
        .execute(
            "UPDATE user_scores SET score = score + 7, version = version + 1
             WHERE board_id = $1 AND user_id = $2",
            &[&BOARD, &USER],
        )
        .await
        .expect("entry");
    command
        .execute(
            "INSERT INTO score_events (event_id, board_id, user_id, delta, score, version)
             VALUES (gen_random_uuid(), $1, $2, 7, 17, 3)",
            &[&BOARD, &USER],
        )
        .await
        .expect("event");
    let watcher = test_db.client().await;
    let erasure = tokio::spawn({
        let db = db.clone();
        async move { erase(&db).await }
    });
    lock_waits(&watcher, 1).await;
    command.commit().await.expect("the command commits");
    let erased = erasure.await.expect("erasure task");
    assert_eq!(erased["entries"], 1, "{erased:?}");
    assert_eq!(erased["events"], 3, "{erased:?}");
    let left: i64 = watcher
        .query_one(
            "SELECT (SELECT count(*) FROM score_events WHERE user_id = $1)
                  + (SELECT count(*) FROM user_scores WHERE user_id = $1)
                  + (SELECT count(*) FROM leaderboard_outbox
                     WHERE user_id = $1 AND moderation IS DISTINCT FROM 'erase')",
            &[&USER],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0, "the erased user's id is left in the database");
}
