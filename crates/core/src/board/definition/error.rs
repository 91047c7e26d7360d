//! Why a declaration is refused before anything is written, each reason with its stable code.

use super::types::MAX_DISPLAY_NAME_CHARS;
use crate::board::operator::Operator;
use crate::model::{MAX_ABS_SCORE, MAX_COLUMNS};

/// Most boards one board feeds (a command then writes at most 8 entries).
pub const MAX_FEEDS: usize = 7;

/// Why a declaration was refused before anything was written. `code()` is the stable name the
/// api puts in its error body (422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    #[error("operator must be one of {}", Operator::names())]
    Operator,
    #[error("sort must be descending or ascending")]
    Sort,
    #[error("tie_break must be user_id or earliest")]
    TieBreak,
    #[error(
        "min_score and max_score must be integers within ±{MAX_ABS_SCORE} (2^53 - 1, where a Redis score is exact), min_score <= max_score"
    )]
    ScoreBounds,
    #[error(
        "min_delta and max_delta must be integers within ±{MAX_ABS_SCORE}, min_delta <= max_delta"
    )]
    DeltaBounds,
    #[error(
        "min_delta and max_delta apply to add boards only; a {0} board takes a score within min_score and max_score"
    )]
    DeltaBoundsNotAllowed(&'static str),
    #[error(
        "display_name must be at most {MAX_DISPLAY_NAME_CHARS} characters without control characters"
    )]
    DisplayName,
    #[error(
        "reset must be never, manual, daily, weekly, monthly, \"every <n>s\" (n from 1 to 99999999) or a five-field cron expression that fires at least once in 8 years (minute hour day-of-month month day-of-week, such as \"0 0 * * MON\")"
    )]
    Reset,
    #[error("time_zone must be an IANA time zone name PostgreSQL knows (such as Europe/Paris)")]
    TimeZone,
    #[error(
        "columns must list 1 to {MAX_COLUMNS} columns, each {{\"name\", \"order\": descending|ascending, \"min\"?, \"max\"?}} with a distinct name of 1 to 32 characters of a-z, 0-9 and _ starting with a letter"
    )]
    Columns,
    #[error(
        "column {0}: min and max must be integers within ±{MAX_ABS_SCORE} (2^53 - 1, where a Redis score is exact), min <= max"
    )]
    ColumnBounds(String),
    #[error(
        "a board with columns states its first column's order and bounds in columns, not in sort, min_score and max_score"
    )]
    ColumnsAndScore,
    #[error(
        "feeds must list at most {MAX_FEEDS} distinct board ids (no period, not the board itself)"
    )]
    Feeds,
    #[error("write_policy must be server or player")]
    WritePolicy,
    #[error(
        "attempts must be null (none) or {{\"min_duration_ms\"?: 0 to 86400000, \"max_per_period\"?: 1 to 1000000, \"ttl_s\"?: 1 to 86400}}"
    )]
    Attempts,
    #[error(
        "review must be null (none) or {{\"ceiling\"?: [one integer or null per column, within ±{MAX_ABS_SCORE}], \"max_jump\"?: 1 to {MAX_ABS_SCORE}, \"max_per_minute\"?: 1 to 10000}}"
    )]
    Review,
}

impl DefinitionError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Operator => "invalid_operator",
            Self::Sort => "invalid_sort",
            Self::TieBreak => "invalid_tie_break",
            Self::ScoreBounds => "invalid_score_bounds",
            Self::DeltaBounds => "invalid_delta_bounds",
            Self::DeltaBoundsNotAllowed(_) => "delta_bounds_not_allowed",
            Self::DisplayName => "invalid_display_name",
            Self::Reset => "invalid_reset",
            Self::TimeZone => "invalid_time_zone",
            Self::Columns => "invalid_columns",
            Self::ColumnBounds(_) => "invalid_column_bounds",
            Self::ColumnsAndScore => "columns_and_score",
            Self::Feeds => "invalid_feeds",
            Self::WritePolicy => "invalid_write_policy",
            Self::Attempts => "invalid_attempts",
            Self::Review => "invalid_review",
        }
    }
}
