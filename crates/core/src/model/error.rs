//! Why an input value was refused, with the stable code the api puts in its error body.

use super::command::{MAX_DELTA, MAX_METADATA_BYTES, MIN_DELTA};
use super::ids::{MAX_BOARD_ID_LEN, MAX_USER_ID_BYTES};

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
    /// A value of a board with columns that is not one integer per column.
    #[error(
        "on this board {field} is one integer per column: an array [{}] in this order, or an object of them by name", names.join(", ")
    )]
    ColumnsShape {
        field: &'static str,
        names: Vec<String>,
    },
    #[error("{field}.{column} must be an integer")]
    ColumnNotInteger { field: &'static str, column: String },
    #[error("{field}.{column} must be between {min} and {max} on this board")]
    ColumnOutOfRange {
        field: &'static str,
        column: String,
        min: i64,
        max: i64,
    },
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
            Self::ColumnsShape { field: "delta", .. }
            | Self::ColumnNotInteger { field: "delta", .. } => "invalid_delta",
            Self::ColumnsShape { .. } | Self::ColumnNotInteger { .. } => "invalid_score",
            Self::ColumnOutOfRange { field: "delta", .. } => "delta_out_of_range",
            Self::ColumnOutOfRange { .. } => "score_out_of_range",
            Self::InvalidMetadata => "invalid_metadata",
            Self::MetadataTooLarge => "metadata_too_large",
        }
    }
}
