//! A board's first N as the projector reads it right after applying the board's rows
//! (`lua/top.lua`, one more script call in the batch's pipelined round trip, `apply.rs`), for
//! the `rank.top_changed` events (core `events/top.rs`).
//!
//! The read carries the board's change sequence (`keys.rs` `:q`), which `lua/project.lua`
//! moves forward in the same atomic step as every change. Two projectors may apply rows of one
//! board at once and commit in either order; the sequence says which read saw the later state,
//! so an older read committed late is never reported as a change. Only a board whose seal is
//! whole is reported: the first N of a projection that lost members (Redis restarted empty, a
//! board still being rebuilt) is not the board's.

use redis::Value;
use serde::Serialize;

use super::ReadModelError;
use super::keys::KeyLayout;
use super::member;
use super::read::{Seal, SealCounts, seal};
use super::scripts::{TOP, evalsha};
use crate::model::{BoardId, Columns, Key, Order};

/// One entry of a board's first N, as the event shows it: the ordinal rank, and `scores` on a
/// board with columns (every column's value as submitted, as the reads answer them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopEntry {
    pub rank: u64,
    pub user_id: String,
    pub score: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<i64>>,
}

/// A board's first N, read in one snapshot with its change sequence and seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardTop {
    /// The board read: a period's or a cohort's board id when the board resets.
    pub board: BoardId,
    /// The board's change sequence at the read; 0 when the board has none (nothing applied to
    /// it since its keys were created).
    pub sequence: i64,
    pub seal: Seal,
    /// In rank order; empty when the seal is not whole.
    pub entries: Vec<TopEntry>,
}

impl BoardTop {
    /// The entries as the event's `top` shows them: a JSON array.
    pub fn entries_json(&self) -> String {
        // A Vec of plain fields always serializes.
        serde_json::to_string(&self.entries).unwrap_or_else(|_| "[]".to_owned())
    }
}

/// Adds the read of `board`'s first `n` to `pipe` (after the board's projection call).
pub(super) fn add_read(pipe: &mut redis::Pipeline, keys: &KeyLayout, board: &BoardId, n: u64) {
    let call_keys = [
        keys.scores(board),
        keys.versions(board),
        keys.meta(board),
        keys.metadata(board),
        keys.changes(board),
    ];
    let call_keys: Vec<&str> = call_keys.iter().map(String::as_str).collect();
    evalsha(pipe, &TOP, &call_keys).arg(n);
}

/// The reply of `lua/top.lua`: sequence, seal counts, the seal's order, members and scores.
type TopReply = (Option<i64>, SealCounts, Option<String>, Vec<String>);

/// The [`BoardTop`] of `board` from its `lua/top.lua` reply.
pub(super) fn parse(board: BoardId, reply: Value) -> Result<BoardTop, ReadModelError> {
    let (sequence, counts, order, flat): TopReply =
        redis::from_redis_value(reply).map_err(|e| ReadModelError::Reply(e.to_string()))?;
    let seal = seal(counts);
    // A seal written before it carried the order belongs to a board of one column.
    let columns = order
        .as_deref()
        .and_then(Order::decode)
        .map_or(Columns::ONE, |o| o.columns);
    let mut entries = Vec::with_capacity(flat.len() / 2);
    if seal == Seal::Whole {
        for (i, pair) in flat.chunks(2).enumerate() {
            let [m, score] = pair else {
                return Err(ReadModelError::Reply("an odd top reply".into()));
            };
            let score = score
                .parse::<f64>()
                .map(|s| s as i64)
                .map_err(|_| ReadModelError::Reply(format!("not a score: {score:?}")))?;
            // A member that does not decode was written by hand: shown as it is, as the reads
            // show it.
            let (user, key) = member::user_of(m).unwrap_or((m.as_str(), Key::tie(0)));
            entries.push(TopEntry {
                rank: i as u64 + 1,
                user_id: user.to_owned(),
                score,
                scores: columns.several().then(|| columns.values(score, key.rest)),
            });
        }
    }
    Ok(BoardTop {
        board,
        sequence: sequence.unwrap_or(0),
        seal,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn a_whole_board_gives_its_entries_with_their_columns() -> Result<(), ReadModelError> {
        let board = BoardId::parse("race").map_err(|e| ReadModelError::Reply(e.to_string()))?;
        let key = Key {
            columns: 2,
            rest: [-93_120, 0],
            tie: 0,
        };
        let spelt = member::member("ann", key);
        let reply = Value::Array(vec![
            bulk("1765000000000001"),
            Value::Array(vec![
                bulk("1"),
                Value::Int(1),
                Value::Int(1),
                Value::Nil,
                Value::Int(0),
            ]),
            bulk("descending:user_id:asc"),
            Value::Array(vec![bulk(&spelt), bulk("12")]),
        ]);
        let top = parse(board.clone(), reply)?;
        assert_eq!(top.sequence, 1_765_000_000_000_001);
        assert_eq!(top.seal, Seal::Whole);
        assert_eq!(
            top.entries,
            vec![TopEntry {
                rank: 1,
                user_id: "ann".into(),
                score: 12,
                scores: Some(vec![12, 93_120]),
            }]
        );
        // No seal: no entries, whatever the keys hold.
        let unsealed = Value::Array(vec![
            Value::Nil,
            Value::Array(vec![
                Value::Nil,
                Value::Int(1),
                Value::Int(1),
                Value::Nil,
                Value::Int(0),
            ]),
            Value::Nil,
            Value::Array(vec![]),
        ]);
        let top = parse(board, unsealed)?;
        assert_eq!((top.sequence, top.seal), (0, Seal::Missing));
        assert!(top.entries.is_empty());
        Ok(())
    }
}
