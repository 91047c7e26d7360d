//! The increment rule: each command adds its delta (from [`MIN_DELTA`] to [`MAX_DELTA`]) to
//! the member's score, and each accepted command is one more version. A new member starts at
//! the delta, version 1. `user_scores` bounds the score to ±[`crate::domain::MAX_ABS_SCORE`]
//! (a CHECK; a command past it is refused as `score_out_of_range`).
//!
//! [`MIN_DELTA`]: crate::domain::MIN_DELTA
//! [`MAX_DELTA`]: crate::domain::MAX_DELTA

use tokio_postgres::types::Type;

use super::Tally;
use crate::db::{Op, Statement};
use crate::domain::{Delta, ValidationError};

/// The statement: the upsert that adds the delta, the event and the outbox row, in one
/// statement (see the file's comments). Parameters: event id, board, user, delta, trace
/// context.
pub static STATEMENT: Statement<5> = Statement::new(
    Op::ScoreCommand,
    include_str!("sql/increment.sql"),
    [Type::UUID, Type::TEXT, Type::TEXT, Type::INT4, Type::TEXT],
);

/// A command's value: an integer delta within the bounds.
pub fn value(number: &serde_json::Number) -> Result<Delta, ValidationError> {
    Delta::from_json(number)
}

/// The tally after one more command with `delta`: the sum, and one more version.
pub fn fold(prior: Option<Tally>, delta: i64) -> Tally {
    let prior = prior.unwrap_or_default();
    Tally {
        score: prior.score + delta,
        version: prior.version + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_member_starts_at_its_delta_version_1() {
        assert_eq!(
            fold(None, -5),
            Tally {
                score: -5,
                version: 1
            }
        );
    }

    #[test]
    fn each_command_adds_its_delta_and_one_version() {
        let prior = Tally {
            score: 10,
            version: 1,
        };
        assert_eq!(
            fold(Some(prior), 7),
            Tally {
                score: 17,
                version: 2
            }
        );
    }

    #[test]
    fn the_value_is_a_bounded_integer_delta() {
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).expect("number");
        assert_eq!(value(&n("1000")).map(Delta::get), Ok(1000));
        assert_eq!(value(&n("1001")), Err(ValidationError::DeltaOutOfRange));
        assert_eq!(value(&n("2.5")), Err(ValidationError::DeltaNotInteger));
    }

    #[test]
    fn the_statement_adds_the_delta_to_the_stored_score() {
        // What makes this statement the increment rule (and not another kind's).
        assert!(
            STATEMENT
                .sql()
                .contains("SET score = s.score + EXCLUDED.score")
        );
        assert!(STATEMENT.sql().contains("version = s.version + 1"));
    }
}
