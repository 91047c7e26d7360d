//! Leaderboard reads from the Redis projection. `ZRANGE … REV` orders equal scores by member
//! in descending byte order, the same tie-break as the database reads.
//!
//! Every read also reads the board's seal (`keys.rs`) in the same MULTI/EXEC, so an answer
//! comes with whether the projection it came from is whole: an empty Redis, or a board whose
//! keys were deleted, evicted or edited, is seen by the very read that would have shown it,
//! at no extra round trip.

use super::keys::KeyLayout;
use super::{ReadModelError, Store};
use crate::domain::{BoardId, MemberStanding, RankedEntry, UserId};

/// What the board's seal said about the keys an answer was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// The seal is there and counts exactly the members both keys hold.
    Whole,
    /// No seal: a board never rebuilt yet, or one whose projection was lost.
    Missing,
    /// The seal counts other members than the keys hold: members lost (eviction, deletion)
    /// or added by hand.
    Broken,
}

/// An answer from the projection and the state of the board it came from.
#[derive(Debug, Clone)]
pub struct Sealed<T> {
    pub value: T,
    pub seal: Seal,
}

/// Adds the seal's three reads to a MULTI/EXEC pipeline, first, so that the answer's reads
/// follow them in the reply; [`seal`] judges their three replies.
pub fn with_seal(pipe: &mut redis::Pipeline, keys: &KeyLayout, board: &BoardId) {
    pipe.atomic()
        .cmd("HGET")
        .arg(keys.meta(board))
        .arg("card")
        .cmd("ZCARD")
        .arg(keys.scores(board))
        .cmd("HLEN")
        .arg(keys.versions(board));
}

/// The seal from the replies of [`with_seal`]'s reads: `HGET :m card`, `ZCARD :z`, `HLEN :v`.
pub fn seal(card: Option<String>, zcard: u64, hlen: u64) -> Seal {
    match card.map(|c| c.parse::<u64>()) {
        None => Seal::Missing,
        Some(Ok(card)) if card == zcard && card == hlen => Seal::Whole,
        Some(_) => Seal::Broken,
    }
}

/// The board's seal alone (the reconciler's walk asks, so that boards nobody reads or writes
/// are rebuilt too).
pub async fn board_seal(store: &Store, board: &BoardId) -> Result<Seal, ReadModelError> {
    let mut conn = store.connection().await?;
    let mut pipe = redis::pipe();
    with_seal(&mut pipe, store.keys(), board);
    let (card, zcard, hlen): (Option<String>, u64, u64) = pipe.query_async(&mut conn).await?;
    Ok(seal(card, zcard, hlen))
}

fn ranked(start: u64, pairs: Vec<(String, f64)>) -> Vec<RankedEntry> {
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (user_id, score))| RankedEntry {
            rank: start + i as u64 + 1,
            user_id,
            // Scores are integers within ±(2^53 - 1): exact in a double.
            score: score as i64,
        })
        .collect()
}

async fn range(
    store: &Store,
    board: &BoardId,
    start: u64,
    stop: u64,
) -> Result<Sealed<Vec<RankedEntry>>, ReadModelError> {
    let mut conn = store.connection().await?;
    let keys = store.keys();
    let mut pipe = redis::pipe();
    with_seal(&mut pipe, keys, board);
    pipe.cmd("ZRANGE")
        .arg(keys.scores(board))
        .arg(start)
        .arg(stop)
        .arg("REV")
        .arg("WITHSCORES");
    let (card, zcard, hlen, pairs): (Option<String>, u64, u64, Vec<(String, f64)>) =
        pipe.query_async(&mut conn).await?;
    Ok(Sealed {
        value: ranked(start, pairs),
        seal: seal(card, zcard, hlen),
    })
}

pub async fn top(
    store: &Store,
    board: &BoardId,
    offset: u64,
    limit: u64,
) -> Result<Sealed<Vec<RankedEntry>>, ReadModelError> {
    // limit 0 is refused by every caller; reading no entry still reads the seal.
    range(store, board, offset, (offset + limit).saturating_sub(1)).await
}

pub async fn member(
    store: &Store,
    board: &BoardId,
    user: &UserId,
) -> Result<Sealed<Option<MemberStanding>>, ReadModelError> {
    let mut conn = store.connection().await?;
    let keys = store.keys();
    // MULTI/EXEC: no projection script runs between the reads, so seal, score, rank and
    // version belong together.
    let mut pipe = redis::pipe();
    with_seal(&mut pipe, keys, board);
    let (card, zcard, hlen, score, rank, version): (
        Option<String>,
        u64,
        u64,
        Option<f64>,
        Option<u64>,
        Option<i64>,
    ) = pipe
        .cmd("ZSCORE")
        .arg(keys.scores(board))
        .arg(user.as_str())
        .cmd("ZREVRANK")
        .arg(keys.scores(board))
        .arg(user.as_str())
        .cmd("HGET")
        .arg(keys.versions(board))
        .arg(user.as_str())
        .query_async(&mut conn)
        .await?;
    let value = match (score, rank) {
        (Some(score), Some(rank)) => Some(MemberStanding {
            score: score as i64,
            version: version.unwrap_or(0),
            rank: rank + 1,
        }),
        _ => None,
    };
    Ok(Sealed {
        value,
        seal: seal(card, zcard, hlen),
    })
}

/// The member, then the page around it: two round trips, each with the seal; the answer is
/// whole only if both reads found the board whole.
pub async fn around(
    store: &Store,
    board: &BoardId,
    user: &UserId,
    radius: u64,
) -> Result<Sealed<Option<Vec<RankedEntry>>>, ReadModelError> {
    let me = member(store, board, user).await?;
    let Some(standing) = me.value else {
        return Ok(Sealed {
            value: None,
            seal: me.seal,
        });
    };
    let index = standing.rank - 1;
    let page = range(store, board, index.saturating_sub(radius), index + radius).await?;
    Ok(Sealed {
        value: Some(page.value),
        seal: if me.seal == Seal::Whole {
            page.seal
        } else {
            me.seal
        },
    })
}
