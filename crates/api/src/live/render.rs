//! A live message: its shape (documented in the OpenAPI document through these types), its SSE
//! frame, its id and its digest.
//!
//! The id is `<sequence>.<digest>`: the board's change sequence when the message was read
//! (core `projection/live.rs`; it grows with every change, so ids increase) and 16 hex digits
//! of a digest of what the message says (its `top`, the player's `me`, and the kind of
//! freshness: source, reason, projection, updates; not the lag numbers, which move by
//! themselves). A stream sends a message only when its digest differs from the last one sent,
//! and a client that reconnects with `Last-Event-ID` gets a snapshot only when its digest
//! differs from the one it names: nothing changed for it, nothing is sent again.

use axum::body::Bytes;
use ledgerboard_core::model::{BoardId, RankedEntry};
use serde::Serialize;

use crate::freshness::Freshness;

/// How this api process learns of changes now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Updates {
    /// From the projection's pub/sub channel, as they happen (within
    /// `api.live_min_interval_ms`).
    Pubsub,
    /// The pub/sub connection is down: the board is read every `api.live_poll_ms`, so a
    /// change may reach the stream that much later.
    Polling,
}

/// The `freshness` of a live message: the reads' object, and how updates arrive.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
pub struct LiveFreshness {
    #[serde(flatten)]
    pub read: Freshness,
    pub updates: Updates,
}

/// The board's first N.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LiveTop<'a> {
    /// Ranks are ordinal.
    pub entries: &'a [RankedEntry],
    /// Entries on the board.
    pub total: u64,
}

/// The player's own part (with a player token).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LiveMe<'a> {
    /// The player's entry; null while the player is not on the board.
    pub entry: Option<&'a RankedEntry>,
    /// The player and up to `radius` entries on each side, in rank order; empty while the
    /// player is not on the board.
    pub around: &'a [RankedEntry],
}

/// One event of the stream as an SSE parser hands it over (the document's schema of a
/// `text/event-stream` answer describes its events): `data` is one [`LiveMessage`] as JSON.
/// Never built: the stream writes these fields as SSE lines (`split`).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct LiveEvent {
    /// `<sequence>.<digest>`: send it back as `Last-Event-ID` when reconnecting.
    pub id: String,
    /// Always `snapshot`.
    #[schema(example = "snapshot")]
    pub event: String,
    /// A LiveMessage (see its schema) as JSON text.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

/// One message's `data` (event `snapshot`): an absolute snapshot, so a client never needs
/// the messages it missed.
#[derive(Serialize, utoipa::ToSchema)]
pub struct LiveMessage<'a> {
    /// The board asked for.
    pub board: &'a str,
    /// The period read, on a board that resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<&'a str>,
    /// The cohort read, of a competition's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<u32>,
    pub top: LiveTop<'a>,
    /// Only on a stream opened with a player token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub me: Option<LiveMe<'a>>,
    pub freshness: LiveFreshness,
}

/// A hub's shared part of every message on it.
#[derive(Debug)]
pub struct Snapshot {
    /// The board's change sequence before it was read (0 before its first change).
    pub sequence: i64,
    /// The board read (a period's or a cohort's board id on a board that resets).
    pub target: BoardId,
    pub period: Option<String>,
    pub cohort: Option<u32>,
    pub archived: bool,
    /// `{"board":…,"period":…,"top":{…}`: the data up to where the player's part goes.
    pub head: String,
    /// `,"freshness":{…}}`: the rest.
    pub tail: String,
    /// Of the head and the freshness's kind.
    pub digest: u64,
    /// Whether the answer came from a whole projection (then an unchanged sequence means an
    /// unchanged answer, and the hub need not read it again).
    pub clean: bool,
    /// How updates arrived when it was read (a change of it is news to every stream).
    pub updates: Updates,
    /// The whole SSE frame for a stream without a player part.
    pub frame: Bytes,
}

/// FNV-1a, 64 bits: a digest every api process computes alike (std's hasher is seeded per
/// process), so an id given by one replica resumes on another.
pub fn digest(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The data's JSON split at the player's part: (head, tail).
pub fn split(message: &LiveMessage<'_>) -> (String, String) {
    // Plain fields and serde_json values: serializing cannot fail.
    let json = serde_json::to_string(message).unwrap_or_default();
    match json.rfind(",\"freshness\":") {
        Some(at) => (json[..at].to_owned(), json[at..].to_owned()),
        None => (json, String::new()),
    }
}

/// The kind of a freshness, for the digest: what a client should hear about when it changes.
pub fn freshness_kind(f: &LiveFreshness) -> String {
    serde_json::to_string(&(f.read.source, f.read.reason, f.read.projection, f.updates))
        .unwrap_or_default()
}

/// One SSE message: `id`, `event: snapshot` and the data on one line (JSON has no newline).
pub fn frame(sequence: i64, digest: u64, data: &[&str]) -> Bytes {
    let len: usize = data.iter().map(|d| d.len()).sum();
    let mut out = String::with_capacity(len + 64);
    out.push_str("id: ");
    out.push_str(&id(sequence, digest));
    out.push_str("\nevent: snapshot\ndata: ");
    for d in data {
        out.push_str(d);
    }
    out.push_str("\n\n");
    Bytes::from(out)
}

pub fn id(sequence: i64, digest: u64) -> String {
    format!("{sequence}.{digest:016x}")
}

/// The digest an id names (`Last-Event-ID`); None for an id this api did not give.
pub fn digest_of_id(id: &str) -> Option<u64> {
    let (sequence, digest) = id.trim().split_once('.')?;
    sequence.parse::<i64>().ok()?;
    (digest.len() == 16)
        .then(|| u64::from_str_radix(digest, 16).ok())
        .flatten()
}

/// What a reconnecting client's `Last-Event-ID` names: the digest of the last message it
/// got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    pub digest: u64,
}

impl Resume {
    /// None for an id this api did not give (the client then gets a snapshot).
    pub fn parse(last_event_id: &str) -> Option<Resume> {
        digest_of_id(last_event_id).map(|digest| Resume { digest })
    }
}

/// A heartbeat: an SSE comment, which clients ignore and proxies see as traffic.
pub const HEARTBEAT: &[u8] = b": hb\n\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_names_its_digest() {
        let id = id(1_765_000_000_000_001, 0xdead_beef);
        assert_eq!(id, "1765000000000001.00000000deadbeef");
        assert_eq!(digest_of_id(&id), Some(0xdead_beef));
        assert_eq!(digest_of_id("12"), None);
        assert_eq!(digest_of_id("x.00000000deadbeef"), None);
        assert_eq!(digest_of_id("1.beef"), None);
    }

    #[test]
    fn the_digest_is_fixed_and_separates_parts() {
        assert_eq!(digest(&[b"ab", b"c"]), digest(&[b"ab", b"c"]));
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
    }
}
