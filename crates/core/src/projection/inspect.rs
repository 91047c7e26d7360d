//! What the reconciler, the tests and the chaos check observe of a board's projection, and
//! the reconciler's writes that follow from it (repair, orphan removal): the Redis side of
//! their work. What to make of an observation (classify, decide a repair, report) is theirs.

use std::collections::BTreeMap;

use redis::RedisResult;

use super::member;
use super::read::{Seal, seal, with_seal};
use super::scripts::{OBSERVE, REMOVE_ORPHAN, REPAIR, evalsha, send_pipeline};
use super::{ReadModelError, Store};
use crate::model::{BoardId, Key};

/// What Redis holds for a member: its entry in the version hash (as stored: it may not be
/// one `member::stored` writes), the score of the member that entry names (its key spells the
/// member, `member.rs`) and its entry in the metadata hash (`:x`, JSON text as the
/// projection wrote it), each possibly absent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    pub score: Option<f64>,
    pub version: Option<String>,
    pub metadata: Option<String>,
}

impl Observed {
    /// The version and key the stored value holds; None when absent or unreadable.
    pub fn stored(&self) -> Option<(i64, Key)> {
        self.version.as_deref().and_then(member::parse_stored)
    }
}

/// Stored value, score and metadata of each of `users` on `board`, in one script call
/// (`lua/observe.lua`: one snapshot, one round trip), in the order given.
pub async fn observe<'a>(
    store: &Store,
    board: &BoardId,
    users: impl Iterator<Item = &'a str>,
) -> Result<Vec<Observed>, ReadModelError> {
    let users: Vec<&str> = users.collect();
    if users.is_empty() {
        return Ok(Vec::new());
    }
    let keys = store.keys();
    let mut conn = store.connection().await?;
    let replies: Vec<Option<String>> = OBSERVE
        .key(keys.scores(board))
        .key(keys.versions(board))
        .key(keys.metadata(board))
        .arg(&users)
        .invoke_async(&mut conn)
        .await?;
    Ok(replies
        .chunks(3)
        .map(|triple| Observed {
            version: triple[0].clone(),
            score: triple
                .get(1)
                .cloned()
                .flatten()
                .and_then(|s| s.parse().ok()),
            metadata: triple.get(2).cloned().flatten(),
        })
        .collect())
}

/// One half of a board's projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// The sorted set (`:z`).
    Scores,
    /// The version hash (`:v`).
    Versions,
}

/// One step of a scan of the members of one half of the board (`ZSCAN` / `HSCAN`, about
/// `count` members): the members found and the cursor to go on from, 0 at the end. Start with
/// cursor 0. A scan sees every member present from its start to its end at least once.
pub async fn scan_members(
    store: &Store,
    board: &BoardId,
    half: Half,
    cursor: u64,
    count: usize,
) -> Result<(u64, Vec<String>), ReadModelError> {
    let keys = store.keys();
    let (command, key) = match half {
        Half::Scores => ("ZSCAN", keys.scores(board)),
        Half::Versions => ("HSCAN", keys.versions(board)),
    };
    let mut conn = store.connection().await?;
    let (next, items): (u64, Vec<String>) = redis::cmd(command)
        .arg(key)
        .arg(cursor)
        .arg("COUNT")
        .arg(count)
        .query_async(&mut conn)
        .await?;
    // Both scans answer member, value, member, value, … (sorted-set members as spelt: a
    // caller decodes them with `member::user_of`).
    Ok((next, items.chunks(2).map(|pair| pair[0].clone()).collect()))
}

/// One member to set to its source row (`lua/repair.lua`).
pub struct Repair<'a> {
    pub user: &'a str,
    pub score: i64,
    pub version: i64,
    /// The member's other columns and tie.
    pub key: Key,
    pub metadata: Option<&'a str>,
    /// `None`: never over a newer stored version. `Some(v)`: overwrite the stored version,
    /// but only while it is still `v` (a member ahead of its source).
    pub force_over: Option<&'a str>,
}

/// Sets each member to its source row, in one pipelined round trip; one reply per repair:
/// `repaired`, `current` or `skipped`, or the error Redis answered for that member.
pub async fn repair(
    store: &Store,
    board: &BoardId,
    repairs: &[Repair<'_>],
) -> Result<Vec<RedisResult<String>>, ReadModelError> {
    let keys = store.keys();
    let board_keys = board_keys(keys, board);
    let board_keys: Vec<&str> = board_keys.iter().map(String::as_str).collect();
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for r in repairs {
        let (mode, expected) = match r.force_over {
            Some(v) => ("force", v),
            None => ("normal", ""),
        };
        evalsha(&mut pipe, &REPAIR, &board_keys)
            .arg(r.user)
            .arg(r.score)
            .arg(r.version)
            .arg(mode)
            .arg(expected)
            .arg(member::key_text(&r.key))
            .arg(r.metadata.unwrap_or(""));
    }
    let mut conn = store.connection().await?;
    Ok(send_pipeline(&mut conn, &REPAIR, &pipe).await?)
}

/// The keys the repair and orphan scripts take: scores, versions, seal, distinct scores,
/// metadata.
fn board_keys(keys: &super::keys::KeyLayout, board: &BoardId) -> [String; 5] {
    [
        keys.scores(board),
        keys.versions(board),
        keys.meta(board),
        keys.distinct(board),
        keys.metadata(board),
    ]
}

/// One member to remove (`lua/remove_orphan.lua`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub user: String,
    /// The stored value observed ('' for none): the removal is skipped if it changed.
    pub observed_version: String,
    /// The sorted-set member observed ('' for none), as spelt.
    pub member: String,
    /// True: the user has no source row (its member, version and metadata go). False: only
    /// `member`, a spelling the versions hash does not name, goes.
    pub whole: bool,
}

/// Removes each orphan unless its stored value changed since it was observed
/// (`lua/remove_orphan.lua`), in one pipelined round trip; one reply per orphan: `removed` or
/// `skipped`, or the error Redis answered for it.
pub async fn remove_orphans(
    store: &Store,
    board: &BoardId,
    orphans: &[Orphan],
) -> Result<Vec<RedisResult<String>>, ReadModelError> {
    let keys = store.keys();
    let board_keys = board_keys(keys, board);
    let board_keys: Vec<&str> = board_keys.iter().map(String::as_str).collect();
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for o in orphans {
        evalsha(&mut pipe, &REMOVE_ORPHAN, &board_keys)
            .arg(&o.user)
            .arg(&o.observed_version)
            .arg(if o.whole { "orphan" } else { "stray" })
            .arg(&o.member);
    }
    let mut conn = store.connection().await?;
    Ok(send_pipeline(&mut conn, &REMOVE_ORPHAN, &pipe).await?)
}

/// The reply of [`board_members`]'s MULTI/EXEC, flat as Redis gives it: the seal's five counts
/// (`read::SealCounts`), the sorted set with scores, the version hash and the metadata hash.
type MembersReply = (
    Option<String>,
    u64,
    u64,
    Option<String>,
    u64,
    Vec<(String, f64)>,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
);

/// Every member of the board as Redis holds it, by user id (members decoded with
/// `member::user_of`; a member that does not decode is kept under its raw spelling), each half
/// as stored (a member in one half only has the other `None`; the score is the one of the
/// member spelt with the user's stored key, or of its only spelling; a metadata entry with
/// neither half is a member of its own), and the board's seal,
/// read in one MULTI/EXEC so that no rebuild's switch or projector write falls between them:
/// the seal says whether these very keys are whole. For tests and the chaos check (it reads
/// whole boards), never on a request path.
pub async fn board_members(
    store: &Store,
    board: &BoardId,
) -> Result<(Seal, BTreeMap<String, Observed>), ReadModelError> {
    let keys = store.keys();
    let mut conn = store.connection().await?;
    let mut pipe = redis::pipe();
    with_seal(&mut pipe, keys, board);
    let (card, zcard, hlen, xcard, xlen, scores, mut versions, metadata): MembersReply = pipe
        .cmd("ZRANGE")
        .arg(keys.scores(board))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("HGETALL")
        .arg(keys.versions(board))
        .cmd("HGETALL")
        .arg(keys.metadata(board))
        .query_async(&mut conn)
        .await?;
    let mut members: BTreeMap<String, Observed> = BTreeMap::new();
    for (spelt, score) in scores {
        let (user, key) = match member::user_of(&spelt) {
            Some((user, key)) => (user.to_owned(), key),
            None => (spelt.clone(), Key::tie(0)),
        };
        let named = versions
            .get(&user)
            .and_then(|v| member::parse_stored(v))
            .is_some_and(|(_, stored_key)| stored_key == key);
        let entry = members.entry(user.clone()).or_default();
        // The spelling the versions hash names wins over a stray one.
        if entry.score.is_none() || named {
            entry.score = Some(score);
        }
    }
    for (user, entry) in members.iter_mut() {
        entry.version = versions.remove(user);
    }
    for (user, version) in versions {
        members.entry(user).or_default().version = Some(version);
    }
    for (user, json) in metadata {
        members.entry(user).or_default().metadata = Some(json);
    }
    Ok((seal((card, zcard, hlen, xcard, xlen)), members))
}

/// A score read from Redis as the integer PostgreSQL holds, exactly: `None` for a score with a
/// fraction, or outside ±(2^53 - 1) where a double no longer holds every integer.
pub fn exact_score(score: f64) -> Option<i64> {
    const MAX: f64 = ((1_i64 << 53) - 1) as f64;
    (score.fract() == 0.0 && score.abs() <= MAX).then_some(score as i64)
}

/// The Redis server's run id (`INFO server`), or None when it cannot be read or in cluster
/// mode, where each call may reach another node.
pub async fn run_id(store: &Store) -> Option<String> {
    if store.is_cluster() {
        return None;
    }
    let mut conn = store.connection().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await
        .ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_exact_integers_or_none() {
        assert_eq!(exact_score(10.0), Some(10));
        assert_eq!(exact_score(-7.0), Some(-7));
        assert_eq!(exact_score(10.5), None);
        let max = (1_i64 << 53) - 1;
        assert_eq!(exact_score(max as f64), Some(max));
        assert_eq!(exact_score(-(max as f64)), Some(-max));
        assert_eq!(exact_score(2_f64.powi(60)), None);
        assert_eq!(exact_score(f64::NAN), None);
        assert_eq!(exact_score(f64::INFINITY), None);
    }
}
