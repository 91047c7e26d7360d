//! The projection of `earliest` boards (members spelt with their tie, `projection/member.rs`),
//! the distinct-scores set `:d` and the seal's `dcard`, and the metadata hash `:x`, as the
//! projector, the rebuild, the repair and the orphan removal keep them, against the real
//! PostgreSQL and Redis. Rows are written to PostgreSQL by hand (tie and metadata as a command
//! of an earliest board would write them), so these tests hold the projection's side alone.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::member;
use ledgerboard_reconciler::rebuild;

use common::{TestEnv, drain, dry_pass, pass};

/// Sets `user`'s row of board b to `score`, `tie`, `version` (and `metadata`) in
/// `user_scores`, with the outbox row a command would have written.
async fn write(
    env: &TestEnv,
    user: &str,
    score: i64,
    tie: i64,
    version: i64,
    metadata: Option<&str>,
) {
    let client = env.database().client().await.expect("client");
    client
        .execute(
            "WITH s AS (
                 INSERT INTO user_scores AS s (board_id, user_id, score, version, tie, metadata)
                 VALUES ('b', $1, $2, $3, $4, $5::text::jsonb)
                 ON CONFLICT (board_id, user_id) DO UPDATE
                     SET score = EXCLUDED.score, version = EXCLUDED.version,
                         tie = EXCLUDED.tie, metadata = EXCLUDED.metadata
                 RETURNING board_id, user_id, score, version, tie, metadata),
             e AS (
                 INSERT INTO score_events (event_id, board_id, user_id, submitted, operator,
                                           score, version)
                 SELECT gen_random_uuid(), board_id, user_id, score, 'latest', score, version
                 FROM s
                 RETURNING event_id)
             INSERT INTO leaderboard_outbox
                 (event_id, board_id, user_id, absolute_score, score_version, tie, metadata)
             SELECT e.event_id, board_id, user_id, score, version, tie, metadata FROM s, e",
            &[&user, &score, &version, &tie, &metadata],
        )
        .await
        .expect("write a row");
}

/// Board b's keys as Redis holds them: the sorted set (member → score), the versions hash,
/// the distinct scores (name → score), the metadata hash and the seal.
#[derive(Debug, PartialEq)]
struct Raw {
    z: BTreeMap<String, i64>,
    v: BTreeMap<String, String>,
    d: BTreeMap<String, i64>,
    x: BTreeMap<String, String>,
    m: BTreeMap<String, String>,
}

async fn raw(env: &TestEnv) -> Raw {
    let store = env.store();
    let keys = store.keys();
    let b = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    type Zset = Vec<(String, i64)>;
    type Hash = BTreeMap<String, String>;
    let (z, v, d, x, m): (Zset, Hash, Zset, Hash, Hash) = redis::pipe()
        .cmd("ZRANGE")
        .arg(keys.scores(&b))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("HGETALL")
        .arg(keys.versions(&b))
        .cmd("ZRANGE")
        .arg(keys.distinct(&b))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("HGETALL")
        .arg(keys.metadata(&b))
        .cmd("HGETALL")
        .arg(keys.meta(&b))
        .query_async(&mut conn)
        .await
        .expect("read board b");
    Raw {
        z: z.into_iter().collect(),
        v,
        d: d.into_iter().collect(),
        x,
        m,
    }
}

/// A rebuild of board b as a board read with dense ranks (marked first, as its first dense
/// read would): it keeps the distinct scores.
async fn rebuild_b(env: &TestEnv) -> rebuild::RebuildReport {
    let b = BoardId::parse("b").expect("board");
    ledgerboard_core::projection::generation::want_distinct(&env.store(), &b)
        .await
        .expect("mark dense");
    rebuild_unmarked(env).await
}

async fn rebuild_unmarked(env: &TestEnv) -> rebuild::RebuildReport {
    rebuild::rebuild(
        &env.database(),
        &env.store(),
        &env.settings,
        &BoardId::parse("b").expect("board"),
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await
    .expect("rebuild")
}

/// What board b's keys must hold for these rows `(user, score, tie, version, metadata)`:
/// members spelt with their tie, the distinct scores, the metadata, and a seal whose card,
/// dcard and xcard count them.
fn expected(rows: &[(&str, i64, i64, i64, Option<&str>)], raw_seal: &Raw) -> Raw {
    let mut m = raw_seal.m.clone();
    m.insert("card".into(), rows.len().to_string());
    let d: BTreeMap<String, i64> = rows.iter().map(|r| (r.1.to_string(), r.1)).collect();
    m.insert("dcard".into(), d.len().to_string());
    let with_metadata = rows.iter().filter(|r| r.4.is_some()).count();
    m.insert("xcard".into(), with_metadata.to_string());
    Raw {
        z: rows
            .iter()
            .map(|r| (member::member(r.0, r.2), r.1))
            .collect(),
        v: rows
            .iter()
            .map(|r| (r.0.to_owned(), member::stored(r.3, r.2)))
            .collect(),
        d,
        x: rows
            .iter()
            .filter_map(|r| r.4.map(|x| (r.0.to_owned(), x.to_owned())))
            .collect(),
        m,
    }
}

#[tokio::test]
async fn members_carry_their_tie_and_the_distinct_scores_follow_every_write() {
    let env = TestEnv::new(|_| {}).await;
    // Descending earliest board: reached-first has the greater tie (-n).
    write(&env, "alice", 10, -1, 1, None).await;
    write(&env, "bob", 10, -2, 1, Some(r#"{"car": "red"}"#)).await;
    write(&env, "carol", 20, -3, 1, None).await;
    drain(&env).await;
    // Projected without a seal (a new board); the rebuild seals it, counting :d.
    let report = rebuild_b(&env).await;
    assert_eq!(report.rows, 3);
    let mut rows = vec![
        ("alice", 10, -1, 1, None),
        ("bob", 10, -2, 1, Some(r#"{"car": "red"}"#)),
        ("carol", 20, -3, 1, None),
    ];
    let now = raw(&env).await;
    assert_eq!(now, expected(&rows, &now));
    // Byte order of members among equal scores is the order of their ties: alice (-1) ranks
    // above bob (-2) on a descending board, so ZRANGE … REV lists her first.
    assert!(member::member("alice", -1) > member::member("bob", -2));

    // alice reaches a new score: her old spelling goes, :d gains 30, dcard follows.
    write(&env, "alice", 30, -4, 2, Some(r#"{"lap": 1}"#)).await;
    // carol falls to 10: 20 leaves :d; she gains metadata (xcard follows: one more in all).
    write(&env, "carol", 10, -5, 2, Some(r#"{"lap": 2}"#)).await;
    // bob's metadata goes (absolute state: the row holds none now).
    write(&env, "bob", 10, -2, 2, None).await;
    drain(&env).await;
    rows = vec![
        ("alice", 30, -4, 2, Some(r#"{"lap": 1}"#)),
        ("bob", 10, -2, 2, None),
        ("carol", 10, -5, 2, Some(r#"{"lap": 2}"#)),
    ];
    let now = raw(&env).await;
    assert_eq!(now, expected(&rows, &now));
    env.assert_projection_matches_source("b").await;

    // A rebuild gives the same keys (and the old generation's :d and :x are gone).
    rebuild_b(&env).await;
    let now = raw(&env).await;
    assert_eq!(now, expected(&rows, &now));
    let store = env.store();
    let b = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let left: i64 = redis::cmd("EXISTS")
        .arg(store.keys().retired_distinct(&b))
        .arg(store.keys().retired_metadata(&b))
        .arg(store.keys().rebuild_distinct(&b))
        .arg(store.keys().rebuild_metadata(&b))
        .query_async(&mut conn)
        .await
        .expect("exists");
    assert_eq!(left, 0);
}

#[tokio::test]
async fn the_reconciler_repairs_a_wrong_tie_and_removes_a_stray_spelling() {
    let env = TestEnv::new(|_| {}).await;
    write(&env, "alice", 10, -1, 1, None).await;
    write(&env, "bob", 10, -2, 1, None).await;
    write(&env, "carol", 20, -3, 1, None).await;
    drain(&env).await;
    rebuild_b(&env).await;
    let rows = [
        ("alice", 10, -1, 1, None),
        ("bob", 10, -2, 1, None),
        ("carol", 20, -3, 1, None),
    ];
    let whole = raw(&env).await;
    assert_eq!(whole, expected(&rows, &whole));

    // Drift in a tie: bob's member moved to another tie key (his place among the 10s is now
    // wrong: he ranks above alice), and a stray spelling of carol at 5.
    let store = env.store();
    let keys = store.keys();
    let b = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::pipe()
        .cmd("ZREM")
        .arg(keys.scores(&b))
        .arg(member::member("bob", -2))
        .ignore()
        .cmd("ZADD")
        .arg(keys.scores(&b))
        .arg(10)
        .arg(member::member("bob", 7))
        .ignore()
        .cmd("HSET")
        .arg(keys.versions(&b))
        .arg("bob")
        .arg(member::stored(1, 7))
        .ignore()
        .cmd("ZADD")
        .arg(keys.scores(&b))
        .arg(5)
        .arg(member::member("carol", -9))
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("edit");

    // Before any repair: the drift is seen, and nothing is written by a dry run.
    let report = dry_pass(&env).await;
    let counts = &report.totals;
    assert_eq!((counts.corrupt, counts.orphan), (1, 1), "{report:?}");
    let drifted = raw(&env).await;
    assert_eq!(drifted.z.get(&member::member("bob", 7)), Some(&10));
    assert_eq!(drifted.z.get(&member::member("carol", -9)), Some(&5));

    let report = pass(&env).await;
    assert_eq!(report.totals.repaired, 1, "{report:?}");
    assert_eq!(report.totals.removed, 1, "{report:?}");
    let now = raw(&env).await;
    assert_eq!(now, expected(&rows, &whole));
}

/// Only boards read with dense ranks keep distinct scores: a board never marked is sealed
/// without `dcard` and without `:d`, its writes leave `:d` alone, and once marked its next
/// rebuild counts them. Fails if the projector writes `:d` whatever the seal says (carol's 30
/// appears in `:d`), or if the switch writes `dcard` for an unmarked build.
#[tokio::test]
async fn a_board_keeps_distinct_scores_only_once_it_is_read_with_dense_ranks() {
    let env = TestEnv::new(|_| {}).await;
    write(&env, "alice", 10, 0, 1, None).await;
    write(&env, "bob", 20, 0, 1, None).await;
    drain(&env).await;
    rebuild_unmarked(&env).await;
    let now = raw(&env).await;
    assert_eq!(now.m.get("card").map(String::as_str), Some("2"));
    assert_eq!(now.m.get("dcard"), None, "{:?}", now.m);
    assert!(now.d.is_empty(), "{:?}", now.d);
    write(&env, "carol", 30, 0, 1, None).await;
    drain(&env).await;
    let now = raw(&env).await;
    // The write went in and the card counts it; no distinct score was kept.
    assert_eq!(now.m.get("card").map(String::as_str), Some("3"));
    assert_eq!(now.m.get("dcard"), None);
    assert!(now.d.is_empty(), "{:?}", now.d);
    rebuild_b(&env).await;
    let now = raw(&env).await;
    let rows = [
        ("alice", 10, 0, 1, None),
        ("bob", 20, 0, 1, None),
        ("carol", 30, 0, 1, None),
    ];
    assert_eq!(now, expected(&rows, &now));
}

#[tokio::test]
async fn metadata_edited_in_redis_is_corrupt_and_repaired_to_the_source() {
    let env = TestEnv::new(|_| {}).await;
    write(&env, "alice", 10, -1, 1, Some(r#"{"car": "red"}"#)).await;
    write(&env, "bob", 20, -2, 1, Some(r#"{"car": "green"}"#)).await;
    write(&env, "carol", 30, -3, 1, None).await;
    drain(&env).await;
    rebuild_b(&env).await;
    let rows = [
        ("alice", 10, -1, 1, Some(r#"{"car": "red"}"#)),
        ("bob", 20, -2, 1, Some(r#"{"car": "green"}"#)),
        ("carol", 30, -3, 1, None),
    ];
    let whole = raw(&env).await;
    assert_eq!(whole, expected(&rows, &whole));

    // Drift in the metadata alone: alice's is another object, bob's is gone and carol gained
    // one (the counts balance, so the seal's xcard still matches HLEN :x and no read sees it:
    // only the reconciler can).
    let store = env.store();
    let b = BoardId::parse("b").expect("board");
    let mut conn = store.connection().await.expect("redis");
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(store.keys().metadata(&b))
        .arg("alice")
        .arg(r#"{"car": "blue"}"#)
        .ignore()
        .cmd("HDEL")
        .arg(store.keys().metadata(&b))
        .arg("bob")
        .ignore()
        .cmd("HSET")
        .arg(store.keys().metadata(&b))
        .arg("carol")
        .arg(r#"{"cheat": true}"#)
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("edit");

    // Before any repair: a dry run sees all three as corrupt and writes nothing.
    let report = dry_pass(&env).await;
    let t = &report.totals;
    assert_eq!((t.corrupt, t.current, t.repaired), (3, 0, 0), "{report:?}");
    let drifted = raw(&env).await;
    assert_eq!(
        drifted.x.get("alice").map(String::as_str),
        Some(r#"{"car": "blue"}"#)
    );

    let report = pass(&env).await;
    assert_eq!(
        (report.totals.corrupt, report.totals.repaired),
        (3, 3),
        "{report:?}"
    );
    let now = raw(&env).await;
    assert_eq!(now.x, whole.x);
    let clean = pass(&env).await;
    assert_eq!(
        (clean.totals.drift(), clean.totals.current),
        (0, 3),
        "{clean:?}"
    );
}
