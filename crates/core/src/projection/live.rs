//! Live updates' side of the projection: the channel a projection call publishes each board it
//! changed on (`keys.rs` `live_channel`, written by `lua/project.lua` in the same atomic step as
//! the change), its message, and the board's change sequence as a reader sees it.
//!
//! The message is `<sequence> <board>`: the board's change sequence (`:q`) after the change,
//! and the board id (a period's or a cohort's board id when the board resets). A reader that
//! holds a sequence knows the board has not changed since while `:q` still holds it.

use redis::aio::{PubSubSink, PubSubStream};

use super::{ReadModelError, Store};
use crate::model::BoardId;

/// One message of the live channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub sequence: i64,
    pub board: BoardId,
}

impl Change {
    /// The message as `lua/project.lua` publishes it; None for anything else (a message of
    /// another version, or published by hand).
    pub fn parse(payload: &str) -> Option<Change> {
        let (sequence, board) = payload.split_once(' ')?;
        Some(Change {
            sequence: sequence.parse().ok()?,
            board: BoardId::parse_stored(board).ok()?,
        })
    }
}

/// The board's change sequence now (0 when the board has none yet).
pub async fn sequence(store: &Store, board: &BoardId) -> Result<i64, ReadModelError> {
    let mut conn = store.read_connection().await?;
    let raw: Option<i64> = redis::cmd("GET")
        .arg(store.keys().changes(board))
        .query_async(&mut conn)
        .await?;
    Ok(raw.unwrap_or(0))
}

/// A pub/sub connection subscribed to the live channel (its `attempt`-th URL,
/// [`Store::subscriber`]): the sink keeps the connection's commands (PING, to find a
/// connection that died silently), the stream its messages.
pub async fn subscribe(
    store: &Store,
    attempt: usize,
) -> Result<(PubSubSink, PubSubStream), ReadModelError> {
    let (mut sink, stream) = store.subscriber(attempt).await?.split();
    sink.subscribe(store.keys().live_channel()).await?;
    Ok((sink, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_names_its_sequence_and_board() {
        let change = Change::parse("1765000000000123 weekly~20261207T000000Z");
        assert_eq!(
            change.map(|c| (c.sequence, c.board.as_str().to_owned())),
            Some((1_765_000_000_000_123, "weekly~20261207T000000Z".to_owned()))
        );
        assert_eq!(Change::parse("weekly"), None);
        assert_eq!(Change::parse("x weekly"), None);
        assert_eq!(Change::parse("1 bad{board}"), None);
    }
}
