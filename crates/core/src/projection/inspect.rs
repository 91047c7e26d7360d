//! What the reconciler, the tests and the chaos check observe of a board's projection, and
//! the reconciler's writes that follow from it (repair, orphan removal): the Redis side of
//! their work. What to make of an observation (classify, decide a repair, report) is theirs.

use std::collections::BTreeMap;

use redis::RedisResult;

use super::read::{Seal, seal, with_seal};
use super::scripts::{REMOVE_ORPHAN, REPAIR, evalsha, send_pipeline};
use super::{ReadModelError, Store};
use crate::domain::BoardId;

/// What Redis holds for a member: its score in the sorted set and its entry in the version
/// hash (as stored: it may not be a number), each possibly absent.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub score: Option<f64>,
    pub version: Option<String>,
}

/// Score and stored version of each of `users` on `board`, in one pipelined round trip, in
/// the order given. The first command Redis refused (a wrong-typed key) is the error.
pub async fn observe<'a>(
    store: &Store,
    board: &BoardId,
    users: impl Iterator<Item = &'a str>,
) -> Result<Vec<Observed>, ReadModelError> {
    let keys = store.keys();
    let (scores_key, versions_key) = (keys.scores(board), keys.versions(board));
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    let mut n = 0;
    for user in users {
        pipe.cmd("ZSCORE").arg(&scores_key).arg(user);
        pipe.cmd("HGET").arg(&versions_key).arg(user);
        n += 1;
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut conn = store.connection().await?;
    let replies: Vec<RedisResult<Option<String>>> = pipe.query_async(&mut conn).await?;
    let replies = replies.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(replies
        .chunks(2)
        .map(|pair| Observed {
            score: pair[0].as_deref().and_then(|s| s.parse().ok()),
            version: pair[1].clone(),
        })
        .collect())
}

/// How many members the board's sorted set and version hash hold (`ZCARD`, `HLEN`).
pub async fn member_counts(store: &Store, board: &BoardId) -> Result<(u64, u64), ReadModelError> {
    let keys = store.keys();
    let mut conn = store.connection().await?;
    let counts: (u64, u64) = redis::pipe()
        .cmd("ZCARD")
        .arg(keys.scores(board))
        .cmd("HLEN")
        .arg(keys.versions(board))
        .query_async(&mut conn)
        .await?;
    Ok(counts)
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
    // Both scans answer member, value, member, value, …
    Ok((next, items.chunks(2).map(|pair| pair[0].clone()).collect()))
}

/// One member to set to its source row (`lua/repair.lua`).
pub struct Repair<'a> {
    pub user: &'a str,
    pub score: i64,
    pub version: i64,
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
    let (scores_key, versions_key) = (keys.scores(board), keys.versions(board));
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for r in repairs {
        let (mode, expected) = match r.force_over {
            Some(v) => ("force", v),
            None => ("normal", ""),
        };
        evalsha(&mut pipe, &REPAIR, &[&scores_key, &versions_key])
            .arg(r.user)
            .arg(r.score)
            .arg(r.version)
            .arg(mode)
            .arg(expected);
    }
    let mut conn = store.connection().await?;
    Ok(send_pipeline(&mut conn, &REPAIR, &pipe).await?)
}

/// Removes each `(member, observed stored version)` unless its version changed since
/// (`lua/remove_orphan.lua`), in one pipelined round trip; one reply per member: `removed` or
/// `skipped`, or the error Redis answered for that member.
pub async fn remove_orphans(
    store: &Store,
    board: &BoardId,
    orphans: &[(&str, String)],
) -> Result<Vec<RedisResult<String>>, ReadModelError> {
    let keys = store.keys();
    let (scores_key, versions_key) = (keys.scores(board), keys.versions(board));
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for (member, version) in orphans {
        evalsha(&mut pipe, &REMOVE_ORPHAN, &[&scores_key, &versions_key])
            .arg(*member)
            .arg(version);
    }
    let mut conn = store.connection().await?;
    Ok(send_pipeline(&mut conn, &REMOVE_ORPHAN, &pipe).await?)
}

/// The reply of [`board_members`]'s MULTI/EXEC: the seal's `card`, ZCARD, HLEN, the sorted
/// set with scores and the version hash.
type MembersReply = (
    Option<String>,
    u64,
    u64,
    Vec<(String, f64)>,
    BTreeMap<String, String>,
);

/// Every member of the board as Redis holds it, each half as stored (a member in one half
/// only has the other `None`), and the board's seal, read in one MULTI/EXEC so that no
/// rebuild's switch or projector write falls between them: the seal says whether these very
/// keys are whole. For tests and the chaos check (it reads whole boards), never on a request
/// path.
pub async fn board_members(
    store: &Store,
    board: &BoardId,
) -> Result<(Seal, BTreeMap<String, Observed>), ReadModelError> {
    let keys = store.keys();
    let mut conn = store.connection().await?;
    let mut pipe = redis::pipe();
    with_seal(&mut pipe, keys, board);
    let (card, zcard, hlen, scores, mut versions): MembersReply = pipe
        .cmd("ZRANGE")
        .arg(keys.scores(board))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("HGETALL")
        .arg(keys.versions(board))
        .query_async(&mut conn)
        .await?;
    let mut members: BTreeMap<String, Observed> = scores
        .into_iter()
        .map(|(user, score)| {
            let version = versions.remove(&user);
            (
                user,
                Observed {
                    score: Some(score),
                    version,
                },
            )
        })
        .collect();
    for (user, version) in versions {
        members.insert(
            user,
            Observed {
                score: None,
                version: Some(version),
            },
        );
    }
    Ok((seal(card, zcard, hlen), members))
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
