//! What a board asks of players' scores (issue 38), part of its definition: attempts (a score
//! must come from a run the server saw start) and review rules (a score past one is held for
//! review instead of applied, `board/guard/`). Stored as JSON (`board_definitions.attempts`,
//! `.review`, migration V16); NULL when off.

use serde::{Deserialize, Serialize};

use super::error::DefinitionError;
use crate::model::MAX_ABS_SCORE;

/// Longest an attempt may have to run before its score is taken: a day.
pub const MAX_MIN_DURATION_MS: i64 = 86_400_000;
/// Longest an attempt lives: a day (its default: an hour).
pub const MAX_ATTEMPT_TTL_S: i32 = 86_400;
const DEFAULT_ATTEMPT_TTL_S: i32 = 3_600;
/// Most attempts a player may be allowed per period.
pub const MAX_ATTEMPTS_PER_PERIOD: i32 = 1_000_000;
/// Most score commands a player may be allowed per minute on one board.
pub const MAX_PER_MINUTE: i32 = 10_000;

/// A board that requires attempts: a player token's score must carry an attempt the player
/// started on this board, in the same period, at least `min_duration_ms` before, and not used
/// by another score. A service token's score may carry one (it is then checked the same way).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptRule {
    /// The shortest run whose score is taken, in milliseconds (0: none).
    #[serde(default)]
    pub min_duration_ms: i64,
    /// How many attempts a player may start per period (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_period: Option<i32>,
    /// How long an attempt may be used after it started, in seconds (default 3600).
    #[serde(default = "default_ttl")]
    pub ttl_s: i32,
}

fn default_ttl() -> i32 {
    DEFAULT_ATTEMPT_TTL_S
}

/// Review rules: a score that breaks one is recorded and held for review (never shown until
/// approved) while its sender is answered as though it was applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewRules {
    /// Per column, in the columns' order: a value better than this (greater in a descending
    /// column, smaller in an ascending one) is held; null: no ceiling for that column.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ceiling: Vec<Option<i64>>,
    /// The most the first column may move from the player's current entry in one command (a
    /// first entry is judged by the ceiling alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_jump: Option<i64>,
    /// The most score commands a player may send to the board in one minute (of the database
    /// clock); the ones past it are held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_minute: Option<i32>,
}

impl AttemptRule {
    /// `raw` as a declaration states it: null (no attempts) or the rule, checked.
    pub fn from_json(raw: &serde_json::Value) -> Result<Option<Self>, DefinitionError> {
        if raw.is_null() {
            return Ok(None);
        }
        let rule: Self =
            serde_json::from_value(raw.clone()).map_err(|_| DefinitionError::Attempts)?;
        let ok = (0..=MAX_MIN_DURATION_MS).contains(&rule.min_duration_ms)
            && (1..=MAX_ATTEMPT_TTL_S).contains(&rule.ttl_s)
            && rule
                .max_per_period
                .is_none_or(|n| (1..=MAX_ATTEMPTS_PER_PERIOD).contains(&n));
        ok.then_some(Some(rule)).ok_or(DefinitionError::Attempts)
    }
}

impl ReviewRules {
    /// `raw` as a declaration states it: null (no review) or the rules, checked as far as they
    /// can be without the board's columns ([`ReviewRules::check`] does the rest). Rules that
    /// state nothing are no review.
    pub fn from_json(raw: &serde_json::Value) -> Result<Option<Self>, DefinitionError> {
        if raw.is_null() {
            return Ok(None);
        }
        let rules: Self =
            serde_json::from_value(raw.clone()).map_err(|_| DefinitionError::Review)?;
        Ok((!rules.is_empty()).then_some(rules))
    }

    pub fn is_empty(&self) -> bool {
        self.ceiling.iter().all(Option::is_none)
            && self.max_jump.is_none()
            && self.max_per_minute.is_none()
    }

    /// Whether these rules fit a board of `columns` columns.
    pub fn check(&self, columns: usize) -> Result<(), DefinitionError> {
        let exact = |v: i64| (-MAX_ABS_SCORE..=MAX_ABS_SCORE).contains(&v);
        let ok = self.ceiling.len() <= columns.max(1)
            && self.ceiling.iter().flatten().all(|&c| exact(c))
            && self
                .max_jump
                .is_none_or(|j| (1..=MAX_ABS_SCORE).contains(&j))
            && self
                .max_per_minute
                .is_none_or(|n| (1..=MAX_PER_MINUTE).contains(&n));
        ok.then_some(()).ok_or(DefinitionError::Review)
    }
}

/// Stored JSON (`board_definitions.attempts` or `.review`) back into its rule; None for NULL.
pub(super) fn from_stored<T: serde::de::DeserializeOwned>(
    json: Option<&str>,
) -> Result<Option<T>, serde_json::Error> {
    json.map(serde_json::from_str).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attempts_take_their_defaults_and_refuse_what_is_out_of_bounds() {
        assert_eq!(
            AttemptRule::from_json(&json!({"min_duration_ms": 5000})),
            Ok(Some(AttemptRule {
                min_duration_ms: 5000,
                max_per_period: None,
                ttl_s: 3600
            }))
        );
        assert_eq!(AttemptRule::from_json(&json!(null)), Ok(None));
        for bad in [
            json!({"min_duration_ms": -1}),
            json!({"ttl_s": 0}),
            json!({"max_per_period": 0}),
            json!({"min_duration": 5}),
            json!(3),
        ] {
            assert_eq!(
                AttemptRule::from_json(&bad),
                Err(DefinitionError::Attempts),
                "{bad}"
            );
        }
    }

    #[test]
    fn review_rules_fit_the_boards_columns() -> Result<(), DefinitionError> {
        let rules = ReviewRules::from_json(&json!({"ceiling": [100, null], "max_jump": 50}))?
            .ok_or(DefinitionError::Review)?;
        assert_eq!(rules.check(2), Ok(()));
        assert_eq!(rules.check(1), Err(DefinitionError::Review));
        assert_eq!(
            ReviewRules::from_json(&json!({"ceiling": [null]})),
            Ok(None)
        );
        // A jump of 0 parses, and is refused by the check.
        let zero = ReviewRules::from_json(&json!({"max_jump": 0}))?;
        assert_eq!(zero.map(|r| r.check(1)), Some(Err(DefinitionError::Review)));
        Ok(())
    }
}
