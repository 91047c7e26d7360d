//! A definition as an operator states it ([`Declaration`], from the api's body or `lbctl`'s
//! flags), the names as sent, and why a declaration is refused before anything is written.

use super::types::{
    BoardDefinition, DEFAULT_TIME_ZONE, MAX_DISPLAY_NAME_CHARS, Reset, Sort, TieBreak,
};
use crate::board::operator::{Operator, Value};
use crate::model::{BoardId, MAX_ABS_SCORE};

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
        }
    }
}

/// A definition as an operator states it: what is left out takes its default when the
/// declaration replaces a definition ([`Declaration::definition`]: descending, ties by user id,
/// scores within ±(2^53 − 1), deltas within ±1000 on add boards, no display name), or keeps the
/// current value when it amends one ([`Declaration::over`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declaration {
    pub display_name: Option<String>,
    /// Required to replace a definition.
    pub operator: Option<Operator>,
    pub sort: Option<Sort>,
    pub tie_break: Option<TieBreak>,
    pub min_score: Option<i64>,
    pub max_score: Option<i64>,
    pub min_delta: Option<i64>,
    pub max_delta: Option<i64>,
    pub reset: Option<Reset>,
    pub time_zone: Option<String>,
}

/// A reset as sent.
pub fn parse_reset(raw: &str) -> Result<Reset, DefinitionError> {
    Reset::parse(raw).ok_or(DefinitionError::Reset)
}

/// The names as sent (api bodies, lbctl flags), each refused with its own error.
pub fn parse_operator(raw: &str) -> Result<Operator, DefinitionError> {
    Operator::parse(raw).ok_or(DefinitionError::Operator)
}
pub fn parse_sort(raw: &str) -> Result<Sort, DefinitionError> {
    Sort::parse(raw).ok_or(DefinitionError::Sort)
}
pub fn parse_tie_break(raw: &str) -> Result<TieBreak, DefinitionError> {
    TieBreak::parse(raw).ok_or(DefinitionError::TieBreak)
}

impl Declaration {
    /// The whole definition this declaration states for `board`, checked (revision 0: the
    /// store sets it).
    pub fn definition(&self, board: BoardId) -> Result<BoardDefinition, DefinitionError> {
        let operator = self.operator.ok_or(DefinitionError::Operator)?;
        let display_name = self.display_name.clone().unwrap_or_default();
        if display_name.chars().count() > MAX_DISPLAY_NAME_CHARS
            || display_name.chars().any(char::is_control)
        {
            return Err(DefinitionError::DisplayName);
        }
        let exact = |v: i64| (-MAX_ABS_SCORE..=MAX_ABS_SCORE).contains(&v);
        let min_score = self.min_score.unwrap_or(-MAX_ABS_SCORE);
        let max_score = self.max_score.unwrap_or(MAX_ABS_SCORE);
        if !exact(min_score) || !exact(max_score) || min_score > max_score {
            return Err(DefinitionError::ScoreBounds);
        }
        let (min_delta, max_delta) = operator.delta_bounds(self.min_delta, self.max_delta)?;
        let time_zone = self
            .time_zone
            .clone()
            .unwrap_or_else(|| DEFAULT_TIME_ZONE.to_owned());
        // The names PostgreSQL knows are checked when it is written ([`define`]); this only
        // keeps what no zone is called out of the query.
        if time_zone.is_empty()
            || time_zone.len() > 64
            || !time_zone
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_+-".contains(&b))
        {
            return Err(DefinitionError::TimeZone);
        }
        Ok(BoardDefinition {
            board,
            display_name,
            operator,
            reset: self.reset.clone().unwrap_or(Reset::Never),
            time_zone,
            sort: self.sort.unwrap_or(Sort::Descending),
            tie_break: self.tie_break.unwrap_or(TieBreak::UserId),
            min_score,
            max_score,
            min_delta,
            max_delta,
            revision: 0,
            declared: true,
        })
    }

    /// This declaration as a change of `current`: what it leaves out keeps its current value.
    /// Delta bounds go when the operator leaves `add`, and take their defaults when it becomes
    /// `add` (unless stated).
    pub fn over(&self, current: &BoardDefinition) -> Declaration {
        let operator = self.operator.unwrap_or(current.operator);
        let keeps_deltas = operator.value() == Value::Delta;
        Declaration {
            display_name: Some(
                self.display_name
                    .clone()
                    .unwrap_or_else(|| current.display_name.clone()),
            ),
            operator: Some(operator),
            sort: Some(self.sort.unwrap_or(current.sort)),
            tie_break: Some(self.tie_break.unwrap_or(current.tie_break)),
            min_score: Some(self.min_score.unwrap_or(current.min_score)),
            max_score: Some(self.max_score.unwrap_or(current.max_score)),
            min_delta: self
                .min_delta
                .or(current.min_delta.filter(|_| keeps_deltas)),
            max_delta: self
                .max_delta
                .or(current.max_delta.filter(|_| keeps_deltas)),
            reset: Some(self.reset.clone().unwrap_or_else(|| current.reset.clone())),
            time_zone: Some(
                self.time_zone
                    .clone()
                    .unwrap_or_else(|| current.time_zone.clone()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> BoardId {
        BoardId::parse("weekly").expect("board")
    }

    fn add() -> Declaration {
        Declaration {
            operator: Some(Operator::Add),
            ..Declaration::default()
        }
    }

    #[test]
    fn what_is_left_out_takes_todays_defaults() {
        let def = add().definition(board()).expect("valid");
        let implicit = BoardDefinition::implicit(board());
        // Declared with nothing but its operator, an add board is today's board.
        assert_eq!(
            BoardDefinition {
                declared: false,
                ..def
            },
            implicit
        );
        assert_eq!(
            Declaration::default().definition(board()),
            Err(DefinitionError::Operator)
        );
    }

    #[test]
    fn bounds_and_names_are_checked() {
        let with = |f: fn(&mut Declaration)| {
            let mut d = add();
            f(&mut d);
            d.definition(board()).map(|_| ())
        };
        assert_eq!(
            with(|d| d.min_score = Some(-MAX_ABS_SCORE - 1)),
            Err(DefinitionError::ScoreBounds)
        );
        assert_eq!(
            with(|d| d.max_score = Some(MAX_ABS_SCORE + 1)),
            Err(DefinitionError::ScoreBounds)
        );
        assert_eq!(
            with(|d| {
                d.min_score = Some(5);
                d.max_score = Some(4)
            }),
            Err(DefinitionError::ScoreBounds)
        );
        assert_eq!(
            with(|d| {
                d.min_score = Some(5);
                d.max_score = Some(5)
            }),
            Ok(())
        );
        assert_eq!(
            with(|d| {
                d.min_delta = Some(1);
                d.max_delta = Some(0)
            }),
            Err(DefinitionError::DeltaBounds)
        );
        assert_eq!(
            with(|d| d.max_delta = Some(MAX_ABS_SCORE + 1)),
            Err(DefinitionError::DeltaBounds)
        );
        assert_eq!(with(|d| d.display_name = Some("é".repeat(128))), Ok(()));
        assert_eq!(
            with(|d| d.display_name = Some("é".repeat(129))),
            Err(DefinitionError::DisplayName)
        );
        assert_eq!(
            with(|d| d.display_name = Some("a\0b".into())),
            Err(DefinitionError::DisplayName)
        );
        let best = Declaration {
            operator: Some(Operator::Best),
            min_delta: Some(0),
            ..Declaration::default()
        };
        assert_eq!(
            best.definition(board()),
            Err(DefinitionError::DeltaBoundsNotAllowed(
                Operator::Best.as_str()
            ))
        );
        assert_eq!(
            best.definition(board()).map_err(|e| e.code()),
            Err("delta_bounds_not_allowed")
        );
        assert_eq!(parse_sort("up"), Err(DefinitionError::Sort));
        assert_eq!(parse_tie_break("earliest"), Ok(TieBreak::Earliest));
    }

    #[test]
    fn an_amendment_keeps_what_it_does_not_state() {
        let current = Declaration {
            display_name: Some("Weekly".into()),
            operator: Some(Operator::Add),
            min_delta: Some(0),
            max_delta: Some(10),
            ..Declaration::default()
        }
        .definition(board())
        .expect("valid");
        let renamed = Declaration {
            max_delta: Some(20),
            ..Declaration::default()
        }
        .over(&current)
        .definition(board())
        .expect("valid");
        assert_eq!(
            (
                renamed.display_name.as_str(),
                renamed.min_delta,
                renamed.max_delta
            ),
            ("Weekly", Some(0), Some(20))
        );
        // Leaving add drops the delta bounds rather than refusing them.
        let best = Declaration {
            operator: Some(Operator::Best),
            ..Declaration::default()
        }
        .over(&current)
        .definition(board())
        .expect("valid");
        assert_eq!((best.min_delta, best.max_delta), (None, None));
    }
}
