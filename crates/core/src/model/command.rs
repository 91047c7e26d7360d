//! A command's values and what the database made of it: the score bound, deltas, metadata's
//! size, and the outcome a command answers with.

use serde::Serialize;

use super::error::ValidationError;
use super::ids::{BoardId, EventId, UserId};

/// The largest magnitude a score may have: a Redis sorted-set score is an IEEE double, exact
/// for integers only within ±(2^53 − 1). `user_scores` enforces the same bound with a CHECK.
pub const MAX_ABS_SCORE: i64 = (1 << 53) - 1;
/// Bounds of one command's delta (also a CHECK on `score_events.delta`).
pub const MIN_DELTA: i64 = -1000;
pub const MAX_DELTA: i64 = 1000;
/// The most bytes an entry's metadata may take, as compact JSON.
pub const MAX_METADATA_BYTES: usize = 1024;

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

/// A command's value as the body carried it: one integer (a board of one column), or one per
/// column of a board with columns, as an array in the columns' order or an object by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Submitted {
    /// One integer.
    #[cfg_attr(feature = "openapi", schema(value_type = i64))]
    One(serde_json::Number),
    /// One integer per column, in the order the board's definition lists them.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<i64>))]
    List(Vec<serde_json::Number>),
    /// One integer per column, by the column's name.
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, i64>))]
    Named(std::collections::BTreeMap<String, serde_json::Number>),
}

/// One board's outcome of a command that its board fed to it (linked boards).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FedOutcome {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub board: BoardId,
    pub score: i64,
    /// On a board with columns: the entry's value in each column, in the definition's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<i64>>,
    pub version: i64,
    pub duplicate: bool,
    pub improved: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
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
    /// The entry's score (on a board with columns, its first column).
    pub score: i64,
    /// On a board with columns: the entry's value in each column, in the definition's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Vec<i64>>,
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
    /// The cohort of the period the command landed in, on a competition with cohorts (the
    /// player's, by its entry: read it with `cohort=`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<u32>,
    /// On a board that feeds others: each fed board's outcome of the same command, in the
    /// order the definition lists them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<FedOutcome>,
}

#[cfg(test)]
mod tests {
    use super::*;

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
