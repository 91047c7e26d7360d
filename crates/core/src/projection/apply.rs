//! Applying outbox rows to the Redis projection: one pipelined round trip per batch of
//! EVALSHA calls of `lua/project.lua`.
//!
//! Errors are sorted in two kinds. An *outage* (Redis unreachable, timed out, out of memory,
//! loading, read-only, …) is nobody's row's fault: the whole batch is abandoned, to be
//! delivered again after a back-off, and no row is charged an attempt. A *row failure* (the
//! script refused that row: a wrong-typed key, a corrupt stored version) is charged to the row,
//! which is retried and eventually parked.

use std::collections::HashMap;
use std::time::Duration;

use redis::{ErrorKind, RedisError, RedisResult, Value};

use super::keys::KeyLayout;
use super::member;
use super::scripts::{PROJECT, TOP, evalsha, send_pipeline_of};
use super::top::{self, BoardTop};
use super::{ReadModelError, Store};
use crate::model::{BoardId, ProjectionEntry};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowOutcome {
    Applied,
    /// The event's marker was present: applied before.
    Duplicate,
    /// The projection already holds this version or a newer one.
    Stale,
    /// The script refused the row; the message says why.
    Failed(String),
}

/// Redis could not take the batch at all; retry later.
#[derive(Debug, thiserror::Error)]
#[error("redis outage: {0}")]
pub struct Outage(pub String);

impl From<ReadModelError> for Outage {
    fn from(err: ReadModelError) -> Self {
        Outage(err.to_string())
    }
}

/// Applies `entries` in one pipeline and returns one outcome per entry, in order.
///
/// One script call per board (`lua/project.lua`), its rows in their order, so a board's type
/// checks and the call's overhead are paid once per batch, not per row; the boards' calls go
/// in one round trip. A row refused by the script (`failed:`) fails alone; a call refused as a
/// whole (a board key of the wrong type) fails every row of its board, and an outage the whole
/// batch. The script is called by EVALSHA; after NOSCRIPT it is loaded and the batch sent once
/// more (see [`send_pipeline`]), harmless because every row is idempotent. A row applied to a
/// board without a seal (a new board, or one whose projection was lost), or refused because
/// the board's keys are corrupt, adds the board to the rebuild requests ([`needs_rebuild`]),
/// so the reconciler rebuilds and seals it even if nobody reads it.
///
/// Every call that applies a row moves its board's change sequence forward and publishes it on
/// the live channel (`lua/project.lua`, `live.rs`), so whoever applies rows (the projector, a
/// test, the benchmark) keeps the api's live updates true.
pub async fn apply_batch(
    store: &Store,
    entries: &[ProjectionEntry],
    marker_ttl: Duration,
) -> Result<Vec<RowOutcome>, Outage> {
    Ok(apply_batch_with_tops(store, entries, marker_ttl, 0)
        .await?
        .outcomes)
}

/// What [`apply_batch_with_tops`] did: one outcome per entry, in order, and each board's first
/// N as read right after its rows were applied (empty when N is 0).
#[derive(Debug, Default)]
pub struct Applied {
    pub outcomes: Vec<RowOutcome>,
    pub tops: Vec<BoardTop>,
}

/// [`apply_batch`], and for each board of the batch its first `top_n` entries read right after
/// its rows (`lua/top.lua`, `top.rs`): the read is one more script call per board in the same
/// pipelined round trip, so it adds no round trip. A board whose read fails (anything but an
/// outage, which abandons the batch as any other reply's would) has no [`BoardTop`]: its rows
/// stand, and its next batch reads again.
pub async fn apply_batch_with_tops(
    store: &Store,
    entries: &[ProjectionEntry],
    marker_ttl: Duration,
    top_n: u64,
) -> Result<Applied, Outage> {
    if entries.is_empty() {
        return Ok(Applied::default());
    }
    let mut conn = store.connection().await?;
    let ttl_ms = marker_ttl.as_millis().max(1).to_string();
    // Each board's rows, boards in order of first appearance, rows in batch order (one user's
    // versions stay in order within the call).
    // A batch may hold as many boards as rows: each is found by hash, not by a walk of the
    // boards seen so far.
    let mut boards: Vec<(&BoardId, Vec<usize>)> = Vec::new();
    let mut slot: HashMap<&BoardId, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let at = *slot.entry(&e.board).or_insert_with(|| {
            boards.push((&e.board, Vec::new()));
            boards.len() - 1
        });
        boards[at].1.push(i);
    }
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    let keys = store.keys();
    let channel = keys.live_channel();
    for (b, rows) in &boards {
        let mut call_keys = vec![
            keys.scores(b),
            keys.versions(b),
            keys.meta(b),
            keys.distinct(b),
            keys.metadata(b),
            keys.rebuild_scores(b),
            keys.rebuild_versions(b),
            keys.rebuild_meta(b),
            keys.rebuild_distinct(b),
            keys.rebuild_metadata(b),
            keys.tombstones(b),
            keys.changes(b),
        ];
        call_keys.extend(
            rows.iter()
                .map(|&i| keys.event_marker(b, &entries[i].event_id)),
        );
        let call_keys: Vec<&str> = call_keys.iter().map(String::as_str).collect();
        let cmd = evalsha(&mut pipe, &PROJECT, &call_keys)
            .arg(&ttl_ms)
            .arg(&channel)
            .arg(b.as_str());
        for &i in rows {
            let e = &entries[i];
            cmd.arg(e.user_id.as_str())
                .arg(e.score)
                .arg(e.version)
                .arg(member::key_text(&e.key))
                .arg(e.metadata.as_deref().unwrap_or(""))
                .arg(e.change.as_arg());
        }
        if top_n > 0 {
            top::add_read(&mut pipe, keys, b, top_n);
        }
    }
    let per_board = if top_n > 0 { 2 } else { 1 };
    // A second NOSCRIPT (the script vanished again) counts as an outage in `outcome`.
    let replies: Vec<RedisResult<Value>> = send_pipeline_of(&mut conn, &[&PROJECT, &TOP], &pipe)
        .await
        .map_err(|e| Outage(e.to_string()))?;
    if replies.len() != boards.len() * per_board {
        return Err(Outage(format!(
            "{} replies to {} script calls",
            replies.len(),
            boards.len() * per_board
        )));
    }
    let mut replies = replies.into_iter();
    let mut answers: Vec<Option<RedisResult<String>>> = vec![None; entries.len()];
    let mut tops = Vec::new();
    for (board, rows) in &boards {
        let Some(reply) = replies.next() else { break };
        if top_n > 0
            && let Some(read) = replies.next()
            && let Some(t) = top_of(board, read)?
        {
            tops.push(t);
        }
        let reply = reply.and_then(|v| Ok(redis::from_redis_value::<Vec<String>>(v)?));
        match reply {
            Ok(strings) if strings.len() == rows.len() => {
                for (&i, s) in rows.iter().zip(strings) {
                    answers[i] = Some(Ok(s));
                }
            }
            Ok(strings) => {
                for &i in rows {
                    answers[i] = Some(Ok(format!(
                        "failed:{} answers to {} rows",
                        strings.len(),
                        rows.len()
                    )));
                }
            }
            Err(e) => {
                for &i in rows {
                    answers[i] = Some(Err(e.clone()));
                }
            }
        }
    }
    let answers: Vec<RedisResult<String>> = answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Ok("failed:no answer for the row".to_owned())))
        .collect();
    let mut unwhole: Vec<&str> = entries
        .iter()
        .zip(&answers)
        .filter(|(_, r)| needs_rebuild(r))
        .map(|(e, _)| e.board.as_str())
        .collect();
    if !unwhole.is_empty() {
        unwhole.sort_unstable();
        unwhole.dedup();
        // The outcomes stand whether or not the request is sent; a lost request only delays
        // the rebuild to the next batch or read that asks again, so a failure here is logged,
        // not charged to the rows.
        if let Err(e) = request_rebuilds(&mut conn, keys, &unwhole).await {
            tracing::warn!(error = %e, boards = ?unwhole, "could not request the rebuild of boards not whole");
        }
    }
    Ok(Applied {
        outcomes: answers.into_iter().map(outcome).collect::<Result<_, _>>()?,
        tops,
    })
}

/// A board's first N from its `lua/top.lua` reply: an outage abandons the batch as any reply's
/// would; any other failure only loses this batch's read of the board (logged).
fn top_of(board: &BoardId, read: RedisResult<Value>) -> Result<Option<BoardTop>, Outage> {
    let failed = match read {
        Ok(value) => match top::parse(board.clone(), value) {
            Ok(t) => return Ok(Some(t)),
            Err(e) => e.to_string(),
        },
        Err(e) if is_outage(&e) => return Err(Outage(e.to_string())),
        Err(e) => e.to_string(),
    };
    tracing::warn!(error = %failed, board = %board, "the first N of a board could not be read; no rank.top_changed for it this batch");
    Ok(None)
}

/// [`request_rebuilds`] of one board, on a connection of its own (a reader's or the
/// reconciler's walk's request).
pub async fn request_rebuild(store: &Store, board: &BoardId) -> Result<(), ReadModelError> {
    let mut conn = store.connection().await?;
    Ok(request_rebuilds(&mut conn, store.keys(), &[board.as_str()]).await?)
}

/// Adds `boards` to the rebuild requests (`keys.rs`) that the reconciler works through.
pub async fn request_rebuilds<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    keys: &KeyLayout,
    boards: &[&str],
) -> RedisResult<()> {
    redis::cmd("SADD")
        .arg(keys.rebuild_requests())
        .arg(boards)
        .query_async::<i64>(conn)
        .await
        .map(|_| ())
}

/// The script's answer for a row applied to a board without a seal.
const UNSEALED: &str = "applied_unsealed";

/// Whether a row's answer shows its board's projection cannot be trusted as it stands, so the
/// board is asked to be rebuilt: applied to a board without a seal, refused at a member whose
/// stored state is corrupt (`LBCORRUPT`), or refused with the whole call because a board key
/// has the wrong type. The refused rows are retried and, while the board is not rebuilt, held
/// back (fail-closed), so the board's lag grows: a bounded read then answers from PostgreSQL
/// without reading Redis and never sees the seal, and nothing else would ask before the
/// reconciler's next pass (lbchaos seed 1796245974399913903, about one run in four: "still
/// not whole (Broken) 30s after the read"). A row refused for its own marker (`LBWRONGTYPE`
/// of the marker key) or a bad argument is the row's fault, not the board's.
fn needs_rebuild(reply: &RedisResult<String>) -> bool {
    match reply {
        Ok(s) => s == UNSEALED || s.starts_with("failed:LBCORRUPT"),
        Err(e) => e.code() == Some("LBWRONGTYPE"),
    }
}

fn outcome(reply: RedisResult<String>) -> Result<RowOutcome, Outage> {
    match reply {
        Ok(s) if s == "applied" || s == UNSEALED => Ok(RowOutcome::Applied),
        Ok(s) if s == "duplicate" => Ok(RowOutcome::Duplicate),
        Ok(s) if s == "stale" => Ok(RowOutcome::Stale),
        Ok(s) if s.starts_with("failed:") => Ok(RowOutcome::Failed(
            s.trim_start_matches("failed:").to_owned(),
        )),
        Ok(other) => Ok(RowOutcome::Failed(format!(
            "unexpected script answer {other:?}"
        ))),
        Err(e) if is_outage(&e) => Err(Outage(e.to_string())),
        Err(e) => Ok(RowOutcome::Failed(e.to_string())),
    }
}

/// Whether an error says "Redis cannot take writes now" rather than "this row is bad".
/// Misconfiguration (NOPERM, MOVED/ASK from a cluster without cluster mode) counts too: it is
/// no row's fault, and parking every row for it would only move the problem.
pub fn is_outage(err: &RedisError) -> bool {
    if err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.kind() == ErrorKind::Io
    {
        return true;
    }
    matches!(
        err.code(),
        Some(
            "OOM"
                | "LOADING"
                | "BUSY"
                | "READONLY"
                | "MASTERDOWN"
                | "TRYAGAIN"
                | "CLUSTERDOWN"
                | "MOVED"
                | "ASK"
                | "NOSCRIPT"
                | "NOPERM"
                | "MISCONF"
        )
    )
}
