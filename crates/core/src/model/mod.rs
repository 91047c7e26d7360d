//! Domain types. Every value that reaches a SQL statement or a Redis key is built here from
//! validated input, so the rest of the code never handles an unchecked id.

pub mod order;

pub use order::{Order, Sort, TieBreak};

use std::fmt;

use serde::Serialize;
use uuid::Uuid;

/// The largest magnitude a score may have: a Redis sorted-set score is an IEEE double, exact
/// for integers only within ±(2^53 − 1). `user_scores` enforces the same bound with a CHECK.
pub const MAX_ABS_SCORE: i64 = (1 << 53) - 1;
/// Bounds of one command's delta (also a CHECK on `score_events.delta`).
pub const MIN_DELTA: i64 = -1000;
pub const MAX_DELTA: i64 = 1000;
pub const MAX_BOARD_ID_LEN: usize = crate::ids::MAX_IDENTIFIER_LEN;
pub const MAX_USER_ID_BYTES: usize = 128;
/// The most bytes an entry's metadata may take, as compact JSON.
pub const MAX_METADATA_BYTES: usize = 1024;

/// Why an input value was refused. `code()` is the stable, machine-readable name that the API
/// puts in its error body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error(
        "board id must be 1 to {MAX_BOARD_ID_LEN} characters of A-Z, a-z, 0-9, '_', '.' or '-'"
    )]
    BoardId,
    #[error("user id must be 1 to {MAX_USER_ID_BYTES} bytes of UTF-8 without control characters")]
    UserId,
    #[error("event id must be a non-nil UUID")]
    EventId,
    #[error("delta must be an integer")]
    DeltaNotInteger,
    #[error("delta must be between {MIN_DELTA} and {MAX_DELTA}")]
    DeltaOutOfRange,
    /// The command carried the other operator's field (or both, or neither).
    #[error(
        "this is a board whose operator is `{operator}`: a command carries `{field}` (and only it)"
    )]
    WrongValueField {
        operator: &'static str,
        field: &'static str,
    },
    #[error("delta must be between {min} and {max} on this board")]
    BoardDeltaOutOfRange { min: i64, max: i64 },
    #[error("score must be an integer")]
    ScoreNotInteger,
    #[error("score must be between {min} and {max} on this board")]
    BoardScoreOutOfRange { min: i64, max: i64 },
    #[error("metadata must be a JSON object")]
    InvalidMetadata,
    #[error("metadata must be at most {MAX_METADATA_BYTES} bytes as JSON")]
    MetadataTooLarge,
}

impl ValidationError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::BoardId => "invalid_board_id",
            Self::UserId => "invalid_user_id",
            Self::EventId => "invalid_event_id",
            Self::DeltaNotInteger => "invalid_delta",
            Self::DeltaOutOfRange | Self::BoardDeltaOutOfRange { .. } => "delta_out_of_range",
            Self::WrongValueField { .. } => "wrong_value_field",
            Self::ScoreNotInteger => "invalid_score",
            Self::BoardScoreOutOfRange { .. } => "score_out_of_range",
            Self::InvalidMetadata => "invalid_metadata",
            Self::MetadataTooLarge => "metadata_too_large",
        }
    }
}

/// A leaderboard's id. It appears inside Redis keys, so its alphabet is narrow: no braces
/// (they would change the Cluster hash tag), no separators, no spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct BoardId(String);

/// Between a board's id and one of its periods' (`weekly~20261130T000000Z`): outside the
/// identifier alphabet, so no board a client names can look like a period of another.
pub const PERIOD_SEPARATOR: char = '~';

/// Whether `raw` is a period id: a period's start in UTC to the second, `YYYYMMDDTHHMMSSZ`
/// (`lb_period_id`, migration V7). It says nothing of whether such a period exists.
pub fn is_period_id(raw: &str) -> bool {
    let b = raw.as_bytes();
    b.len() == 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
}

impl BoardId {
    /// A board as a client names it: an identifier, never one of its periods (a command, a
    /// definition and a read name the board; a read picks the period with `period=`).
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        if crate::ids::is_identifier(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ValidationError::BoardId)
        }
    }

    /// A board as the stores hold it: a board, or one period of a board that resets
    /// (`<board>~<period id>`): what the outbox, the reconciler's board list, rebuild requests
    /// and the operator's `--board` name.
    pub fn parse_stored(raw: &str) -> Result<Self, ValidationError> {
        match raw.split_once(PERIOD_SEPARATOR) {
            None => Self::parse(raw),
            Some((base, period)) if crate::ids::is_identifier(base) && is_period_id(period) => {
                Ok(Self(raw.to_owned()))
            }
            Some(_) => Err(ValidationError::BoardId),
        }
    }

    /// One period of this board.
    pub fn in_period(&self, period: &str) -> Result<Self, ValidationError> {
        Self::parse_stored(&format!(
            "{}{PERIOD_SEPARATOR}{period}",
            self.base().as_str()
        ))
    }

    /// The board this one is a period of; itself when it is no period.
    pub fn base(&self) -> BoardId {
        match self.0.split_once(PERIOD_SEPARATOR) {
            Some((base, _)) => Self(base.to_owned()),
            None => self.clone(),
        }
    }

    /// The period id, when this is a period of a board.
    pub fn period(&self) -> Option<&str> {
        self.0.split_once(PERIOD_SEPARATOR).map(|(_, p)| p)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BoardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A player's id, chosen by the game. Any UTF-8 without control characters; the byte limit
/// keeps keys, index entries and log lines bounded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct UserId(String);

impl UserId {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let ok = (1..=MAX_USER_ID_BYTES).contains(&raw.len()) && !raw.chars().any(char::is_control);
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(ValidationError::UserId)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The caller's stable id for one score command: the idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EventId(Uuid);

impl EventId {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        match Uuid::try_parse(raw) {
            // The nil UUID is what an uninitialised client field looks like: refusing it keeps
            // two unrelated commands from colliding on it.
            Ok(id) if !id.is_nil() => Ok(Self(id)),
            _ => Err(ValidationError::EventId),
        }
    }

    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl From<Uuid> for EventId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// A score change within [`MIN_DELTA`, `MAX_DELTA`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Delta(i32);

impl Delta {
    pub fn new(value: i64) -> Result<Self, ValidationError> {
        if (MIN_DELTA..=MAX_DELTA).contains(&value) {
            // In range, so it fits an i32.
            i32::try_from(value)
                .map(Self)
                .map_err(|_| ValidationError::DeltaOutOfRange)
        } else {
            Err(ValidationError::DeltaOutOfRange)
        }
    }

    /// From a JSON number: a float or an integer beyond i64 is refused with a precise reason.
    pub fn from_json(number: &serde_json::Number) -> Result<Self, ValidationError> {
        if let Some(v) = number.as_i64() {
            Self::new(v)
        } else if number.is_u64() {
            Err(ValidationError::DeltaOutOfRange)
        } else {
            // Integers beyond 64 bits arrive as floats: say they are out of range. A number
            // with no fractional part (1.0, 1e3) is an integer, as JSON Schema (and so the
            // OpenAPI document) counts them; 1.5 is not.
            match number.as_f64() {
                Some(f) if f.fract() == 0.0 => {
                    if (MIN_DELTA as f64..=MAX_DELTA as f64).contains(&f) {
                        Self::new(f as i64)
                    } else {
                        Err(ValidationError::DeltaOutOfRange)
                    }
                }
                _ => Err(ValidationError::DeltaNotInteger),
            }
        }
    }

    pub fn get(self) -> i32 {
        self.0
    }
}

/// What the database made of a command: the score and version that its first application
/// produced, and whether this arrival was a repeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommandOutcome {
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Uuid))]
    pub event_id: EventId,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub board: BoardId,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub user_id: UserId,
    pub score: i64,
    pub version: i64,
    pub duplicate: bool,
    /// False for a best board's submission that did not beat the standing best (then `score`
    /// and `version` are the standing best's); true otherwise.
    pub improved: bool,
    /// The period the command landed in, on a board that resets (its start in UTC,
    /// `YYYYMMDDTHHMMSSZ`); absent on a board that never resets. A repeat names the first
    /// run's period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
}

/// One line of a leaderboard answer, the same from both read paths: its rank in the read's
/// rank mode (`ranking.rs`), in the board's order (`model::Order`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RankedEntry {
    pub rank: u64,
    pub user_id: String,
    pub score: i64,
    /// The share of the board, in percent, whose score this entry's equals or beats (the
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
    /// The member's tie (`model::Order`): 0 on boards whose ties go by user id.
    pub tie: i64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_ids() {
        assert!(BoardId::parse("season-1.eu_west").is_ok());
        assert!(BoardId::parse(&"a".repeat(64)).is_ok());
        for bad in ["", "a b", "a{b}", "a:b", "é", &"a".repeat(65)] {
            assert_eq!(
                BoardId::parse(bad),
                Err(ValidationError::BoardId),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn periods_of_a_board() {
        let weekly = BoardId::parse("weekly").expect("board");
        let period = weekly.in_period("20261130T000000Z").expect("period");
        assert_eq!(period.as_str(), "weekly~20261130T000000Z");
        assert_eq!(
            (period.base(), period.period()),
            (weekly.clone(), Some("20261130T000000Z"))
        );
        assert_eq!(weekly.period(), None);
        // A period of a period is the base board's period.
        assert_eq!(
            period.in_period("20261207T000000Z").expect("period").base(),
            weekly
        );
        // Clients name boards, never periods.
        assert_eq!(
            BoardId::parse(period.as_str()),
            Err(ValidationError::BoardId)
        );
        assert_eq!(BoardId::parse_stored(period.as_str()), Ok(period));
        for bad in [
            "weekly~",
            "~20261130T000000Z",
            "weekly~2026-11-30",
            "weekly~20261130T000000",
            "weekly~20261130T000000Z~20261130T000000Z",
            "a b~20261130T000000Z",
        ] {
            assert_eq!(
                BoardId::parse_stored(bad),
                Err(ValidationError::BoardId),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn user_ids() {
        assert!(UserId::parse("Zoë 42").is_ok());
        assert!(UserId::parse(&"é".repeat(64)).is_ok()); // 128 bytes
        for bad in ["", "a\0b", "a\nb", "\u{7f}", &"é".repeat(65)] {
            assert_eq!(UserId::parse(bad), Err(ValidationError::UserId), "{bad:?}");
        }
    }

    #[test]
    fn event_ids() {
        let id = EventId::parse("6F9619FF-8B86-D011-B42D-00C04FC964FF").expect("valid uuid");
        assert_eq!(id.to_string(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
        assert!(EventId::parse("00000000-0000-0000-0000-000000000000").is_err());
        assert!(EventId::parse("not-a-uuid").is_err());
    }

    #[test]
    fn deltas() {
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).expect("number");
        assert_eq!(Delta::from_json(&n("-1000")).map(Delta::get), Ok(-1000));
        assert_eq!(Delta::from_json(&n("1000")).map(Delta::get), Ok(1000));
        assert_eq!(
            Delta::from_json(&n("1001")),
            Err(ValidationError::DeltaOutOfRange)
        );
        assert_eq!(
            Delta::from_json(&n("9223372036854775808")),
            Err(ValidationError::DeltaOutOfRange)
        );
        assert_eq!(
            Delta::from_json(&n("-99999999999999999999999")),
            Err(ValidationError::DeltaOutOfRange)
        );
        assert_eq!(
            Delta::from_json(&n("1e30")),
            Err(ValidationError::DeltaOutOfRange)
        );
        assert_eq!(Delta::from_json(&n("1.0")).map(Delta::get), Ok(1));
        assert_eq!(Delta::from_json(&n("-2e2")).map(Delta::get), Ok(-200));
        assert_eq!(
            Delta::from_json(&n("1.5")),
            Err(ValidationError::DeltaNotInteger)
        );
    }

    #[test]
    fn max_score_is_exact_in_a_double() {
        assert_eq!(MAX_ABS_SCORE as f64 as i64, MAX_ABS_SCORE);
        // One past the bound, integers start to round.
        assert_ne!((MAX_ABS_SCORE + 2) as f64 as i64, MAX_ABS_SCORE + 2);
    }
}
