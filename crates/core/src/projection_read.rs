//! Leaderboard reads from the Redis projection. `ZRANGE … REV` orders equal scores by member
//! in descending byte order, the same tie-break as the database reads.

use crate::cache::{Cache, CacheError};
use crate::domain::{BoardId, MemberStanding, RankedEntry, UserId};

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
    cache: &Cache,
    board: &BoardId,
    start: u64,
    stop: u64,
) -> Result<Vec<RankedEntry>, CacheError> {
    let mut conn = cache.connection().await?;
    let pairs: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(cache.keys().scores(board))
        .arg(start)
        .arg(stop)
        .arg("REV")
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    Ok(ranked(start, pairs))
}

pub async fn top(
    cache: &Cache,
    board: &BoardId,
    offset: u64,
    limit: u64,
) -> Result<Vec<RankedEntry>, CacheError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    range(cache, board, offset, offset + limit - 1).await
}

pub async fn member(
    cache: &Cache,
    board: &BoardId,
    user: &UserId,
) -> Result<Option<MemberStanding>, CacheError> {
    let mut conn = cache.connection().await?;
    let keys = cache.keys();
    // MULTI/EXEC: no projection script runs between the three reads, so score, rank and
    // version belong together.
    let (score, rank, version): (Option<f64>, Option<u64>, Option<i64>) = redis::pipe()
        .atomic()
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
    Ok(match (score, rank) {
        (Some(score), Some(rank)) => Some(MemberStanding {
            score: score as i64,
            version: version.unwrap_or(0),
            rank: rank + 1,
        }),
        _ => None,
    })
}

pub async fn around(
    cache: &Cache,
    board: &BoardId,
    user: &UserId,
    radius: u64,
) -> Result<Option<Vec<RankedEntry>>, CacheError> {
    let Some(me) = member(cache, board, user).await? else {
        return Ok(None);
    };
    let index = me.rank - 1;
    Ok(Some(
        range(cache, board, index.saturating_sub(radius), index + radius).await?,
    ))
}
