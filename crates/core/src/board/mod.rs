//! The scoring rule of a board: what a command may carry, which statement applies it, and the
//! score and version a member's accepted commands add up to. A score command's path reads
//! top to bottom: the HTTP handler parses the body, [`BoardKind::command`] validates it,
//! [`apply_score_command`] runs [`BoardKind::statement`] (one statement, one
//! transaction: score, event and outbox row), and the projector carries the outbox row to
//! Redis. The chaos run checks PostgreSQL against [`BoardKind::expected`].
//!
//! Today every board is an [`BoardKind::Increment`] board. Another kind (keep-best, say) is
//! one arm of [`BoardKind`], one module next to [`increment`] (its value check, its fold and its
//! statement, with their tests) and one SQL file under `board/sql/`; the statement returns the same
//! columns (`duplicate, board_id, user_id, delta, score, version`), so the duplicate check,
//! the outbox and the projection do not change.

mod apply;
pub mod definitions;
pub mod increment;

pub use apply::apply_score_command;

use crate::db::Statement;
use crate::domain::{BoardId, EventId, ScoreCommand, UserId, ValidationError};

/// How a board turns commands into scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BoardKind {
    /// Each command adds its delta to the member's score (`board/sql/increment.sql`).
    #[default]
    Increment,
}

/// A member's score and the number of commands that made it (its version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    pub score: i64,
    pub version: i64,
}

impl BoardKind {
    /// The kind of `board`. Boards have no definitions yet, so every board counts increments;
    /// board definitions will look the kind up here.
    pub fn of(_board: &BoardId) -> BoardKind {
        BoardKind::Increment
    }

    /// Validates a command's fields as they came, into a [`ScoreCommand`] for `board`. The
    /// fields are checked in order (event id, user id, value), so the first bad one is the one
    /// reported.
    pub fn command(
        self,
        board: BoardId,
        event_id: &str,
        user_id: &str,
        value: &serde_json::Number,
    ) -> Result<ScoreCommand, ValidationError> {
        let event_id = EventId::parse(event_id)?;
        let user_id = UserId::parse(user_id)?;
        let delta = match self {
            BoardKind::Increment => increment::value(value)?,
        };
        Ok(ScoreCommand {
            event_id,
            board,
            user_id,
            delta,
        })
    }

    /// The statement that applies one command of this kind exactly once per event id.
    pub fn statement(self) -> &'static Statement<5> {
        match self {
            BoardKind::Increment => &increment::STATEMENT,
        }
    }

    /// The member's tally after one more accepted command carrying `value` (None: the member
    /// has none yet).
    pub fn fold(self, prior: Option<Tally>, value: i64) -> Tally {
        match self {
            BoardKind::Increment => increment::fold(prior, value),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn number(s: &str) -> serde_json::Number {
        serde_json::from_str(s).expect("a JSON number")
    }

    #[test]
    fn every_board_counts_increments_today() {
        let board = BoardId::parse("weekly").expect("board");
        assert_eq!(BoardKind::of(&board), BoardKind::Increment);
        assert_eq!(BoardKind::default(), BoardKind::Increment);
    }

    #[test]
    fn a_command_is_validated_field_by_field_in_order() {
        let board = || BoardId::parse("weekly").expect("board");
        let event = "6f9619ff-8b86-d011-b42d-00c04fc964ff";
        let kind = BoardKind::Increment;
        let command = kind
            .command(board(), event, "user-a", &number("-7"))
            .expect("a valid command");
        assert_eq!(command.board, board());
        assert_eq!(command.event_id.to_string(), event);
        assert_eq!(command.user_id.as_str(), "user-a");
        assert_eq!(command.delta.get(), -7);
        // Every field bad: the event id is reported first, then the user id, then the value.
        assert_eq!(
            kind.command(board(), "nil", "a\0b", &number("1.5")),
            Err(ValidationError::EventId)
        );
        assert_eq!(
            kind.command(board(), event, "a\0b", &number("1.5")),
            Err(ValidationError::UserId)
        );
        assert_eq!(
            kind.command(board(), event, "u", &number("1.5")),
            Err(ValidationError::DeltaNotInteger)
        );
    }

    #[test]
    fn expected_folds_in_order_and_is_none_without_commands() {
        let kind = BoardKind::Increment;
        assert_eq!(kind.expected([]), None);
        assert_eq!(
            kind.expected([10, -3, 7]),
            Some(Tally {
                score: 14,
                version: 3
            })
        );
    }
}
