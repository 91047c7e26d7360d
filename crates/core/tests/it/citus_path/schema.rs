//! The schema half of the Citus check (see the parent module): every table classified, and
//! what keeps a distributed one from being distributed by its board column.

use std::collections::BTreeSet;

use super::Kind::{Distributed, Local, Reference};
use super::kinds;
use crate::common::env;

/// What the schema check finds today, each one a change docs/scaling.md names before the
/// tables can be distributed. Fixing one fails the test until it is taken off this list.
const BLOCKERS: &[&str] = &[
    // Event ids are unique across boards; on Citus per board: (base_board, event_id), and the
    // command's idempotency lookup names the board.
    "score_events: unique index score_events_pkey (event_id) lacks board_id",
    "leaderboard_outbox: unique index leaderboard_outbox_pkey (event_id) lacks board_id",
    "held_scores: unique index held_scores_pkey (event_id) lacks board_id",
    // Attempts are looked up by their id alone: (board_id, attempt_id).
    "attempts: unique index attempts_pkey (attempt_id) lacks board_id",
    // Identity keys: (board_id, id) and (board_id, seq).
    "period_reseals: unique index period_reseals_pkey (id) lacks board_id",
    "event_queue: unique index event_queue_pkey (seq) lacks board_id",
    // V20's tables spell board_id in the database's collation, not "C".
    "event_queue: board_id is text collate default, not text collate C",
    "event_top_state: board_id is text collate default, not text collate C",
];

/// Every sequence. Where Citus draws a distributed table's sequence value on a worker, it comes
/// from that node's range (the node in its high bits), so those orders hold per node: per board
/// until the board's shard moves to another node.
const SEQUENCES: &[&str] = &[
    // The claim's order: per shard with the doc's outbox per shard.
    "leaderboard_outbox_id_seq",
    // Earliest ties (V5): per node; the doc's per-board counter keeps them across a move.
    "user_scores_reached_seq",
    // The sequencer's order of the queue.
    "event_queue_seq_seq",
    // The log's one position: drawn by the one sequencer, on the coordinator.
    "event_positions",
    // A period's newest re-seal.
    "period_reseals_id_seq",
    // Local tables.
    "reconciler_passes_id_seq",
    "operator_actions_id_seq",
];

/// Functions the command statement calls on the shard's worker: they may read reference
/// tables only (Citus refuses a distributed query from a query on a shard).
const COMMAND_FUNCTIONS: &[&str] = &["lb_command_board", "lb_period_start"];

async fn rows(client: &tokio_postgres::Client, sql: &str) -> Vec<tokio_postgres::Row> {
    client
        .query(sql, &[])
        .await
        .unwrap_or_else(|err| panic!("{sql}: {err}"))
}

#[tokio::test]
async fn board_tables_can_be_distributed_by_the_board() {
    let e = env().await;
    let kinds = kinds();
    let mut found = Vec::new();

    let tables: BTreeSet<String> = rows(
        &e.client,
        "SELECT relname::text FROM pg_class
         WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')",
    )
    .await
    .iter()
    .map(|r| r.get(0))
    .collect();
    let classified: BTreeSet<String> = kinds.keys().map(|t| (*t).to_owned()).collect();
    assert_eq!(
        tables, classified,
        "every table is classified (and in docs/scaling.md)"
    );

    // The board column: text in byte order, as user_scores.board_id (co-location).
    for row in rows(
        &e.client,
        "SELECT table_name::text, column_name::text, data_type::text,
                coalesce(collation_name::text, 'default')
         FROM information_schema.columns WHERE table_schema = 'public'",
    )
    .await
    {
        let (table, column): (String, String) = (row.get(0), row.get(1));
        if matches!(kinds.get(table.as_str()), Some(Distributed(key)) if *key == column) {
            let (ty, collation): (String, String) = (row.get(2), row.get(3));
            if (ty.as_str(), collation.as_str()) != ("text", "C") {
                found.push(format!(
                    "{table}: {column} is {ty} collate {collation}, not text collate C"
                ));
            }
        }
    }

    // Unique indexes (primary keys included): Citus checks uniqueness on each shard alone.
    for row in rows(
        &e.client,
        "SELECT c.relname::text, i.indexrelid::regclass::text,
                array(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(n, o)
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n
                      ORDER BY k.o)
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
         WHERE i.indisunique AND c.relnamespace = 'public'::regnamespace",
    )
    .await
    {
        let (table, index, columns): (String, String, Vec<String>) =
            (row.get(0), row.get(1), row.get(2));
        if let Some(Distributed(key)) = kinds.get(table.as_str())
            && !columns.iter().any(|c| c == key)
        {
            let columns = columns.join(", ");
            found.push(format!(
                "{table}: unique index {index} ({columns}) lacks {key}"
            ));
        }
    }

    // Foreign keys Citus keeps: towards a reference table; between local and reference tables;
    // between distributed tables through the board column on both sides (co-located rows).
    for row in rows(
        &e.client,
        "SELECT conrelid::regclass::text, confrelid::regclass::text, conname::text,
                array(SELECT a.attname::text FROM unnest(conkey) k
                      JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k),
                array(SELECT a.attname::text FROM unnest(confkey) k
                      JOIN pg_attribute a ON a.attrelid = confrelid AND a.attnum = k)
         FROM pg_constraint
         WHERE contype = 'f' AND connamespace = 'public'::regnamespace",
    )
    .await
    {
        let (from, to, name): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        let (cols, refs): (Vec<String>, Vec<String>) = (row.get(3), row.get(4));
        let allowed = match (kinds.get(from.as_str()), kinds.get(to.as_str())) {
            (Some(Distributed(a)), Some(Distributed(b))) => {
                cols.iter().any(|c| c == a) && refs.iter().any(|c| c == b)
            }
            (Some(_), Some(Reference)) => true,
            (Some(Local), Some(Local)) | (Some(Reference), Some(Local)) => true,
            _ => false,
        };
        if !allowed {
            found.push(format!(
                "{from}: foreign key {name} to {to} cannot be distributed"
            ));
        }
    }

    // Functions the command statement calls read reference tables only.
    for function in COMMAND_FUNCTIONS {
        let source: String = e
            .client
            .query_one("SELECT prosrc FROM pg_proc WHERE proname = $1", &[function])
            .await
            .expect("function")
            .get(0);
        for (table, kind) in &kinds {
            let read = source.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            if *kind != Reference && read.into_iter().any(|w| w == *table) {
                found.push(format!("{function}: reads {table}, not a reference table"));
            }
        }
    }

    found.sort();
    let mut blockers: Vec<String> = BLOCKERS.iter().map(|b| (*b).to_owned()).collect();
    blockers.sort();
    assert_eq!(
        found, blockers,
        "what keeps the tables from being distributed by the board: a new entry needs a change \
         (or a reason in docs/scaling.md and BLOCKERS); a fixed one comes off BLOCKERS"
    );

    let sequences: BTreeSet<String> = rows(
        &e.client,
        "SELECT sequencename::text FROM pg_sequences WHERE schemaname = 'public'",
    )
    .await
    .iter()
    .map(|r| r.get(0))
    .collect();
    let listed: BTreeSet<String> = SEQUENCES.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        sequences, listed,
        "every sequence is in SEQUENCES with what Citus does to its order"
    );
}
