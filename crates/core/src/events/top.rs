//! `rank.top_changed`: a board's first N changed (issue 40). The projector reads each board's
//! first N right after applying a batch (core `projection/top.rs`, in the batch's one round
//! trip) and hands the reads here, in the transaction that publishes the batch's outbox rows:
//! one statement (`sql/top_changed.sql`) compares each with the first N last recorded for the
//! board (`event_top_state`, migration V20) and queues one event per board whose first N
//! differs. So the event is written iff the projection it reports is recorded, once per change
//! however many batches a change is seen by (coalesced per batch), and never for a read older
//! than the one recorded: a duplicate or stale batch, or a batch re-applied after a crash,
//! reports nothing that did not happen.
//!
//! The payload (the event's `data`): `top`, the new first N as `[{rank, user_id, score,
//! scores?}]`; `previous`, the first N before (null the first time a board is recorded);
//! `entered` and `left`, the user ids that came into or dropped out of it.

use tokio_postgres::types::Type;

use crate::db::{Op, Statement, StatementClient, Statements, StoreError};
use crate::model::BoardId;

/// Parameters: boards read, declared boards, change sequences, first N (JSON), event ids.
static TOP_CHANGED: Statement<5> = Statement::new(
    Op::EventTop,
    include_str!("sql/top_changed.sql"),
    [
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::INT8_ARRAY,
        Type::TEXT_ARRAY,
        Type::UUID_ARRAY,
    ],
);

/// The event ids of `rank.top_changed` are uuid v5 in this namespace of the board read and its
/// change sequence: the same read recorded twice (a retried transaction) is one event.
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6c62_746f_7063_6861_6e67_6564_0000_0001);

/// One board's first N as a batch read it.
#[derive(Debug, Clone)]
pub struct Read {
    /// The board read (a period's or a cohort's board id when the board resets).
    pub board: BoardId,
    /// Its change sequence at the read (`projection/top.rs`).
    pub sequence: i64,
    /// The first N as the event shows it: a JSON array of `{rank, user_id, score, scores?}`.
    pub top: String,
}

/// The event id of the `rank.top_changed` that `board`'s first N read at `sequence` reports.
pub fn event_id(board: &BoardId, sequence: i64) -> uuid::Uuid {
    uuid::Uuid::new_v5(&NAMESPACE, format!("{board}\n{sequence}").as_bytes())
}

/// Records `reads` and queues a `rank.top_changed` for each board whose first N changed;
/// answers how many were queued. Run it in the transaction that publishes the batch.
pub async fn record(
    client: &impl StatementClient,
    stmts: Statements,
    reads: &[Read],
) -> Result<u64, StoreError> {
    if reads.is_empty() {
        return Ok(0);
    }
    // One order of row locks for every batch: two batches of the same boards never deadlock.
    let mut sorted: Vec<&Read> = reads.iter().collect();
    sorted.sort_by(|a, b| a.board.as_str().cmp(b.board.as_str()));
    sorted.dedup_by(|a, b| a.board == b.board);
    let targets: Vec<&str> = sorted.iter().map(|r| r.board.as_str()).collect();
    let boards: Vec<String> = sorted.iter().map(|r| r.board.base().to_string()).collect();
    let sequences: Vec<i64> = sorted.iter().map(|r| r.sequence).collect();
    let tops: Vec<&str> = sorted.iter().map(|r| r.top.as_str()).collect();
    let ids: Vec<uuid::Uuid> = sorted
        .iter()
        .map(|r| event_id(&r.board, r.sequence))
        .collect();
    Ok(stmts
        .execute(
            client,
            &TOP_CHANGED,
            [&targets, &boards, &sequences, &tops, &ids],
        )
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_read_is_one_event_id() -> Result<(), crate::model::ValidationError> {
        let b = BoardId::parse("weekly")?;
        assert_eq!(event_id(&b, 7), event_id(&b, 7));
        assert_ne!(event_id(&b, 7), event_id(&b, 8));
        assert_ne!(event_id(&b, 7), event_id(&BoardId::parse("daily")?, 7));
        Ok(())
    }
}
