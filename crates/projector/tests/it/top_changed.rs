//! `rank.top_changed` (core `events/top.rs`): the projector compares each board's first N,
//! read in the batch's round trip, with the last one recorded, and queues one event in the
//! batch's transaction when it differs: not for a change below the first N, not twice for a
//! batch delivered again, not for an older read that commits late.

use crate::common;

use ledgerboard_core::config::Count;
use ledgerboard_core::db::outbox;
use ledgerboard_core::events::top as top_changed;
use ledgerboard_core::model::{BoardId, Order, Sort, TieBreak};
use ledgerboard_core::projection::{apply_batch_with_tops, generation};
use ledgerboard_projector::Projector;
use serde_json::{Value, json};

use common::TestEnv;

/// An outbox row of `board`: `user` at `score`, `version`.
async fn row(env: &TestEnv, board: &str, user: &str, score: i64, version: i64) {
    env.db
        .client()
        .await
        .execute(
            "INSERT INTO leaderboard_outbox (event_id, board_id, user_id, absolute_score, score_version)
             VALUES (gen_random_uuid(), $1, $2, $3, $4)",
            &[&board, &user, &score, &version],
        )
        .await
        .expect("outbox row");
}

/// The `rank.top_changed` rows queued so far: (board_id, target, payload), oldest first.
async fn events(env: &TestEnv) -> Vec<(String, Option<String>, Value)> {
    env.db
        .client()
        .await
        .query(
            "SELECT board_id, target, payload::text FROM event_queue
             WHERE kind = 'rank.top_changed' ORDER BY seq",
            &[],
        )
        .await
        .expect("events")
        .iter()
        .map(|r| {
            let payload: String = r.get(2);
            (
                r.get(0),
                r.get(1),
                serde_json::from_str(&payload).expect("JSON payload"),
            )
        })
        .collect()
}

fn users(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|e| {
            e["user_id"]
                .as_str()
                .unwrap_or_else(|| e.as_str().unwrap_or("?"))
        })
        .collect()
}

async fn sealed_env() -> TestEnv {
    let env = TestEnv::new(|s| s.events.top_n = Count::of(3)).await;
    let board = BoardId::parse("b").expect("board");
    let order = Order::of(Sort::Descending, TieBreak::UserId);
    assert!(
        generation::seal_new(&env.store(), &board, order)
            .await
            .expect("seal")
    );
    env
}

#[tokio::test]
async fn the_first_n_changing_is_one_event_and_a_change_below_it_none() {
    let env = sealed_env().await;
    let db = env.database();
    let projector = Projector::new(env.settings.clone(), db.clone(), env.store());
    let worker = projector.worker(0);
    let mut client = db.client().await.expect("client");

    for (user, score) in [("a", 50), ("b", 40), ("c", 30), ("d", 20)] {
        row(&env, "b", user, score, 1).await;
    }
    let tally = worker.batch(&mut client).await.expect("batch");
    assert_eq!((tally.applied, tally.top_changed), (4, 1));
    let first = events(&env).await;
    assert_eq!(first.len(), 1, "{first:?}");
    let (board, target, data) = &first[0];
    assert_eq!((board.as_str(), target), ("b", &None));
    assert_eq!(
        data["top"],
        json!([{"rank":1,"user_id":"a","score":50},{"rank":2,"user_id":"b","score":40},
               {"rank":3,"user_id":"c","score":30}])
    );
    assert_eq!(data["previous"], Value::Null);
    assert_eq!(users(&data["entered"]), ["a", "b", "c"]);

    // d moves, but stays below the first 3: the first 3 did not change.
    row(&env, "b", "d", 25, 2).await;
    let tally = worker.batch(&mut client).await.expect("batch");
    assert_eq!((tally.applied, tally.top_changed), (1, 0));
    assert_eq!(events(&env).await.len(), 1);

    // d goes to the top: c leaves.
    row(&env, "b", "d", 100, 3).await;
    let tally = worker.batch(&mut client).await.expect("batch");
    assert_eq!((tally.applied, tally.top_changed), (1, 1));
    let all = events(&env).await;
    assert_eq!(all.len(), 2, "{all:?}");
    let data = &all[1].2;
    assert_eq!(users(&data["top"]), ["d", "a", "b"]);
    assert_eq!(users(&data["previous"]), ["a", "b", "c"]);
    assert_eq!(
        (users(&data["entered"]), users(&data["left"])),
        (vec!["d"], vec!["c"])
    );
}

/// A batch applied to Redis whose transaction never committed (a crash between Redis and the
/// commit) is delivered again as duplicates: its change is reported then, once; the same rows
/// delivered a third time (published again by hand) report nothing; and a read older than the
/// one recorded (a concurrent batch that commits late) reports nothing either.
#[tokio::test]
async fn a_batch_delivered_again_reports_its_change_exactly_once() {
    let env = sealed_env().await;
    let db = env.database();
    let store = env.store();
    for (user, score) in [("a", 50), ("b", 40)] {
        row(&env, "b", user, score, 1).await;
    }
    let stale_read = {
        let mut client = db.client().await.expect("client");
        let tx = client.transaction().await.expect("begin");
        let claimed = outbox::claim(&tx, db.statements(), 100)
            .await
            .expect("claim");
        let entries: Vec<_> = claimed
            .into_iter()
            .map(|c| c.entry.expect("valid"))
            .collect();
        let applied =
            apply_batch_with_tops(&store, &entries, std::time::Duration::from_secs(60), 3)
                .await
                .expect("apply");
        assert_eq!(applied.tops.len(), 1);
        // The crash: no commit.
        drop(tx);
        applied.tops[0].clone()
    };
    assert!(events(&env).await.is_empty());

    let projector = Projector::new(env.settings.clone(), db.clone(), store.clone());
    let worker = projector.worker(0);
    let mut client = db.client().await.expect("client");
    let tally = worker.batch(&mut client).await.expect("redelivery");
    assert_eq!((tally.duplicate, tally.top_changed), (2, 1));
    assert_eq!(events(&env).await.len(), 1);

    // The same rows once more (published again by hand): duplicates, no new event.
    env.db
        .client()
        .await
        .execute("UPDATE leaderboard_outbox SET published_at = NULL", &[])
        .await
        .expect("unpublish");
    let tally = worker.batch(&mut client).await.expect("third delivery");
    assert_eq!((tally.duplicate, tally.top_changed), (2, 0));
    assert_eq!(events(&env).await.len(), 1);

    // c enters; then a read of the board taken before c (the crashed batch's, same first N
    // as recorded before c came) commits late: it is older than the recorded one, so it
    // reports nothing, though its first N differs from the one recorded now.
    row(&env, "b", "c", 45, 1).await;
    let tally = worker.batch(&mut client).await.expect("batch");
    assert_eq!(tally.top_changed, 1);
    assert_eq!(users(&events(&env).await[1].2["top"]), ["a", "c", "b"]);
    let late = top_changed::Read {
        board: stale_read.board.clone(),
        sequence: stale_read.sequence,
        top: stale_read.entries_json(),
    };
    let queued = top_changed::record(&client, db.statements(), &[late])
        .await
        .expect("record");
    assert_eq!(queued, 0, "an older read reports no change");
    assert_eq!(events(&env).await.len(), 2);
}

/// A period's board reports under the declared board, with the period as its target; a board
/// whose projection is not whole (no seal) reports nothing.
#[tokio::test]
async fn a_periods_board_reports_under_its_board_and_an_unsealed_board_not_at_all() {
    let env = TestEnv::new(|s| s.events.top_n = Count::of(3)).await;
    let period = BoardId::parse_stored("s~20261207T000000Z").expect("period board");
    let order = Order::of(Sort::Descending, TieBreak::UserId);
    assert!(
        generation::seal_new(&env.store(), &period, order)
            .await
            .expect("seal")
    );
    row(&env, period.as_str(), "a", 5, 1).await;
    row(&env, "unsealed", "a", 5, 1).await;
    let db = env.database();
    let projector = Projector::new(env.settings.clone(), db.clone(), env.store());
    let mut client = db.client().await.expect("client");
    let tally = projector.worker(0).batch(&mut client).await.expect("batch");
    assert_eq!((tally.applied, tally.top_changed), (2, 1));
    let all = events(&env).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        (all[0].0.as_str(), all[0].1.as_deref()),
        ("s", Some(period.as_str()))
    );
}
