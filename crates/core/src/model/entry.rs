//! Entries as the reads show them and as the projector writes them to Redis.

use serde::Serialize;

use super::ids::{BoardId, EventId, UserId};
use super::order::Key;

/// One line of a leaderboard answer, the same from both read paths: its rank in the read's
/// rank mode (`ranking.rs`), in the board's order (`model::Order`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RankedEntry {
    pub rank: u64,
    pub user_id: String,
    /// The entry's score: on a board with columns, its first column.
    pub score: i64,
    /// On a board with columns only: the entry's value in each column, in the order the
    /// definition lists them (the first is `score`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<i64>>,
    /// The share of the board, in percent, whose tuple this entry's equals or beats (the
    /// leader has 100; tied entries have the same).
    pub percentile: f64,
    /// The entry's metadata, a JSON object stored with its score; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<serde_json::Value>,
}

/// One member as a read shows it: its entry and the version of its score (0 when the
/// projection holds a score without a version).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberStanding {
    pub entry: RankedEntry,
    pub version: i64,
}

/// What the projector writes to Redis for one outbox row: an absolute score and the version
/// it belongs to, so repeated or reordered deliveries are harmless. Built only from validated
/// ids, since they become Redis keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectionEntry {
    pub outbox_id: i64,
    pub event_id: EventId,
    pub board: BoardId,
    pub user_id: UserId,
    pub score: i64,
    pub version: i64,
    /// The member's other columns and tie (`model::Key`): what orders it after its score.
    pub key: Key,
    /// The member's metadata after the command, as JSON text (None: it has none).
    pub metadata: Option<String>,
    /// What the row asks of the projection (moderation, V6).
    pub change: EntryChange,
}

/// What an outbox row asks of the projection (`leaderboard_outbox.moderation`, V6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryChange {
    /// Place the member at the row's absolute state (a score, an unban).
    #[default]
    Place,
    /// Take the member out and keep a tombstone at the row's version (a removal, a ban, a
    /// banned user's score).
    Hide,
    /// Take out every trace of the user, tombstone included (an erasure).
    Erase,
}

impl EntryChange {
    /// The outbox column's value (None for a placement).
    pub fn parse(column: Option<&str>) -> Option<EntryChange> {
        match column {
            None => Some(EntryChange::Place),
            Some("hide") => Some(EntryChange::Hide),
            Some("erase") => Some(EntryChange::Erase),
            Some(_) => None,
        }
    }

    /// The projection script's argument (`lua/project.lua`, ARGV[7]).
    pub fn as_arg(self) -> &'static str {
        match self {
            EntryChange::Place => "",
            EntryChange::Hide => "hide",
            EntryChange::Erase => "erase",
        }
    }
}
