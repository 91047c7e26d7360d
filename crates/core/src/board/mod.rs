//! The scoring rule of a board: what a command may carry, which statement applies it, and the
//! score and version a member's accepted commands add up to. A score command's path reads
//! top to bottom: the HTTP handler parses the body, [`command`] validates it against the
//! board's definition (`definitions.rs`), [`apply_score_command`] runs the operator's
//! statement (one statement, one transaction: score, event and outbox row), and the projector
//! carries the outbox row to Redis. The chaos run checks PostgreSQL against
//! [`BoardKind::expected`].
//!
//! One statement per operator (`board/sql/add.sql`, `best.sql`, `latest.sql`), all taking the
//! same parameters and answering the same columns (`outcome, board_id, user_id, operator,
//! submitted, metadata, score, version, improved`), so the duplicate check, the outbox and the
//! projection are shared.

mod apply;
pub mod definitions;
pub mod group;
pub mod increment;
pub mod moderation;
pub mod periods;
pub mod schedule;
pub mod verification;

pub use apply::apply_score_command;

use crate::db::{Op, Statement};
use crate::definition::{BoardDefinition, Operator, Sort};
use crate::domain::{EventId, MAX_METADATA_BYTES, ScoreCommand, UserId, ValidationError};
use tokio_postgres::types::Type;

/// The parameters of every operator's statement: event id, board, user, value, trace context,
/// revision, tie sign, min score, max score, metadata, direction.
const PARAMETERS: [Type; 11] = [
    Type::UUID,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
];

/// `board/sql/add.sql`: the score grows by the delta.
pub static ADD: Statement<11> =
    Statement::new(Op::ScoreCommand, include_str!("sql/add.sql"), PARAMETERS);
/// `board/sql/best.sql`: the better of the standing and the submitted score.
pub static BEST: Statement<11> =
    Statement::new(Op::ScoreCommand, include_str!("sql/best.sql"), PARAMETERS);
/// `board/sql/latest.sql`: the submitted score.
pub static LATEST: Statement<11> =
    Statement::new(Op::ScoreCommand, include_str!("sql/latest.sql"), PARAMETERS);

/// How a board turns commands into scores: its operator (and, for best, which way is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BoardKind {
    /// Each command adds its delta to the member's score.
    #[default]
    Add,
    /// The member keeps its best submission by the sort.
    Best(Sort),
    /// The member's score is its last submission.
    Latest,
}

/// A member's score and the number of commands that changed it (its version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    pub score: i64,
    pub version: i64,
}

impl BoardKind {
    /// The kind a definition declares.
    pub fn of(definition: &BoardDefinition) -> BoardKind {
        match definition.operator {
            Operator::Add => BoardKind::Add,
            Operator::Best => BoardKind::Best(definition.sort),
            Operator::Latest => BoardKind::Latest,
        }
    }

    /// The statement that applies one command of this kind exactly once per event id.
    pub fn statement(self) -> &'static Statement<11> {
        match self {
            BoardKind::Add => &ADD,
            BoardKind::Best(_) => &BEST,
            BoardKind::Latest => &LATEST,
        }
    }

    /// The member's tally after one more accepted command carrying `value` (None: the member
    /// has none yet). A best submission that does not improve leaves the tally as it was.
    pub fn fold(self, prior: Option<Tally>, value: i64) -> Tally {
        match (self, prior) {
            (BoardKind::Add, _) => increment::fold(prior, value),
            (_, None) => Tally {
                score: value,
                version: 1,
            },
            (BoardKind::Latest, Some(p)) => Tally {
                score: value,
                version: p.version + 1,
            },
            (BoardKind::Best(sort), Some(p)) => {
                if sort.ahead(value, p.score) {
                    Tally {
                        score: value,
                        version: p.version + 1,
                    }
                } else {
                    p
                }
            }
        }
    }

    /// What a member's accepted commands add up to, in the order they were applied; None
    /// when there are none (the member does not exist).
    pub fn expected(self, values: impl IntoIterator<Item = i64>) -> Option<Tally> {
        values
            .into_iter()
            .fold(None, |prior, value| Some(self.fold(prior, value)))
    }
}

/// An integer from a JSON number; `None` when it has a fraction, `Some(Err)` past i64.
fn integer(number: &serde_json::Number) -> Option<Result<i64, ()>> {
    if let Some(v) = number.as_i64() {
        Some(Ok(v))
    } else if number.is_u64() {
        Some(Err(()))
    } else {
        match number.as_f64() {
            // 1.0 and 1e3 are integers as JSON Schema counts them.
            Some(f) if f.fract() == 0.0 => {
                if f.abs() < 9.2e18 {
                    Some(Ok(f as i64))
                } else {
                    Some(Err(()))
                }
            }
            _ => None,
        }
    }
}

/// Validates a command's fields as they came, against `definition`, into a
/// [`ScoreCommand`]. The fields are checked in order (event id, user id, the value field, the
/// value, metadata), so the first bad one is the one reported. `score` and `delta` are the
/// body's fields: exactly the one the board's operator takes must be present.
pub fn command(
    definition: &BoardDefinition,
    event_id: &str,
    user_id: &str,
    score: Option<&serde_json::Number>,
    delta: Option<&serde_json::Number>,
    metadata: Option<&serde_json::Value>,
) -> Result<ScoreCommand, ValidationError> {
    let event_id = EventId::parse(event_id)?;
    let user_id = UserId::parse(user_id)?;
    let operator = definition.operator;
    let wrong = ValidationError::WrongValueField {
        operator: operator.as_str(),
        field: operator.value_field(),
    };
    let (min_score, max_score) = (definition.min_score, definition.max_score);
    let value = match (operator, score, delta) {
        (Operator::Add, None, Some(d)) => {
            let (min, max) = (
                definition.min_delta.unwrap_or(crate::domain::MIN_DELTA),
                definition.max_delta.unwrap_or(crate::domain::MAX_DELTA),
            );
            match integer(d) {
                None => return Err(ValidationError::DeltaNotInteger),
                Some(Ok(v)) if (min..=max).contains(&v) => v,
                Some(_) if definition.declared => {
                    return Err(ValidationError::BoardDeltaOutOfRange { min, max });
                }
                // An undeclared board answers as before definitions existed.
                Some(_) => return Err(ValidationError::DeltaOutOfRange),
            }
        }
        (Operator::Best | Operator::Latest, Some(s), None) => match integer(s) {
            None => return Err(ValidationError::ScoreNotInteger),
            Some(Ok(v)) if (min_score..=max_score).contains(&v) => v,
            Some(_) => {
                return Err(ValidationError::BoardScoreOutOfRange {
                    min: min_score,
                    max: max_score,
                });
            }
        },
        _ => return Err(wrong),
    };
    let metadata = match metadata {
        None | Some(serde_json::Value::Null) => None,
        Some(value @ serde_json::Value::Object(_)) => {
            let text = value.to_string();
            if text.len() > MAX_METADATA_BYTES {
                return Err(ValidationError::MetadataTooLarge);
            }
            Some(text)
        }
        Some(_) => return Err(ValidationError::InvalidMetadata),
    };
    let order = definition.order();
    Ok(ScoreCommand {
        event_id,
        board: definition.board.clone(),
        user_id,
        operator: operator.as_str(),
        value,
        revision: definition.revision,
        tie_sign: order.tie_sign(),
        direction: match definition.sort {
            Sort::Descending => 1,
            Sort::Ascending => -1,
        },
        min_score,
        max_score,
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::BoardId;

    fn number(s: &str) -> serde_json::Number {
        serde_json::from_str(s).expect("a JSON number")
    }

    fn implicit() -> BoardDefinition {
        BoardDefinition::implicit(BoardId::parse("weekly").expect("board"))
    }

    #[test]
    fn an_undeclared_board_counts_increments() {
        assert_eq!(BoardKind::of(&implicit()), BoardKind::Add);
        assert_eq!(BoardKind::default(), BoardKind::Add);
    }

    #[test]
    fn a_command_is_validated_field_by_field_in_order() {
        let def = implicit();
        let event = "6f9619ff-8b86-d011-b42d-00c04fc964ff";
        let d = |s: &str| Some(number(s));
        let command = super::command(&def, event, "user-a", None, d("-7").as_ref(), None)
            .expect("a valid command");
        assert_eq!(command.board, def.board);
        assert_eq!(command.event_id.to_string(), event);
        assert_eq!(command.user_id.as_str(), "user-a");
        assert_eq!(command.value, -7);
        let bad = d("1.5");
        assert_eq!(
            super::command(&def, "nil", "a\0b", None, bad.as_ref(), None),
            Err(ValidationError::EventId)
        );
        assert_eq!(
            super::command(&def, event, "a\0b", None, bad.as_ref(), None),
            Err(ValidationError::UserId)
        );
        assert_eq!(
            super::command(&def, event, "u", None, bad.as_ref(), None),
            Err(ValidationError::DeltaNotInteger)
        );
        assert_eq!(
            super::command(&def, event, "u", None, d("1001").as_ref(), None),
            Err(ValidationError::DeltaOutOfRange)
        );
        // The wrong field, both, or neither.
        let wrong = Err(ValidationError::WrongValueField {
            operator: "add",
            field: "delta",
        });
        assert_eq!(
            super::command(&def, event, "u", d("5").as_ref(), None, None),
            wrong
        );
        assert_eq!(
            super::command(&def, event, "u", d("5").as_ref(), d("5").as_ref(), None),
            wrong
        );
        assert_eq!(super::command(&def, event, "u", None, None, None), wrong);
    }

    #[test]
    fn best_folds_to_the_best_by_the_sort_and_latest_to_the_last() {
        let best_desc = BoardKind::Best(Sort::Descending);
        let best_asc = BoardKind::Best(Sort::Ascending);
        assert_eq!(best_desc.expected([]), None);
        assert_eq!(
            best_desc.expected([10, 30, 20, 30]),
            Some(Tally {
                score: 30,
                version: 2
            })
        );
        assert_eq!(
            best_asc.expected([10, 30, 5, 7]),
            Some(Tally {
                score: 5,
                version: 2
            })
        );
        assert_eq!(
            BoardKind::Latest.expected([10, 30, 5]),
            Some(Tally {
                score: 5,
                version: 3
            })
        );
        assert_eq!(
            BoardKind::Add.expected([10, -3, 7]),
            Some(Tally {
                score: 14,
                version: 3
            })
        );
    }
}
