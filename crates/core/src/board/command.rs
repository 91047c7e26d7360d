//! A score command: its fields as they came, validated against the board's definition into a
//! [`ScoreCommand`] (what its statement needs of the definition).

use super::definition::{BoardDefinition, Sort};
use super::operator::Operator;
use crate::model::{
    BoardId, Columns, Delta, EventId, MAX_ABS_SCORE, MAX_METADATA_BYTES, Submitted, UserId,
    ValidationError,
};

/// One validated score command, with what its statement needs of the board's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreCommand {
    pub event_id: EventId,
    pub board: BoardId,
    pub user_id: UserId,
    /// The board's operator: which statement applies it.
    pub operator: Operator,
    /// The delta on add boards, the submitted score on best and latest boards (the first
    /// column's, on a board with columns).
    pub value: i64,
    /// The second and third columns' values, in order-key form (`model::Columns`); 0 past the
    /// board's columns.
    pub rest: [i64; 2],
    /// The board's columns: how many, and which order the other way from the first.
    pub columns: Columns,
    /// The order-key bounds of the second and third columns' values (`(0, 0)` past the board's
    /// columns).
    pub rest_bounds: [(i64, i64); 2],
    /// On a board fed by the one the command was sent to: the event id it was sent with (this
    /// command's own is derived from it, `board/link.rs`).
    pub source_event: Option<EventId>,
    /// The definition's revision the command was validated against (0: undeclared board).
    pub revision: i64,
    /// `Order::tie_sign` of the board.
    pub tie_sign: i64,
    /// 1 on descending boards, -1 on ascending ones (which way a best board improves).
    pub direction: i64,
    pub min_score: i64,
    pub max_score: i64,
    /// The entry's metadata as compact JSON text.
    pub metadata: Option<String>,
    /// The attempt the command comes from (`guard/`), which its statement uses up; None on
    /// every fed board's command.
    pub attempt: Option<uuid::Uuid>,
}

impl ScoreCommand {
    /// An add command on an undeclared board (the implicit definition): what every command was
    /// before definitions existed.
    pub fn add(event_id: EventId, board: BoardId, user_id: UserId, delta: Delta) -> Self {
        Self {
            event_id,
            board,
            user_id,
            operator: Operator::Add,
            value: i64::from(delta.get()),
            rest: [0; 2],
            columns: Columns::ONE,
            rest_bounds: [(0, 0); 2],
            source_event: None,
            revision: 0,
            tie_sign: 0,
            direction: 1,
            min_score: -MAX_ABS_SCORE,
            max_score: MAX_ABS_SCORE,
            metadata: None,
            attempt: None,
        }
    }
}

/// A command's fields as the body carried them, before validation. `score` and `delta` are
/// the body's fields: exactly the one the board's operator takes must be present.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub event_id: &'a str,
    pub user_id: &'a str,
    pub score: Option<&'a Submitted>,
    pub delta: Option<&'a Submitted>,
    pub metadata: Option<&'a serde_json::Value>,
    /// Who sent it, as the board's write policy judges it.
    pub writer: Writer,
    /// The attempt the score comes from, as sent (`board/guard/attempt.rs`).
    pub attempt: Option<&'a str>,
}

/// Who sent a command: a service token (a game's servers), or a player token (its own user id,
/// checked by the api before the command gets here). A board whose write policy is `server`
/// refuses a player's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Service,
    Player,
    /// An operator's approval of a held score (`board/guard/review.rs`): applied as it was
    /// sent, past the rules that held it.
    Review,
}

/// Validates a command's fields as they came, against `definition`, into a
/// [`ScoreCommand`]. The fields are checked in order (event id, user id, the value field, the
/// value, metadata), so the first bad one is the one reported. `score` and `delta` are the
/// body's fields: exactly the one the board's operator takes must be present.
pub fn command(
    definition: &BoardDefinition,
    event_id: &str,
    user_id: &str,
    score: Option<&Submitted>,
    delta: Option<&Submitted>,
    metadata: Option<&serde_json::Value>,
) -> Result<ScoreCommand, ValidationError> {
    let event_id = EventId::parse(event_id)?;
    let user_id = UserId::parse(user_id)?;
    let operator = definition.operator;
    let (value, rest) = operator.command_value(definition, score, delta)?;
    let metadata = match metadata {
        None | Some(serde_json::Value::Null) => None,
        Some(value @ serde_json::Value::Object(_)) => {
            let text = value.to_string();
            if text.len() > MAX_METADATA_BYTES {
                return Err(ValidationError::MetadataTooLarge);
            }
            // jsonb cannot hold \u0000 (PostgreSQL refuses the statement): the metadata's
            // error, not the store's.
            if text.contains("\\u0000") {
                return Err(ValidationError::InvalidMetadata);
            }
            Some(text)
        }
        Some(_) => return Err(ValidationError::InvalidMetadata),
    };
    let order = definition.order();
    let rest_bounds = std::array::from_fn(|i| {
        let index = i + 1;
        if index < definition.column_count() {
            let (min, max) = definition.column_bounds(index);
            order.columns.key_bounds(index, min, max)
        } else {
            (0, 0)
        }
    });
    Ok(ScoreCommand {
        event_id,
        board: definition.board.clone(),
        user_id,
        operator,
        value,
        rest,
        columns: order.columns,
        rest_bounds,
        source_event: None,
        revision: definition.revision,
        tie_sign: order.tie_sign(),
        direction: match definition.sort {
            Sort::Descending => 1,
            Sort::Ascending => -1,
        },
        min_score: definition.min_score,
        max_score: definition.max_score,
        metadata,
        attempt: None,
    })
}

impl Fields<'_> {
    /// [`command`] of these fields.
    pub fn validate(&self, definition: &BoardDefinition) -> Result<ScoreCommand, ValidationError> {
        command(
            definition,
            self.event_id,
            self.user_id,
            self.score,
            self.delta,
            self.metadata,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(s: &str) -> Submitted {
        serde_json::from_str(s).expect("a JSON value")
    }

    fn implicit() -> BoardDefinition {
        BoardDefinition::implicit(BoardId::parse("weekly").expect("board"))
    }

    #[test]
    fn metadata_with_a_nul_is_refused_as_invalid() {
        let metadata = serde_json::json!({"note": "a\u{0}b"});
        let refused = command(
            &implicit(),
            "6f9619ff-8b86-4011-b42d-00c04fc964ff",
            "alice",
            None,
            Some(&number("1")),
            Some(&metadata),
        );
        assert_eq!(refused, Err(ValidationError::InvalidMetadata));
    }

    #[test]
    fn an_undeclared_board_counts_increments() {
        assert_eq!(implicit().operator, Operator::Add);
    }

    #[test]
    fn a_board_with_columns_takes_one_integer_per_column() {
        use crate::board::definition::{Column, Declaration};
        let racing = Declaration {
            operator: Some(Operator::Best),
            columns: Some(vec![
                Column {
                    name: "laps".into(),
                    order: Sort::Descending,
                    min: 0,
                    max: 100,
                },
                Column {
                    name: "time_ms".into(),
                    order: Sort::Ascending,
                    min: 1,
                    max: 3_600_000,
                },
            ]),
            ..Declaration::default()
        }
        .definition(BoardId::parse("racing").expect("board"))
        .expect("valid");
        let event = "6f9619ff-8b86-d011-b42d-00c04fc964ff";
        let run =
            |score: &str| super::command(&racing, event, "u", Some(&number(score)), None, None);
        let by_list = run("[12, 93120]").expect("valid");
        // The time orders the other way from the laps: stored negated.
        assert_eq!((by_list.value, by_list.rest), (12, [-93_120, 0]));
        assert_eq!(by_list.rest_bounds, [(-3_600_000, -1), (0, 0)]);
        let by_name = run(r#"{"time_ms": 93120, "laps": 12}"#).expect("valid");
        assert_eq!((by_name.value, by_name.rest), (by_list.value, by_list.rest));
        let shape = Err(ValidationError::ColumnsShape {
            field: "score",
            names: vec!["laps".into(), "time_ms".into()],
        });
        assert_eq!(run("12"), shape);
        assert_eq!(run("[12]"), shape);
        assert_eq!(run(r#"{"laps": 12, "time": 5}"#), shape);
        assert_eq!(
            run("[12, 0]"),
            Err(ValidationError::ColumnOutOfRange {
                field: "score",
                column: "time_ms".into(),
                min: 1,
                max: 3_600_000
            })
        );
        assert_eq!(run("[12.5, 1]").map_err(|e| e.code()), Err("invalid_score"));
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
            operator: Operator::Add.as_str(),
            field: Operator::Add.value_field(),
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
}
