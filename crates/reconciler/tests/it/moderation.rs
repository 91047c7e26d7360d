//! Moderation (issue 22): removing an entry, banning and unbanning a user, erasing a user,
//! through core's commands (`board/moderation.rs`), real projector batches, the rebuild and
//! the reconciler, against the real PostgreSQL and Redis. Every read is made on both paths
//! (the database's statements and the projection's script) and compared, ranks, total and
//! percentile included; Redis is also read raw, before any repair.

mod erasure;
mod hiding;
use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use ledgerboard_core::board::definition::{BoardDefinition, Order};
use ledgerboard_core::board::moderation::{Action, Command, ModerationError, moderate};
use ledgerboard_core::board::{self, apply_score_command};
use ledgerboard_core::db::reads;
use ledgerboard_core::model::{BoardId, EntryChange, EventId, ProjectionEntry, UserId};
use ledgerboard_core::projection::apply::{RowOutcome, apply_batch};
use ledgerboard_core::projection::read::{self, Seal};
use ledgerboard_core::ranking::RankMode;
use ledgerboard_reconciler::rebuild;
use uuid::Uuid;

use common::{TestEnv, drain, pass};

fn board(b: &str) -> BoardId {
    BoardId::parse(b).expect("board")
}

/// The order of an undeclared board (the tests' boards are all undeclared add boards).
fn order(b: &str) -> Order {
    BoardDefinition::implicit(board(b)).order()
}

fn user(u: &str) -> UserId {
    UserId::parse(u).expect("user")
}

/// One score command (an add board's delta, the board undeclared) through core's path.
async fn add(env: &TestEnv, b: &str, u: &str, delta: i64) -> (i64, i64) {
    let db = env.database();
    let def = board::definition::get(&db, &board(b))
        .await
        .expect("definition");
    let delta = ledgerboard_core::model::Submitted::One(serde_json::Number::from(delta));
    let cmd = board::command(
        &def,
        &Uuid::new_v4().to_string(),
        u,
        None,
        Some(&delta),
        Some(&serde_json::json!({"note": u})),
    )
    .expect("a valid command");
    let out = apply_score_command(&db, &cmd, None).await.expect("command");
    (out.score, out.version)
}

async fn run(env: &TestEnv, id: Uuid, action: Action, reason: &str) -> serde_json::Value {
    let done = moderate(
        &env.database(),
        &Command {
            action_id: id,
            action,
            reason: reason.into(),
            actor: "moderation-test".into(),
        },
    )
    .await
    .expect("moderation");
    assert!(!done.duplicate, "{done:?}");
    done.result
}

/// A rebuild of `b` as a board read with dense ranks (every test here reads all three modes).
async fn rebuild_board(env: &TestEnv, b: &str) {
    ledgerboard_core::projection::generation::want_distinct(&env.store(), &board(b))
        .await
        .expect("mark dense");
    rebuild::rebuild(
        &env.database(),
        &env.store(),
        &env.settings,
        &board(b),
        Duration::from_secs(10),
        ledgerboard_reconciler::rebuild::Verify::No,
    )
    .await
    .expect("rebuild");
}

/// (rank, user, score, percentile) of the whole board, and its total, in `mode`.
type Standing = (Vec<(u64, String, i64, String)>, u64);

fn standing(page: &ledgerboard_core::ranking::Page) -> Standing {
    (
        page.entries
            .iter()
            .map(|e| {
                (
                    e.rank,
                    e.user_id.clone(),
                    e.score,
                    format!("{:.3}", e.percentile),
                )
            })
            .collect(),
        page.total,
    )
}

/// The whole board from PostgreSQL.
async fn database_read(env: &TestEnv, b: &str, mode: RankMode) -> Standing {
    let page = reads::top(&env.database(), &board(b), order(b), mode, 0, 100)
        .await
        .expect("database read");
    standing(&page)
}

/// The whole board from Redis, and the seal it was read under.
async fn projection_read(env: &TestEnv, b: &str, mode: RankMode) -> (Standing, Seal) {
    let sealed = read::top(&env.store(), &board(b), order(b), mode, 0, 100)
        .await
        .expect("projection read");
    (standing(&sealed.value), sealed.seal)
}

/// Both paths in every rank mode: equal, the projection whole, and the users as expected.
async fn both_paths(env: &TestEnv, b: &str, users: &[&str]) -> BTreeMap<&'static str, Standing> {
    let mut out = BTreeMap::new();
    for (name, mode) in [
        ("ordinal", RankMode::Ordinal),
        ("dense", RankMode::Dense),
        ("competition", RankMode::Competition),
    ] {
        let db = database_read(env, b, mode).await;
        let (redis, seal) = projection_read(env, b, mode).await;
        assert_eq!(seal, Seal::Whole, "board {b} whole in Redis ({name})");
        assert_eq!(db, redis, "both paths agree on board {b} ({name})");
        let listed: Vec<&str> = db.0.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(listed, users, "board {b} ({name})");
        out.insert(name, db);
    }
    out
}

/// Every field and member of every key of the test's namespace, as text.
async fn redis_dump(env: &TestEnv) -> Vec<String> {
    let store = env.store();
    let mut conn = store.connection().await.expect("redis");
    let pattern = store.keys().all_keys_pattern();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query_async(&mut conn)
        .await
        .expect("keys");
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("type");
        let items: Vec<String> = match kind.as_str() {
            "zset" => redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .expect("zrange"),
            "hash" => redis::cmd("HGETALL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .expect("hgetall"),
            "set" => redis::cmd("SMEMBERS")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .expect("smembers"),
            _ => vec![
                redis::cmd("GET")
                    .arg(&key)
                    .query_async::<Option<String>>(&mut conn)
                    .await
                    .expect("get")
                    .unwrap_or_default(),
            ],
        };
        out.push(format!("{key} {kind} {items:?}"));
    }
    out
}

async fn hget(env: &TestEnv, key: &str, field: &str) -> Option<String> {
    let mut conn = env.store().connection().await.expect("redis");
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async(&mut conn)
        .await
        .expect("hget")
}

async fn zscore(env: &TestEnv, key: &str, member: &str) -> Option<f64> {
    let mut conn = env.store().connection().await.expect("redis");
    redis::cmd("ZSCORE")
        .arg(key)
        .arg(member)
        .query_async(&mut conn)
        .await
        .expect("zscore")
}

/// Board b: a 50, bo 40, c 40 (ties by user id, descending: c first), d 30 and the cheat x 100; board w: x 5, a 1. Both rebuilt
/// (sealed), so every later read must find them whole.
async fn seeded() -> TestEnv {
    let env = TestEnv::new(|_| {}).await;
    for (u, s) in [("a", 50), ("bo", 40), ("c", 40), ("d", 30), ("x", 100)] {
        add(&env, "b", u, s).await;
    }
    add(&env, "w", "x", 5).await;
    add(&env, "w", "a", 1).await;
    drain(&env).await;
    rebuild_board(&env, "b").await;
    rebuild_board(&env, "w").await;
    both_paths(&env, "b", &["x", "a", "c", "bo", "d"]).await;
    env
}

/// The tables of PostgreSQL that hold a row naming user x (in any column, metadata included).
async fn names_x(env: &TestEnv) -> Vec<String> {
    let client = env.database().client().await.expect("client");
    let mut found = Vec::new();
    for table in [
        "user_scores",
        "score_events",
        "leaderboard_outbox",
        "banned_users",
        "removed_entries",
        "moderation_actions",
    ] {
        let n: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM {table} t WHERE t::text LIKE '%\"x\"%' OR t::text ~ '[(,]x[,)]'"
                ),
                &[],
            )
            .await
            .expect("count")
            .get(0);
        if n > 0 {
            found.push(format!("{table}: {n}"));
        }
    }
    found
}

/// The rebuild requests waiting in Redis.
async fn requested(env: &TestEnv) -> Vec<String> {
    let store = env.store();
    let mut conn = store.connection().await.expect("redis");
    redis::cmd("SMEMBERS")
        .arg(store.keys().rebuild_requests())
        .query_async(&mut conn)
        .await
        .expect("smembers")
}
