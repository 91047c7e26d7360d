//! Keeps the path to Citus open (docs/scaling.md, "Past one PostgreSQL: Citus"): board tables
//! distributed by the board, small tables read everywhere as reference tables, the rest local
//! to the coordinator. Two checks against a migrated database:
//!
//! * the hot-path statements, each named below: every scan of a distributed table in the
//!   statement's generic plan is keyed by the board (a `board_id = …` condition on the scan or
//!   on the join that feeds it), so Citus can route it to one shard. Lookups by another key and
//!   statements that span boards on purpose are listed with the reason and the doc's change.
//!   Every SQL file of the hot-path folders must be named here, so a new one is looked at.
//! * the schema: every table is classified; a distributed table's primary key, unique indexes
//!   and foreign keys hold its board column (Citus enforces uniqueness per shard only), and that
//!   column is text in byte order like user_scores.board_id (co-location needs the same type
//!   and collation). What does not hold today is the explicit list of blockers the doc names.

use std::collections::{BTreeMap, BTreeSet};

use ledgerboard_core::board::Operator;
use ledgerboard_core::board::periods;
use ledgerboard_core::db::{Statement, outbox, reads};
use serde_json::Value;
use tokio_postgres::types::Type;

use crate::common::env;

mod schema;

/// How a table would live on Citus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Sharded by this column, co-located with user_scores.
    Distributed(&'static str),
    /// Small, read by every command on its worker: one copy per node.
    Reference,
    /// Operators' and the event log's tables: on the coordinator only.
    Local,
}
use Kind::{Distributed, Local, Reference};

/// Every table of migrations V1–V20 with its board column, as the doc's table classifies it:
/// distributed (sharded by that column, co-located with user_scores), reference (one copy per
/// node) or local (the coordinator's). Where `board_id` holds a period's or a cohort's id
/// (`<board>~<period>`), the doc's `base_board` column replaces it as the distribution column;
/// the constraints checked here hold for either.
const DISTRIBUTED: &[(&str, &str)] = &[
    ("user_scores", "board_id"),
    ("score_events", "board_id"),
    ("leaderboard_outbox", "board_id"),
    ("board_entry_counts", "board_id"),
    ("removed_entries", "board_id"),
    ("erased_version_floors", "board_id"),
    ("period_closes", "board_id"),
    ("period_standings", "board_id"),
    ("period_reseals", "board_id"),
    ("attempts", "board_id"),
    ("attempt_counts", "period_board"),
    ("submission_minutes", "board_id"),
    ("held_scores", "board_id"),
    ("event_queue", "board_id"),
    ("event_top_state", "board_id"),
    // A competition's id is its board's (V17).
    ("competition_runs", "competition_id"),
    ("competition_cohorts", "competition_id"),
    ("competition_entries", "competition_id"),
    ("competition_players", "competition_id"),
    ("competition_moves", "competition_id"),
];
/// Read inside the command statement (lb_command_board runs on the shard's worker and may read
/// only what every node holds) and written rarely; moderation_actions is the target of
/// banned_users' and period_reseals' foreign keys, which Citus keeps only towards a reference
/// table (it grows with moderation commands, not score commands).
const REFERENCE: &[&str] = &[
    "board_definitions",
    "board_resets",
    "banned_users",
    "competitions",
    "moderation_actions",
];
/// Operators' tables, the event log and webhooks: never on a command's path.
const LOCAL: &[&str] = &[
    "reconciler_progress",
    "reconciler_passes",
    "operator_actions",
    "events",
    "event_retention",
    "webhook_subscriptions",
    "webhook_lanes",
    "webhook_parked",
    "webhook_gaps",
    "refinery_schema_history",
];

fn kinds() -> BTreeMap<&'static str, Kind> {
    let distributed = DISTRIBUTED.iter().map(|(t, k)| (*t, Distributed(k)));
    let reference = REFERENCE.iter().map(|t| (*t, Reference));
    distributed
        .chain(reference)
        .chain(LOCAL.iter().map(|t| (*t, Local)))
        .collect()
}

/// Why the command statement's two lookups without the board are not keyed by it.
const PRIOR: &str = "idempotency: `prior` finds the event by event_id alone (ids are unique \
    across boards); Citus: PK (base_board, event_id) and `AND base_board = $2`";
const ATTEMPT: &str = "an attempt is found by attempt_id alone; Citus: PK (board_id, \
    attempt_id) and `AND board_id = $2`";

enum Scope {
    /// Every scan of a distributed table is keyed by the board, but these tables'.
    Board(&'static [(&'static str, &'static str)]),
    /// Spans boards on purpose: why, and the doc's change for Citus.
    Spans(&'static str),
}
const BOARD: Scope = Scope::Board(&[]);
const BY_EVENT: Scope = Scope::Board(&[("score_events", PRIOR)]);
const BY_ATTEMPT: Scope = Scope::Board(&[("attempts", ATTEMPT)]);
const BY_EVENT_AND_ATTEMPT: Scope = Scope::Board(&[("score_events", PRIOR), ("attempts", ATTEMPT)]);

/// A statement the crate keeps private, by its file under crates/core/src/.
macro_rules! private {
    ($path:literal, $scope:expr) => {
        Hot {
            name: $path.to_owned(),
            files: vec![$path.to_owned()],
            sql: include_str!(concat!("../../src/", $path)),
            types: None,
            scope: $scope,
        }
    };
}

struct Hot {
    name: String,
    /// The files it is made of, under crates/core/src/.
    files: Vec<String>,
    sql: &'static str,
    /// Parameter types; None: PostgreSQL infers them from the text (it can for these).
    types: Option<Vec<Type>>,
    scope: Scope,
}

/// A statement of the store code, named by its files and its op.
fn typed<const N: usize>(files: &[&str], s: &'static Statement<N>, scope: Scope) -> Hot {
    Hot {
        name: format!("{} ({:?})", files.join(" + "), s.op()),
        files: files.iter().map(|f| (*f).to_owned()).collect(),
        sql: s.sql(),
        types: Some(s.types().to_vec()),
        scope,
    }
}

/// Both directions of a database read (`db/sql/reads/<read>_<desc|asc>.sql`).
fn read<const N: usize>(read: &str, s: &'static reads::ByOrder<N>) -> [Hot; 2] {
    let file = |dir: &str| format!("db/sql/reads/{read}_{dir}.sql");
    [
        typed(&[&file("desc")], &s.descending, BOARD),
        typed(&[&file("asc")], &s.ascending, BOARD),
    ]
}

/// A statement of the projector's batch (`db/sql/outbox/<name>.sql`).
fn batch<const N: usize>(name: &str, s: &'static Statement<N>) -> Hot {
    let file = format!("db/sql/outbox/{name}.sql");
    typed(&[&file], s, Scope::Spans(OUTBOX))
}

const OUTBOX: &str = "the projector's batch: rows of any board, by id, in arrival order (claim \
    and lease lock them FOR UPDATE, which Citus runs in single-shard queries only); Citus: the \
    outbox per shard, these statements run on one shard's table";
const FRESHNESS: &str = "projected_through: the lowest unpublished id of any board; Citus: that \
    of the board's shard (ids and their order are per shard)";

const TOP_CHANGED: &str = "one upsert for the boards of a projector batch; Citus: a batch of \
    one shard's rows (the outbox per shard) writes that shard only";
const SEQUENCER: &str = "moves every board's queued events into the log under one global \
    position; Citus: the log stays on the coordinator and a sequencer turn reads every shard's \
    queue (or positions per shard)";
const FEED: &str = "the feed reads the one log by position; Citus: the log is a table of the \
    coordinator's, nothing to fan out";

/// The statements a score command, a read or a projected row runs, by name.
fn hot_path() -> Vec<Hot> {
    // Each operator's statement, guarded and not (board/guarded.rs).
    let mut hot: Vec<Hot> = Operator::ALL
        .into_iter()
        .flat_map(|op| {
            let part = format!("board/sql/command/{}.sql", op.as_str());
            [("guards", true), ("unguarded", false)].map(|(guards, guarded)| {
                let guards = format!("board/sql/command/{guards}.sql");
                let files = [
                    "board/sql/command/head.sql",
                    &guards,
                    "board/sql/command/hold.sql",
                    &part,
                    "board/sql/command/tail.sql",
                ];
                typed(&files, op.statement(guarded), BY_EVENT_AND_ATTEMPT)
            })
        })
        .collect();
    // The database reads (strong reads, and the fallback when the projection lags); USER runs
    // the text of USERS under its own op.
    hot.extend(read("top", &reads::TOP));
    hot.extend(read("after", &reads::AFTER));
    hot.extend(read("around", &reads::AROUND));
    hot.extend(read("users", &reads::USERS));
    hot.extend(read("users", &reads::USER));
    // Its per-board parts are keyed; `lowest_unpublished` is not.
    let freshness = Scope::Board(&[("leaderboard_outbox", FRESHNESS)]);
    hot.push(typed(
        &["db/sql/reads/freshness.sql"],
        &reads::FRESHNESS,
        freshness,
    ));
    hot.push(typed(
        &["board/sql/period_current.sql"],
        &periods::CURRENT,
        BOARD,
    ));
    hot.extend([
        private!("board/sql/definition_get.sql", BOARD),
        // Boards with attempts or review (issue 38): their guards run before the command.
        private!("board/sql/attempt_start.sql", BOARD),
        private!("board/sql/attempt_use.sql", BY_ATTEMPT),
        private!("board/sql/review_judge.sql", BY_EVENT),
        private!("board/sql/review_hold.sql", BOARD),
    ]);
    // The projector's batch and the event log: across boards by design.
    hot.extend([
        batch("claim", &outbox::CLAIM),
        batch("lease", &outbox::LEASE),
        batch("publish", &outbox::PUBLISH),
        batch("fail", &outbox::FAIL),
        batch("release", &outbox::RELEASE),
    ]);
    hot.extend([
        private!("events/sql/top_changed.sql", Scope::Spans(TOP_CHANGED)),
        private!("events/sql/sequence_move.sql", Scope::Spans(SEQUENCER)),
        private!("events/sql/page.sql", Scope::Spans(FEED)),
    ]);
    hot
}

/// The hot-path folders: each file in them is named by `hot_path` or here.
const FOLDERS: &[&str] = &["board/sql/command", "db/sql/outbox", "db/sql/reads"];
const NOT_HOT: &[(&str, &str)] = &[
    (
        "db/sql/outbox/status.sql",
        "every daemon's gauge every few seconds, over all boards; Citus: summed per shard",
    ),
    (
        "db/sql/outbox/wakeup.sql",
        "a NOTIFY, no table; Citus: through the coordinator as today",
    ),
];

/// The SQL without `--` comments, whitespace runs as one space.
fn plain(sql: &str) -> String {
    let code: Vec<&str> = sql
        .lines()
        .map(|l| l.split_once("--").map_or(l, |(code, _)| code))
        .collect();
    code.join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the text compares a board column with one of the statement's parameters (what
/// Citus prunes shards by): `board_id = $1`, `board_id = ANY ($2)`, `competition_id = $2`.
fn names_board_parameter(sql: &str) -> bool {
    let sql = plain(sql);
    ["board_id", "competition_id"].iter().any(|key| {
        sql.match_indices(key).any(|(i, _)| {
            let rest = sql[i + key.len()..].trim_start();
            let Some(rest) = rest.strip_prefix('=') else {
                return false;
            };
            let rest = rest.trim_start();
            let rest = rest.strip_prefix("ANY").map_or(rest, |r| {
                r.trim_start().trim_start_matches('(').trim_start()
            });
            rest.starts_with('$')
        })
    })
}

/// The conditions of a plan node that restrict its own rows.
const OWN: &[&str] = &["Index Cond", "Recheck Cond", "Filter", "TID Cond"];
/// The conditions of a join node, which restrict the scans below it.
const JOIN: &[&str] = &["Hash Cond", "Merge Cond", "Join Filter"];
const SCANS: &[&str] = &[
    "Seq Scan",
    "Index Scan",
    "Index Only Scan",
    "Bitmap Heap Scan",
];

fn text(node: &Value, key: &str) -> String {
    node.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The distributed tables the plan scans without a condition on their board column.
fn unkeyed(
    node: &Value,
    joins: &mut Vec<String>,
    keys: &BTreeMap<&str, &str>,
    out: &mut BTreeSet<String>,
) {
    let kind = text(node, "Node Type");
    let relation = text(node, "Relation Name");
    if let (true, Some(key)) = (SCANS.contains(&kind.as_str()), keys.get(relation.as_str())) {
        let alias = text(node, "Alias");
        let own = OWN
            .iter()
            .any(|c| text(node, c).contains(&format!("{key} =")));
        let joined = joins.iter().any(|c| {
            c.contains(&format!("{alias}.{key} =")) || c.contains(&format!("= {alias}.{key}"))
        });
        if !own && !joined {
            out.insert(relation.clone());
        }
    }
    let pushed: Vec<String> = JOIN.iter().map(|c| text(node, c)).collect();
    let depth = joins.len();
    joins.extend(pushed);
    for child in node
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        unkeyed(child, joins, keys, out);
    }
    joins.truncate(depth);
}

#[tokio::test]
async fn hot_path_statements_key_every_board_table_by_the_board() {
    let e = env().await;
    let keys: BTreeMap<&str, &str> = DISTRIBUTED.iter().copied().collect();
    // A generic plan shows the statement as every call runs it: parameters stay parameters.
    e.client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .expect("generic plans");

    let hot = hot_path();
    let mut failures = Vec::new();
    for (n, h) in hot.iter().enumerate() {
        // Every exception says what Citus needs instead (the doc's change).
        let reasons = match &h.scope {
            Scope::Board(unkeyed) => unkeyed.iter().map(|(_, why)| *why).collect(),
            Scope::Spans(why) => vec![*why],
        };
        for why in reasons {
            assert!(
                why.contains("Citus: "),
                "{}: {why:?} names no change",
                h.name
            );
        }
        // Statements that span boards on purpose are listed, not planned.
        let Scope::Board(expected) = &h.scope else {
            continue;
        };
        let names = |t: &Vec<Type>| t.iter().map(Type::name).collect::<Vec<_>>().join(", ");
        let types = h.types.as_ref().map(|t| format!("({})", names(t)));
        e.client
            .batch_execute(&format!(
                "PREPARE hot{n}{} AS {}",
                types.unwrap_or_default(),
                h.sql
            ))
            .await
            .unwrap_or_else(|err| panic!("{}: prepare: {err}", h.name));
        let params: i64 = e
            .client
            .query_one(
                "SELECT cardinality(parameter_types)::int8 FROM pg_prepared_statements WHERE name = $1",
                &[&format!("hot{n}")],
            )
            .await
            .expect("parameters")
            .get(0);
        let nulls = vec!["NULL"; usize::try_from(params).expect("a count")].join(", ");
        let args = if nulls.is_empty() {
            nulls
        } else {
            format!("({nulls})")
        };
        let plan: Value = e
            .client
            .query_one(&format!("EXPLAIN (FORMAT JSON) EXECUTE hot{n}{args}"), &[])
            .await
            .unwrap_or_else(|err| panic!("{}: explain: {err}", h.name))
            .get(0);
        let mut found = BTreeSet::new();
        for root in plan.as_array().into_iter().flatten() {
            if let Some(p) = root.get("Plan") {
                unkeyed(p, &mut Vec::new(), &keys, &mut found);
            }
        }
        let listed: BTreeSet<String> = expected.iter().map(|(t, _)| (*t).to_owned()).collect();
        if found != listed {
            failures.push(format!(
                "{}: scans without a board condition {found:?}, listed {listed:?}",
                h.name
            ));
        }
        // Fully keyed statements must also name the board by a parameter, not only by a
        // board the statement derives (Citus prunes shards by parameters and constants).
        if expected.is_empty() && !names_board_parameter(h.sql) {
            failures.push(format!("{}: no `board_id = $n` in its text", h.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Every file of the hot-path folders is classified: a new statement there is looked at.
    let named: BTreeSet<&str> = hot
        .iter()
        .flat_map(|h| h.files.iter().map(String::as_str))
        .chain(NOT_HOT.iter().map(|(f, why)| {
            assert!(why.contains("Citus: "), "{f}: {why:?} names no change");
            *f
        }))
        .collect();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut unnamed = Vec::new();
    for folder in FOLDERS {
        let entries = std::fs::read_dir(format!("{src}/{folder}"))
            .unwrap_or_else(|err| panic!("{folder}: {err}"));
        for entry in entries {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            let path = format!("{folder}/{name}");
            if name.ends_with(".sql") && !named.contains(path.as_str()) {
                unnamed.push(path);
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "SQL files in the hot-path folders that the Citus check does not name (add them to \
         hot_path() or NOT_HOT): {unnamed:?}"
    );
}
