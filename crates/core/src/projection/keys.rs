//! The Redis key layout: the one place that builds key names.
//!
//! ```text
//! <namespace>:lb:{<board>}:z          sorted set   member (user_id, or its tie key and user_id:
//!                                                  member.rs) → score
//! <namespace>:lb:{<board>}:v          hash         user_id → version of the score in :z (and
//!                                                  the member's tie key, member.rs)
//! <namespace>:lb:{<board>}:d          sorted set   the board's distinct scores (member: the
//!                                                  score in decimal; score: the score), for
//!                                                  dense ranks; the seal's `dcard` counts them;
//!                                                  kept only while the seal has `dcard`
//! <namespace>:lb:{<board>}:x          hash         user_id → the entry's metadata (JSON text),
//!                                                  for entries that have some
//! <namespace>:lb:{<board>}:t          hash         user_id → the version that hid the member
//!                                                  (moderation's tombstone; not per generation)
//! <namespace>:lb:{<board>}:e:<event>  string       marker of an applied event (with a TTL)
//! <namespace>:lb:{<board>}:q          string       the board's change sequence: moved forward
//!                                                  by every projection call that applied a
//!                                                  row (lua/project.lua; not per generation)
//! <namespace>:lb:{<board>}:m          hash         the seal: gen (generation id), card (members
//!                                                  the projection was given), dcard (distinct
//!                                                  scores :d holds), built_at (ms)
//! <namespace>:lb:{<board>}:z:rebuild  sorted set   a rebuild's new generation, until it goes live
//! <namespace>:lb:{<board>}:v:rebuild  hash         (same)
//! <namespace>:lb:{<board>}:d:rebuild  sorted set   (same)
//! <namespace>:lb:{<board>}:x:rebuild  hash         (same)
//! <namespace>:lb:{<board>}:m:rebuild  hash         (same): while it exists, projection writes
//!                                                  reach the new generation too
//! <namespace>:lb:{<board>}:z:retired  sorted set   the generation a rebuild replaced, until deleted
//! <namespace>:lb:{<board>}:v:retired  hash         (same)
//! <namespace>:lb:{<board>}:d:retired  sorted set   (same)
//! <namespace>:lb:{<board>}:x:retired  hash         (same)
//! <namespace>:reconciler:lock         string       the single-reconciler lock (owner token, TTL)
//! <namespace>:rebuild:requests        set          boards a reader or projector found unsealed
//! <namespace>:rebuild:dense           set          base boards read with dense ranks: their
//!                                                  rebuilds keep :d (others keep none)
//! <namespace>:live                    channel      pub/sub: '<sequence> <board>' per board a
//!                                                  projection call changed (live updates)
//! ```
//!
//! A board's projection is *sealed* when `:m` exists and `ZCARD :z` and `HLEN :v` both equal its
//! `card`: then it holds every member PostgreSQL had when it was built, plus every row projected
//! since. Only a rebuild seals a board. An empty Redis, a board whose keys were deleted or
//! evicted, or a member added or removed by hand, all break the seal, and readers see it in the
//! same round trip as their answer (`read.rs`).
//!
//! Every key of one board carries the board id as its hash tag (`{<board>}`), so a script call
//! that touches several of them stays within one Redis Cluster slot. Board ids are validated
//! ([`BoardId`]) to exclude braces, so the tag cannot be broken by a crafted id. The namespace
//! lets several deployments, or tests, share one Redis without touching each other's keys.

use crate::model::{BoardId, EventId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    namespace: String,
}

impl KeyLayout {
    /// `namespace` must already be validated (see `config::RedisSettings`).
    pub fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn board_prefix(&self, board: &BoardId) -> String {
        format!("{}:lb:{{{}}}", self.namespace, board.as_str())
    }

    /// The keys `lua/read.lua` reads, in its `KEYS` order ([`Self::scores`], [`Self::versions`],
    /// [`Self::meta`], [`Self::distinct`], [`Self::metadata`]), added to `cmd` from one
    /// spelling of the board's prefix: every read sends them, and their ten `format!`s were
    /// 2% of the api's CPU on `users/{id}`.
    pub fn add_read_keys(&self, board: &BoardId, cmd: &mut redis::Cmd) {
        let mut key = self.board_prefix(board);
        let prefix = key.len();
        for suffix in [":z", ":v", ":m", ":d", ":x"] {
            key.truncate(prefix);
            key.push_str(suffix);
            cmd.arg(key.as_bytes());
        }
    }

    /// The board's sorted set: member user id, score the absolute score.
    pub fn scores(&self, board: &BoardId) -> String {
        format!("{}:z", self.board_prefix(board))
    }

    /// The board's hash of user id → version of the score held in [`Self::scores`].
    pub fn versions(&self, board: &BoardId) -> String {
        format!("{}:v", self.board_prefix(board))
    }

    /// The board's distinct scores (member: the score in decimal; score: the score): a dense
    /// rank is one more than the count of distinct scores ahead, one ZCOUNT.
    pub fn distinct(&self, board: &BoardId) -> String {
        format!("{}:d", self.board_prefix(board))
    }
    pub fn rebuild_distinct(&self, board: &BoardId) -> String {
        format!("{}:d:rebuild", self.board_prefix(board))
    }
    pub fn retired_distinct(&self, board: &BoardId) -> String {
        format!("{}:d:retired", self.board_prefix(board))
    }

    /// The board's hash of user id → the entry's metadata (JSON text), written with the
    /// member's version by the scripts that write members.
    pub fn metadata(&self, board: &BoardId) -> String {
        format!("{}:x", self.board_prefix(board))
    }
    pub fn rebuild_metadata(&self, board: &BoardId) -> String {
        format!("{}:x:rebuild", self.board_prefix(board))
    }
    pub fn retired_metadata(&self, board: &BoardId) -> String {
        format!("{}:x:retired", self.board_prefix(board))
    }

    /// The board's tombstones: user id → the version that hid the member (a removal, a ban, a
    /// banned user's score; `lua/project.lua`). Not part of a generation: a rebuild leaves it.
    pub fn tombstones(&self, board: &BoardId) -> String {
        format!("{}:t", self.board_prefix(board))
    }

    /// The marker of an event already applied to the board.
    pub fn event_marker(&self, board: &BoardId, event: &EventId) -> String {
        format!("{}:e:{}", self.board_prefix(board), event)
    }

    /// The board's change sequence: an integer that `lua/project.lua` moves forward, in the
    /// same step, whenever it applies a row to the board. Not part of a generation (a rebuild
    /// leaves it), so it only ever grows while it exists.
    pub fn changes(&self, board: &BoardId) -> String {
        format!("{}:q", self.board_prefix(board))
    }

    /// The board's seal (see the module's documentation).
    pub fn meta(&self, board: &BoardId) -> String {
        format!("{}:m", self.board_prefix(board))
    }

    /// A rebuild's new generation of [`Self::scores`] and [`Self::versions`].
    pub fn rebuild_scores(&self, board: &BoardId) -> String {
        format!("{}:z:rebuild", self.board_prefix(board))
    }
    pub fn rebuild_versions(&self, board: &BoardId) -> String {
        format!("{}:v:rebuild", self.board_prefix(board))
    }
    /// The seal of a rebuild's new generation; its existence marks a build in progress.
    pub fn rebuild_meta(&self, board: &BoardId) -> String {
        format!("{}:m:rebuild", self.board_prefix(board))
    }
    /// The generation a rebuild replaced, until it is deleted.
    pub fn retired_scores(&self, board: &BoardId) -> String {
        format!("{}:z:retired", self.board_prefix(board))
    }
    pub fn retired_versions(&self, board: &BoardId) -> String {
        format!("{}:v:retired", self.board_prefix(board))
    }

    /// Every key of one board but its event markers (which expire by themselves): what
    /// archiving a period unlinks. One hash tag, so one slot in cluster mode.
    pub fn board_keys(&self, board: &BoardId) -> Vec<String> {
        vec![
            self.scores(board),
            self.versions(board),
            self.distinct(board),
            self.metadata(board),
            self.tombstones(board),
            self.meta(board),
            self.changes(board),
            self.rebuild_scores(board),
            self.rebuild_versions(board),
            self.rebuild_distinct(board),
            self.rebuild_metadata(board),
            self.rebuild_meta(board),
            self.retired_scores(board),
            self.retired_versions(board),
            self.retired_distinct(board),
            self.retired_metadata(board),
        ]
    }

    /// The lock that lets one reconciler (or rebuild) work at a time.
    pub fn reconciler_lock(&self) -> String {
        format!("{}:reconciler:lock", self.namespace)
    }

    /// Boards whose projection a reader or a projector found unsealed; the reconciler
    /// rebuilds them one at a time. Not board-tagged: it is one key for all boards.
    pub fn rebuild_requests(&self) -> String {
        format!("{}:rebuild:requests", self.namespace)
    }

    /// Boards read with dense ranks (their base board, so every period and cohort of it):
    /// their rebuilds keep the distinct scores `:d`, which no other board pays for
    /// (`generation.rs`). Added by a dense read that found a seal without `dcard`; never
    /// removed. Not board-tagged.
    pub fn dense_boards(&self) -> String {
        format!("{}:rebuild:dense", self.namespace)
    }

    /// Boards an operator asked to rebuild whatever their seal says (the console's "rebuild":
    /// a member edited in place keeps the seal's counts, so the seal alone would call the
    /// board whole and the reconciler would decline a plain request). Not board-tagged.
    pub fn forced_rebuild_requests(&self) -> String {
        format!("{}:rebuild:forced", self.namespace)
    }

    /// Boards an operator asked the reconciler to check now: a pass over each, repairs and
    /// report included. Not board-tagged.
    pub fn check_requests(&self) -> String {
        format!("{}:reconcile:requests", self.namespace)
    }

    /// The pub/sub channel of live updates: one message `<sequence> <board>` for each board a
    /// projection call changed (`projection/live.rs`). One channel for every board, published
    /// with plain PUBLISH: a Redis Cluster carries it to every node, so one subscriber on any
    /// node hears every board (SPUBLISH would need a subscription on each shard).
    pub fn live_channel(&self) -> String {
        format!("{}:live", self.namespace)
    }

    /// A pattern matching every key of this namespace (the chaos run cleans up with it).
    pub fn all_keys_pattern(&self) -> String {
        format!("{}:*", self.namespace)
    }
}

/// The Redis Cluster slot of a key (CRC16/XMODEM of the hash tag, modulo 16384), so tests and
/// tools can check that a board's keys share one slot without a cluster at hand.
pub fn cluster_slot(key: &str) -> u16 {
    cluster_slot_bytes(key.as_bytes())
}

/// [`cluster_slot`] of a key given as bytes.
pub fn cluster_slot_bytes(bytes: &[u8]) -> u16 {
    let tagged = bytes
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            bytes[open + 1..]
                .iter()
                .position(|&b| b == b'}')
                .filter(|&len| len > 0)
                .map(|len| &bytes[open + 1..open + 1 + len])
        })
        .unwrap_or(bytes);
    crc16_xmodem(tagged) % 16384
}

fn crc16_xmodem(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let keys = KeyLayout::new("prod");
        let board = BoardId::parse("s1").expect("board");
        let event = EventId::parse("6f9619ff-8b86-d011-b42d-00c04fc964ff").expect("event");
        assert_eq!(keys.scores(&board), "prod:lb:{s1}:z");
        assert_eq!(keys.versions(&board), "prod:lb:{s1}:v");
        let mut read = redis::Cmd::new();
        keys.add_read_keys(&board, &mut read);
        let spelt = [
            keys.scores(&board),
            keys.versions(&board),
            keys.meta(&board),
            keys.distinct(&board),
            keys.metadata(&board),
        ];
        let mut expected = redis::Cmd::new();
        for key in &spelt {
            expected.arg(key);
        }
        assert_eq!(read.get_packed_command(), expected.get_packed_command());
        assert_eq!(
            keys.event_marker(&board, &event),
            "prod:lb:{s1}:e:6f9619ff-8b86-d011-b42d-00c04fc964ff"
        );
    }

    #[test]
    fn one_slot_per_board() {
        // Reference values from Redis's own CLUSTER KEYSLOT.
        assert_eq!(cluster_slot("foo"), 12182);
        assert_eq!(cluster_slot("{user1000}.following"), 3443);
        let keys = KeyLayout::new("ns");
        let board = BoardId::parse("weekly").expect("board");
        let event = EventId::parse("6f9619ff-8b86-d011-b42d-00c04fc964ff").expect("event");
        let slot = cluster_slot(&keys.scores(&board));
        assert_eq!(slot, cluster_slot("weekly"));
        assert_eq!(slot, cluster_slot(&keys.versions(&board)));
        assert_eq!(slot, cluster_slot(&keys.event_marker(&board, &event)));
        assert_eq!(slot, cluster_slot(&keys.rebuild_scores(&board)));
        assert_eq!(slot, cluster_slot(&keys.retired_versions(&board)));
        assert_eq!(slot, cluster_slot(&keys.meta(&board)));
        assert_eq!(slot, cluster_slot(&keys.distinct(&board)));
        assert_eq!(slot, cluster_slot(&keys.rebuild_distinct(&board)));
        assert_eq!(slot, cluster_slot(&keys.retired_distinct(&board)));
        assert_eq!(slot, cluster_slot(&keys.metadata(&board)));
        assert_eq!(slot, cluster_slot(&keys.rebuild_metadata(&board)));
        assert_eq!(slot, cluster_slot(&keys.retired_metadata(&board)));
        assert_eq!(slot, cluster_slot(&keys.rebuild_meta(&board)));
        assert_eq!(slot, cluster_slot(&keys.changes(&board)));
    }
}
