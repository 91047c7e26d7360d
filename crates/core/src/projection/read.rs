//! Leaderboard reads from the Redis projection, each one call of `lua/read.lua`: one round
//! trip, one snapshot. Members are spelt so that Redis's order of `(score, member)` is the
//! board's order of `(score, col2, col3, tie, user_id)` (`member.rs`): descending boards read
//! with `ZRANGE … REV` / `ZREVRANK`, ascending ones with `ZRANGE` / `ZRANK`; competition and
//! dense ranks are `ZCOUNT`s of `:z` and `:d` (the distinct tuples), and on a board with columns
//! also a binary search of the block of equal scores by tuple; `ranking.rs` turns them into the
//! answer exactly as it does for the database path.
//!
//! Every read also reads the board's seal (`keys.rs`) in the same script, so an answer comes
//! with whether the projection it came from is whole: an empty Redis, or a board whose keys
//! were deleted, evicted or edited, is seen by the very read that would have shown it, at no
//! extra round trip. The metadata hash `:x` is counted too (`xcard`, `HLEN :x`), so an `:x`
//! lost or evicted alone is seen. Dense ranks also need `:d` whole: the seal's `dcard` present
//! and equal to `ZCARD :d` (a seal written before `:d` existed has none).

use super::generation;
use super::keys::KeyLayout;
use super::member;
use super::reply::{SealReply, counts, packed_standings, seal_reply};
use super::scripts::{self, READ};
use super::{ReadModelError, Store};
use crate::model::{BoardId, Columns, Key, MemberStanding, UserId};
use crate::model::{Order, Sort};
use crate::ranking::{self, Bases, Cursor, Page, RankMode, Row, Standings};

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

/// Adds the seal's reads to a MULTI/EXEC pipeline, first, so that the answer's reads follow
/// them in the reply; [`seal`] judges their five replies ([`SealCounts`]).
pub fn with_seal(pipe: &mut redis::Pipeline, keys: &KeyLayout, board: &BoardId) {
    pipe.atomic()
        .cmd("HGET")
        .arg(keys.meta(board))
        .arg("card")
        .cmd("ZCARD")
        .arg(keys.scores(board))
        .cmd("HLEN")
        .arg(keys.versions(board))
        .cmd("HGET")
        .arg(keys.meta(board))
        .arg("xcard")
        .cmd("HLEN")
        .arg(keys.metadata(board));
}

/// The replies of [`with_seal`]'s reads: `HGET :m card`, `ZCARD :z`, `HLEN :v`,
/// `HGET :m xcard`, `HLEN :x`.
pub type SealCounts = (Option<String>, u64, u64, Option<String>, u64);

/// The seal from [`SealCounts`]: whole when `card` equals both `ZCARD :z` and `HLEN :v` and,
/// where the seal counts the members with metadata (`xcard`), `HLEN :x` matches it too, as
/// every answer carries metadata. A seal written before `xcard` existed has none, and the
/// metadata is then taken as it is until a rebuild counts it.
pub fn seal((card, zcard, hlen, xcard, xlen): SealCounts) -> Seal {
    match card.map(|c| c.parse::<u64>()) {
        None => Seal::Missing,
        Some(Ok(card))
            if card == zcard
                && card == hlen
                && xcard.is_none_or(|x| x.parse::<u64>().ok() == Some(xlen)) =>
        {
            Seal::Whole
        }
        Some(_) => Seal::Broken,
    }
}

/// The board's seal alone (the reconciler's walk asks, so that boards nobody reads or writes
/// are rebuilt too; so do the reconciler's rebuild requests, the console and a read that falls
/// back for lag). Whole only if every count the seal holds matches, the distinct scores too
/// (`dcard`, where the seal has it): a board whose `:d` is wrong serves every dense read from
/// PostgreSQL, so it is not whole, and a dense read's request to rebuild it must be served,
/// not declined as whole. A seal written before `dcard` existed is judged without it, as a
/// dense read judges it until a rebuild counts the distinct scores.
pub async fn board_seal(store: &Store, board: &BoardId) -> Result<Seal, ReadModelError> {
    Ok(board_seal_and_sizes(store, board).await?.seal)
}

/// [`board_seal`], with the member counts it reads anyway: what the reconciler's walk compares
/// with the source members it found (one round trip per board where it took two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealAndSizes {
    pub seal: Seal,
    /// `ZCARD :z`.
    pub scores: u64,
    /// `HLEN :v`.
    pub versions: u64,
}

pub async fn board_seal_and_sizes(
    store: &Store,
    board: &BoardId,
) -> Result<SealAndSizes, ReadModelError> {
    let mut conn = store.connection().await?;
    let keys = store.keys();
    let mut pipe = redis::pipe();
    with_seal(&mut pipe, keys, board);
    // [`SealCounts`], then `HGET :m dcard` and `ZCARD :d`, flat as Redis answers them.
    let (card, zcard, hlen, xcard, xlen, dcard, dzcard): (
        Option<String>,
        u64,
        u64,
        Option<String>,
        u64,
        Option<String>,
        u64,
    ) = pipe
        .cmd("HGET")
        .arg(keys.meta(board))
        .arg("dcard")
        .cmd("ZCARD")
        .arg(keys.distinct(board))
        .query_async(&mut conn)
        .await?;
    let mut seal = seal((card, zcard, hlen, xcard, xlen));
    if seal == Seal::Whole && dcard.is_some_and(|d| d.parse::<u64>().ok() != Some(dzcard)) {
        seal = Seal::Broken;
    }
    Ok(SealAndSizes {
        seal,
        scores: zcard,
        versions: hlen,
    })
}

/// The board's order as its seal states it (`order`, written by the rebuild's switch), for a
/// read that cannot ask PostgreSQL for the definition; `None` without a seal, or with one
/// written before the seal carried the order.
pub async fn sealed_order(store: &Store, board: &BoardId) -> Result<Option<Order>, ReadModelError> {
    let mut conn = store.connection().await?;
    let raw: Option<String> = redis::cmd("HGET")
        .arg(store.keys().meta(board))
        .arg("order")
        .query_async(&mut conn)
        .await?;
    Ok(raw.as_deref().and_then(Order::decode))
}

/// A dense read of a board whose seal has no `dcard` (its projection keeps no distinct
/// scores: only boards read with dense ranks do) marks the board, so that the rebuild this
/// read asks for (judged broken) keeps them. A seal must exist: a board without one may not
/// exist at all, and a made-up name must not grow the set.
async fn want_distinct_if_unkept(
    store: &Store,
    board: &BoardId,
    (card, _, _, dcard, ..): &SealReply,
    mode: RankMode,
) -> Result<(), ReadModelError> {
    if mode == RankMode::Dense && card.is_some() && dcard.is_none() {
        generation::want_distinct(store, board).await?;
    }
    Ok(())
}

/// The seal for a read in `mode`: as [`seal`], and for dense ranks also `dcard` == `ZCARD :d`
/// (else the distinct scores cannot be trusted: broken, so the read falls back and asks for a
/// rebuild, which counts them afresh; a seal written before `:d` existed has no `dcard`).
fn judge((card, zcard, hlen, dcard, dzcard, xcard, xlen): SealReply, mode: RankMode) -> Seal {
    let s = seal((card, zcard, hlen, xcard, xlen));
    if s == Seal::Whole
        && mode == RankMode::Dense
        && dcard.and_then(|c| c.parse::<u64>().ok()) != Some(dzcard)
    {
        return Seal::Broken;
    }
    s
}

/// A page's reply: the seal, the page's counts, its members and scores (flat), and each row's
/// metadata (none at all on a board without metadata).
type PageReply = (String, String, Vec<String>, Vec<Option<String>>);

fn invocation(
    store: &Store,
    board: &BoardId,
    order: Order,
    what: &str,
    mode: RankMode,
) -> redis::Cmd {
    let mut call = scripts::evalsha_cmd(&READ, 5);
    store.keys().add_read_keys(board, &mut call);
    call.arg(match order.sort {
        Sort::Descending => "desc",
        Sort::Ascending => "asc",
    })
    .arg(what)
    .arg(if mode == RankMode::Dense { "1" } else { "0" });
    call
}

/// A score as Redis answers it: integers within ±(2^53 - 1), exact in a double.
fn score_of(text: &str) -> Result<i64, ReadModelError> {
    text.parse::<f64>()
        .map(|s| s as i64)
        .map_err(|_| ReadModelError::Reply(format!("not a score: {text:?}")))
}

async fn page(
    store: &Store,
    board: &BoardId,
    call: redis::Cmd,
    mode: RankMode,
    columns: Columns,
    limit: Option<u64>,
) -> Result<Sealed<Option<Page>>, ReadModelError> {
    let mut conn = store.read_connection().await?;
    let (seal_text, page_counts, flat, meta): PageReply =
        scripts::send_script(&mut conn, &READ, &call).await?;
    let seal_reply = seal_reply(&seal_text)?;
    let [start, better, dense_better, found] = counts(&page_counts)?;
    let total = seal_reply.1;
    want_distinct_if_unkept(store, board, &seal_reply, mode).await?;
    let seal = judge(seal_reply, mode);
    if found == 0 {
        return Ok(Sealed { value: None, seal });
    }
    if flat.len() % 2 != 0 {
        return Err(ReadModelError::Reply("an odd page reply".into()));
    }
    let mut rows = Vec::with_capacity(flat.len() / 2);
    let mut meta = meta.into_iter();
    let mut flat = flat.into_iter();
    while let (Some(m), Some(score)) = (flat.next(), flat.next()) {
        // A member that does not decode was written by hand (the reconciler removes it);
        // shown as it is, like any other member the seal does not vouch for.
        let (user_id, key) = member::user_of(&m).unwrap_or((m.as_str(), Key::tie(0)));
        // Most boards' members are their user ids: the reply's string is kept, not copied.
        let user_id = if user_id.len() == m.len() {
            m
        } else {
            user_id.to_owned()
        };
        rows.push(Row {
            user_id,
            score: score_of(&score)?,
            key,
            metadata: meta.next().flatten(),
        });
    }
    let bases = Bases {
        ordinal: start + 1,
        competition: better + 1,
        dense: (mode == RankMode::Dense).then_some(dense_better + 1),
    };
    Ok(Sealed {
        value: Some(Page::new(mode, total, bases, columns, rows, limit)),
        seal,
    })
}

/// A page by position: `limit` entries from position `offset + 1` on.
pub async fn top(
    store: &Store,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    offset: u64,
    limit: u64,
) -> Result<Sealed<Page>, ReadModelError> {
    let mut call = invocation(store, board, order, "offset", mode);
    call.arg(limit).arg(offset);
    let p = page(store, board, call, mode, order.columns, Some(limit)).await?;
    Ok(Sealed {
        value: p.value.unwrap_or_else(|| empty(mode)),
        seal: p.seal,
    })
}

/// A page of `limit` entries just after `cursor`'s place in the board's order: at the
/// cursor's member when it still holds the cursor's score, else by a binary search of the
/// block of entries at that score.
pub async fn after(
    store: &Store,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    cursor: &Cursor,
    limit: u64,
) -> Result<Sealed<Page>, ReadModelError> {
    let mut call = invocation(store, board, order, "after", mode);
    call.arg(limit)
        .arg(cursor.score)
        .arg(member::member(&cursor.user_id, cursor.key));
    let p = page(store, board, call, mode, order.columns, Some(limit)).await?;
    Ok(Sealed {
        value: p.value.unwrap_or_else(|| empty(mode)),
        seal: p.seal,
    })
}

fn empty(mode: RankMode) -> Page {
    let top = Bases {
        ordinal: 1,
        competition: 1,
        dense: Some(1),
    };
    Page::new(mode, 0, top, Columns::ONE, Vec::new(), None)
}

/// The member and up to `radius` entries on each side, as one snapshot; None for a member not
/// on the board.
pub async fn around(
    store: &Store,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    user: &UserId,
    radius: u64,
) -> Result<Sealed<Option<Page>>, ReadModelError> {
    let mut call = invocation(store, board, order, "around", mode);
    call.arg(radius).arg(user.as_str());
    page(store, board, call, mode, order.columns, None).await
}

/// One user's reply of the `users` read: 'score position better dense_better' (none for a
/// user not on the board), stored `:v` value, metadata.
/// The members among `users` that are on the board, in board order, each with its rank: one
/// script call for all of them.
pub async fn users(
    store: &Store,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    users: &[UserId],
) -> Result<Sealed<Standings>, ReadModelError> {
    let mut call = invocation(store, board, order, "users", mode);
    for u in users {
        call.arg(u.as_str());
    }
    let mut conn = store.read_connection().await?;
    let (seal_text, packed): (String, String) =
        scripts::send_script(&mut conn, &READ, &call).await?;
    let seal_reply = seal_reply(&seal_text)?;
    let total = seal_reply.1;
    want_distinct_if_unkept(store, board, &seal_reply, mode).await?;
    let seal = judge(seal_reply, mode);
    let rows = packed_standings(&packed)?;
    if rows.len() != users.len() {
        return Err(ReadModelError::Reply(format!(
            "{} ids answered for {} asked",
            rows.len(),
            users.len()
        )));
    }
    let mut found = Vec::with_capacity(rows.len());
    for (user, standing) in users.iter().zip(rows) {
        let Some(standing) = standing else { continue };
        let [at, better, dense_better] = standing.places;
        let bases = Bases {
            ordinal: at + 1,
            competition: better + 1,
            dense: (mode == RankMode::Dense).then_some(dense_better + 1),
        };
        // A score without a parsable version (the version hash lost or edited) shows 0, and
        // its other columns as 0 (the seal says the board is not whole then).
        let (version, key) = standing
            .stored
            .and_then(member::parse_stored)
            .unwrap_or((0, Key::tie(0)));
        found.push((
            bases.ordinal,
            MemberStanding {
                entry: ranking::entry(
                    mode,
                    total,
                    bases,
                    order.columns,
                    user.as_str().to_owned(),
                    score_of(standing.score)?,
                    key,
                    standing.metadata.map(str::to_owned),
                ),
                version,
            },
        ));
    }
    // In board order, as the database path answers.
    found.sort_by_key(|(ordinal, _)| *ordinal);
    Ok(Sealed {
        value: Standings {
            members: found.into_iter().map(|(_, m)| m).collect(),
            total,
        },
        seal,
    })
}

/// One member with its rank, and the board's total: the `users` read of one id.
pub async fn member(
    store: &Store,
    board: &BoardId,
    order: Order,
    mode: RankMode,
    user: &UserId,
) -> Result<Sealed<(Option<MemberStanding>, u64)>, ReadModelError> {
    let s = users(store, board, order, mode, std::slice::from_ref(user)).await?;
    Ok(Sealed {
        value: (s.value.members.into_iter().next(), s.value.total),
        seal: s.seal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_is_judged_from_its_fields() {
        // A count edited by hand: spelt 'x' by the script, a count that does not parse.
        let edited = seal_reply("x 5 5 - 0 - 0").ok();
        assert_eq!(
            judge(edited.expect("seven fields"), RankMode::Ordinal),
            Seal::Broken
        );
        assert_eq!(
            judge(
                seal_reply("- 0 0 - 0 - 0").expect("seven fields"),
                RankMode::Ordinal
            ),
            Seal::Missing
        );
    }
}
