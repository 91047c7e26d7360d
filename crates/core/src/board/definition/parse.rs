//! A definition as an operator states it ([`Declaration`], from the api's body or `lbctl`'s
//! flags), the names as sent, and why a declaration is refused before anything is written.

use super::error::{DefinitionError, MAX_FEEDS};
use super::rules::{AttemptRule, ReviewRules};
use super::types::{
    BoardDefinition, Column, DEFAULT_TIME_ZONE, MAX_DISPLAY_NAME_CHARS, Reset, Sort, TieBreak,
    WritePolicy,
};
use crate::board::operator::{Operator, Value};
use crate::model::{BoardId, MAX_ABS_SCORE, MAX_COLUMNS};

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
    /// The board's columns (an empty list: one column, the score).
    pub columns: Option<Vec<Column>>,
    /// The boards it feeds (an empty list: none).
    pub feeds: Option<Vec<BoardId>>,
    /// Who may post scores (left out when replacing: `server`).
    pub write_policy: Option<WritePolicy>,
    /// Whether a player's score needs an attempt (`Some(None)`: no; left out when replacing:
    /// no).
    pub attempts: Option<Option<AttemptRule>>,
    /// The review rules (`Some(None)`: none; left out when replacing: none).
    pub review: Option<Option<ReviewRules>>,
}

/// A column as `lbctl --column` and the console's form spell it: `name:order` or
/// `name:order:min:max` (`laps:descending`, `time_ms:ascending:1:3600000`; `desc` and `asc`
/// too).
pub fn parse_column(raw: &str) -> Result<Column, DefinitionError> {
    let parts: Vec<&str> = raw.trim().split(':').map(str::trim).collect();
    let order = |o: &str| match o {
        "desc" => Some(Sort::Descending),
        "asc" => Some(Sort::Ascending),
        other => Sort::parse(other),
    };
    let (name, order, min, max) = match parts[..] {
        [name, o] => (name, order(o), -MAX_ABS_SCORE, MAX_ABS_SCORE),
        [name, o, min, max] => {
            let bound = |b: &str| {
                b.parse::<i64>()
                    .map_err(|_| DefinitionError::ColumnBounds(name.to_owned()))
            };
            (name, order(o), bound(min)?, bound(max)?)
        }
        _ => return Err(DefinitionError::Columns),
    };
    Ok(Column {
        name: name.to_owned(),
        order: order.ok_or(DefinitionError::Columns)?,
        min,
        max,
    })
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
        let columns = self.columns.clone().unwrap_or_default();
        check_columns(&columns)?;
        // With columns, the first column is the score: its order and bounds are the board's
        // sort and score bounds, which may be stated again only as the same.
        let (sort, min_score, max_score) = match columns.first() {
            None => (
                self.sort.unwrap_or(Sort::Descending),
                self.min_score.unwrap_or(-MAX_ABS_SCORE),
                self.max_score.unwrap_or(MAX_ABS_SCORE),
            ),
            Some(first) => {
                if self.sort.is_some_and(|s| s != first.order)
                    || self.min_score.is_some_and(|m| m != first.min)
                    || self.max_score.is_some_and(|m| m != first.max)
                {
                    return Err(DefinitionError::ColumnsAndScore);
                }
                (first.order, first.min, first.max)
            }
        };
        if !exact(min_score) || !exact(max_score) || min_score > max_score {
            return Err(DefinitionError::ScoreBounds);
        }
        let feeds = self.feeds.clone().unwrap_or_default();
        let distinct: std::collections::HashSet<&BoardId> = feeds.iter().collect();
        if feeds.len() > MAX_FEEDS
            || distinct.len() != feeds.len()
            || feeds.iter().any(|f| *f == board || f.period().is_some())
        {
            return Err(DefinitionError::Feeds);
        }
        let (min_delta, max_delta) = operator.delta_bounds(self.min_delta, self.max_delta)?;
        let review = self.review.clone().flatten();
        if let Some(rules) = &review {
            rules.check(columns.len())?;
        }
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
            sort,
            tie_break: self.tie_break.unwrap_or(TieBreak::UserId),
            min_score,
            max_score,
            min_delta,
            max_delta,
            columns,
            feeds,
            write_policy: self.write_policy.unwrap_or(WritePolicy::Server),
            attempts: self.attempts.clone().flatten(),
            review,
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
        let columns = self
            .columns
            .clone()
            .unwrap_or_else(|| current.columns.clone());
        // A board with columns keeps its order and score bounds in them: only what this
        // declaration states of sort, min_score and max_score is checked against them.
        let (sort, min_score, max_score) = if columns.is_empty() {
            (
                Some(self.sort.unwrap_or(current.sort)),
                Some(self.min_score.unwrap_or(current.min_score)),
                Some(self.max_score.unwrap_or(current.max_score)),
            )
        } else {
            (self.sort, self.min_score, self.max_score)
        };
        Declaration {
            display_name: Some(
                self.display_name
                    .clone()
                    .unwrap_or_else(|| current.display_name.clone()),
            ),
            operator: Some(operator),
            sort,
            tie_break: Some(self.tie_break.unwrap_or(current.tie_break)),
            min_score,
            max_score,
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
            columns: Some(columns),
            feeds: Some(self.feeds.clone().unwrap_or_else(|| current.feeds.clone())),
            write_policy: Some(self.write_policy.unwrap_or(current.write_policy)),
            attempts: Some(
                self.attempts
                    .clone()
                    .unwrap_or_else(|| current.attempts.clone()),
            ),
            review: Some(
                self.review
                    .clone()
                    .unwrap_or_else(|| current.review.clone()),
            ),
        }
    }
}

/// 0 or 1 to [`MAX_COLUMNS`] columns with distinct well-formed names and exact bounds.
fn check_columns(columns: &[Column]) -> Result<(), DefinitionError> {
    if columns.len() > MAX_COLUMNS {
        return Err(DefinitionError::Columns);
    }
    let exact = |v: i64| (-MAX_ABS_SCORE..=MAX_ABS_SCORE).contains(&v);
    for (i, c) in columns.iter().enumerate() {
        let mut bytes = c.name.bytes();
        let well_formed = c.name.len() <= 32
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !well_formed || columns[..i].iter().any(|o| o.name == c.name) {
            return Err(DefinitionError::Columns);
        }
        if !exact(c.min) || !exact(c.max) || c.min > c.max {
            return Err(DefinitionError::ColumnBounds(c.name.clone()));
        }
    }
    Ok(())
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

    fn column(name: &str, order: Sort) -> Column {
        Column {
            name: name.into(),
            order,
            min: 0,
            max: 1_000_000,
        }
    }

    #[test]
    fn columns_are_checked_and_the_first_is_the_score() {
        let racing = Declaration {
            operator: Some(Operator::Best),
            columns: Some(vec![
                column("laps", Sort::Descending),
                column("time_ms", Sort::Ascending),
            ]),
            ..Declaration::default()
        };
        let def = racing.definition(board()).expect("valid");
        assert_eq!(
            (def.sort, def.min_score, def.max_score),
            (Sort::Descending, 0, 1_000_000)
        );
        assert_eq!(def.column_count(), 2);
        assert_eq!(def.column_bounds(1), (0, 1_000_000));
        assert_eq!(def.column_name(1), "time_ms");
        assert_eq!(def.order().columns.key(1, 5), -5);
        let with = |f: fn(&mut Declaration)| {
            let mut d = racing.clone();
            f(&mut d);
            d.definition(board()).map(|_| ())
        };
        assert_eq!(with(|d| d.sort = Some(Sort::Descending)), Ok(()));
        assert_eq!(
            with(|d| d.sort = Some(Sort::Ascending)),
            Err(DefinitionError::ColumnsAndScore)
        );
        assert_eq!(
            with(|d| d.max_score = Some(5)),
            Err(DefinitionError::ColumnsAndScore)
        );
        for bad in ["", "Laps", "1st", "a-b", &"x".repeat(33)] {
            let mut d = racing.clone();
            d.columns.as_mut().expect("columns")[1].name = bad.into();
            assert_eq!(
                d.definition(board()),
                Err(DefinitionError::Columns),
                "{bad:?}"
            );
        }
        assert_eq!(
            with(|d| d.columns.as_mut().expect("columns")[1].name = "laps".into()),
            Err(DefinitionError::Columns)
        );
        assert_eq!(
            with(|d| d.columns = Some(vec![column("a", Sort::Ascending); 4])),
            Err(DefinitionError::Columns)
        );
        assert_eq!(
            with(|d| d.columns.as_mut().expect("columns")[1].max = MAX_ABS_SCORE + 1),
            Err(DefinitionError::ColumnBounds("time_ms".into()))
        );
        assert_eq!(
            with(|d| d.columns.as_mut().expect("columns")[1].min = 2_000_000),
            Err(DefinitionError::ColumnBounds("time_ms".into()))
        );
        // An amendment keeps the columns, and may not restate the score outside them.
        let renamed = Declaration {
            display_name: Some("Racing".into()),
            ..Declaration::default()
        }
        .over(&def)
        .definition(board())
        .expect("valid");
        assert_eq!(renamed.columns, def.columns);
        assert_eq!(
            Declaration {
                min_score: Some(-1),
                ..Declaration::default()
            }
            .over(&def)
            .definition(board()),
            Err(DefinitionError::ColumnsAndScore)
        );
        // An empty list is a board of one column again.
        let plain = Declaration {
            columns: Some(Vec::new()),
            ..Declaration::default()
        }
        .over(&def)
        .definition(board())
        .expect("valid");
        assert!(plain.columns.is_empty());
    }

    #[test]
    fn a_column_is_spelt_name_order_and_bounds() {
        assert_eq!(
            parse_column("time_ms:asc:1:3600000"),
            Ok(Column {
                name: "time_ms".into(),
                order: Sort::Ascending,
                min: 1,
                max: 3_600_000
            })
        );
        assert_eq!(
            parse_column(" laps : descending ").map(|c| (c.order, c.min)),
            Ok((Sort::Descending, -MAX_ABS_SCORE))
        );
        assert_eq!(parse_column("laps"), Err(DefinitionError::Columns));
        assert_eq!(parse_column("laps:up"), Err(DefinitionError::Columns));
        assert_eq!(
            parse_column("laps:desc:0:x"),
            Err(DefinitionError::ColumnBounds("laps".into()))
        );
    }

    #[test]
    fn feeds_are_distinct_plain_board_ids_other_than_the_board() {
        let id = |s: &str| BoardId::parse(s).expect("board");
        let feeding = |feeds: Vec<BoardId>| {
            Declaration {
                feeds: Some(feeds),
                ..add()
            }
            .definition(board())
            .map(|d| d.feeds.len())
        };
        assert_eq!(feeding(vec![id("daily"), id("monthly")]), Ok(2));
        assert_eq!(
            feeding(vec![id("daily"), id("daily")]),
            Err(DefinitionError::Feeds)
        );
        assert_eq!(feeding(vec![board()]), Err(DefinitionError::Feeds));
        assert_eq!(
            feeding((0..8).map(|i| id(&format!("b{i}"))).collect()),
            Err(DefinitionError::Feeds)
        );
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
