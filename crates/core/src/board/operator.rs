//! The operator table: everything that differs between a board's operators, in one place. Per
//! operator: its name (API bodies, `board_definitions.operator`, `score_events.operator`), the
//! field its commands carry their value in and the bounds that value keeps (commands and
//! declarations), its statement (a shared head and tail around the operator's part,
//! `sql/command/`), and its fold: the score and version a member's accepted commands add up to
//! (the chaos run's expectation).
//!
//! Adding an operator is one variant here with its arm in each `match` of `impl Operator`, its
//! entry in [`Operator::ALL`], its part `sql/command/<name>.sql` and its tests.

use serde::{Deserialize, Serialize};
use tokio_postgres::types::Type;

use super::definition::{BoardDefinition, DefinitionError};
use crate::db::{Op, Statement};
use crate::model::{MAX_ABS_SCORE, MAX_DELTA, MIN_DELTA, Order, Submitted, ValidationError};

/// How a submission changes a member's score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Operator {
    /// Each command adds its `delta` (Steam/Nakama/PlayFab "increment" / "incr" / "Sum").
    Add,
    /// The member keeps its best submitted `score` (Steam KeepBest, Nakama best, PlayFab Max).
    Best,
    /// Each submitted `score` replaces the last (Steam ForceUpdate, Nakama set, PlayFab Last).
    Latest,
}

/// What a command's value is, which decides the field it comes in and the bounds it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A change of the score (`delta`), within the board's delta bounds; the score it makes is
    /// bounded by the statement.
    Delta,
    /// A score (`score`), within the board's score bounds; no delta bounds.
    Score,
}

/// A member's tuple (its score and, on a board with columns, its other columns in order-key
/// form: `model::Columns`) and the number of commands that changed it (its version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    pub score: i64,
    pub rest: [i64; 2],
    pub version: i64,
}

/// A command's value: its first column's and its other columns' (order-key form; 0 past the
/// board's columns). A score on best and latest boards, a change of it on add boards.
pub type Values = (i64, [i64; 2]);

/// How many parameters every operator's statement takes.
pub const PARAMETER_COUNT: usize = 20;

/// The parameters of every operator's statement (`sql/command/head.sql`): event id, board,
/// user, value, trace context, revision, tie sign, min score, max score, metadata, direction,
/// the board's column count, the second and third columns' values, their bounds (min2, max2,
/// min3, max3), the event id the command was sent with (on a fed board's command), and the
/// attempt it comes from.
const PARAMETERS: [Type; PARAMETER_COUNT] = [
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
    Type::INT2,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::UUID,
    Type::UUID,
];

/// The shared parts of every operator's statement, around its own part: the head, the guards
/// (`GUARDS`, or `UNGUARDED` in their place), the member's row, and the tail.
pub const HEAD: &str = include_str!("sql/command/head.sql");
pub const GUARDS: &str = include_str!("sql/command/guards.sql");
pub const UNGUARDED: &str = include_str!("sql/command/unguarded.sql");
pub const HOLD: &str = include_str!("sql/command/hold.sql");
pub const TAIL: &str = include_str!("sql/command/tail.sql");

/// One operator's statement, assembled at compile time from the head, the guards (`guards` or
/// `unguarded`), the member's row, its part and the tail.
macro_rules! command_statement {
    ($guards:literal, $part:literal) => {
        Statement::new(
            Op::ScoreCommand,
            concat!(
                include_str!("sql/command/head.sql"),
                include_str!(concat!("sql/command/", $guards, ".sql")),
                include_str!("sql/command/hold.sql"),
                include_str!(concat!("sql/command/", $part, ".sql")),
                include_str!("sql/command/tail.sql")
            ),
            PARAMETERS,
        )
    };
}

/// `sql/command/add.sql`: the tuple grows by the deltas, column by column.
pub static ADD: Statement<PARAMETER_COUNT> = command_statement!("guards", "add");
/// `sql/command/best.sql`: the better of the standing and the submitted tuple, whole.
pub static BEST: Statement<PARAMETER_COUNT> = command_statement!("guards", "best");
/// `sql/command/latest.sql`: the submitted tuple.
pub static LATEST: Statement<PARAMETER_COUNT> = command_statement!("guards", "latest");
/// The same, unguarded (`sql/command/unguarded.sql`): for a command with no attempt on a board
/// not known to be a competition (`board/guarded.rs`).
pub static ADD_UNGUARDED: Statement<PARAMETER_COUNT> = command_statement!("unguarded", "add");
pub static BEST_UNGUARDED: Statement<PARAMETER_COUNT> = command_statement!("unguarded", "best");
pub static LATEST_UNGUARDED: Statement<PARAMETER_COUNT> = command_statement!("unguarded", "latest");

impl Operator {
    /// Every operator: names are parsed by looking them up here.
    pub const ALL: [Operator; 3] = [Self::Add, Self::Best, Self::Latest];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Add => "add",
            Self::Best => "best",
            Self::Latest => "latest",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == raw)
    }

    /// Every name, as a refusal lists them (`add, best, latest`).
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// What its commands' value is.
    pub fn value(self) -> Value {
        match self {
            Self::Add => Value::Delta,
            Self::Best | Self::Latest => Value::Score,
        }
    }

    /// The statement that applies one command of this operator exactly once per event id:
    /// `guarded` for a command with an attempt or on a board that may be a competition
    /// (`board/guarded.rs` decides), else the one without the guards.
    pub fn statement(self, guarded: bool) -> &'static Statement<PARAMETER_COUNT> {
        match (self, guarded) {
            (Self::Add, true) => &ADD,
            (Self::Best, true) => &BEST,
            (Self::Latest, true) => &LATEST,
            (Self::Add, false) => &ADD_UNGUARDED,
            (Self::Best, false) => &BEST_UNGUARDED,
            (Self::Latest, false) => &LATEST_UNGUARDED,
        }
    }

    /// The member's tally after one more accepted command carrying `value` (None: the member
    /// has none yet), on a board of `order`. Add adds column by column; a best submission
    /// replaces the whole tuple when it ranks ahead of it, and else leaves the tally as it was
    /// (never a mix of two submissions).
    pub fn fold(self, order: Order, prior: Option<Tally>, value: Values) -> Tally {
        let version = prior.map_or(0, |p| p.version) + 1;
        let (score, rest) = value;
        match (self, prior) {
            (Self::Add, _) => {
                let p = prior.unwrap_or_default();
                Tally {
                    score: p.score + score,
                    rest: [p.rest[0] + rest[0], p.rest[1] + rest[1]],
                    version,
                }
            }
            (Self::Best, Some(p)) if !order.ahead(value, (p.score, p.rest)) => p,
            (Self::Latest | Self::Best, _) => Tally {
                score,
                rest,
                version,
            },
        }
    }

    /// What a member's accepted commands add up to, in the order they were applied; None
    /// when there are none (the member does not exist).
    pub fn expected(self, order: Order, values: impl IntoIterator<Item = Values>) -> Option<Tally> {
        values
            .into_iter()
            .fold(None, |prior, value| Some(self.fold(order, prior, value)))
    }

    /// The name of the field a command on such a board carries its value in.
    pub fn value_field(self) -> &'static str {
        match self.value() {
            Value::Delta => "delta",
            Value::Score => "score",
        }
    }

    /// A command's value from the body's fields, as they came: exactly the one this operator
    /// takes must be present, one integer per column of the board (one integer on a board of
    /// one column), each within its bounds (deltas: the board's delta bounds; scores: the
    /// column's bounds). The other columns come back in order-key form (`model::Columns`).
    pub fn command_value(
        self,
        definition: &BoardDefinition,
        score: Option<&Submitted>,
        delta: Option<&Submitted>,
    ) -> Result<Values, ValidationError> {
        let given = match (self.value(), score, delta) {
            (Value::Delta, None, Some(d)) => d,
            (Value::Score, Some(s), None) => s,
            _ => {
                return Err(ValidationError::WrongValueField {
                    operator: self.as_str(),
                    field: self.value_field(),
                });
            }
        };
        let field = self.value_field();
        let names: Vec<String> = (0..definition.column_count())
            .map(|i| definition.column_name(i).to_owned())
            .collect();
        let shape = || ValidationError::ColumnsShape {
            field,
            names: names.clone(),
        };
        let numbers: Vec<&serde_json::Number> = match given {
            Submitted::One(n) if names.len() == 1 => vec![n],
            _ if definition.columns.is_empty() => {
                return Err(match self.value() {
                    Value::Delta => ValidationError::DeltaNotInteger,
                    Value::Score => ValidationError::ScoreNotInteger,
                });
            }
            Submitted::List(list) if list.len() == names.len() => list.iter().collect(),
            Submitted::Named(map) if map.len() == names.len() => names
                .iter()
                .map(|n| map.get(n).ok_or_else(shape))
                .collect::<Result<_, _>>()?,
            _ => return Err(shape()),
        };
        let columns = definition.order().columns;
        let mut values = [0_i64; 3];
        for (i, number) in numbers.into_iter().enumerate() {
            values[i] = self.one_value(definition, i, number)?;
        }
        Ok((
            values[0],
            [columns.key(1, values[1]), columns.key(2, values[2])],
        ))
    }

    /// The value of column `index` within its bounds: a board of one column answers as it
    /// always did; a board with columns names the column.
    fn one_value(
        self,
        definition: &BoardDefinition,
        index: usize,
        number: &serde_json::Number,
    ) -> Result<i64, ValidationError> {
        let named = !definition.columns.is_empty();
        let column = || definition.column_name(index).to_owned();
        let field = self.value_field();
        let (min, max) = match self.value() {
            Value::Delta => (
                definition.min_delta.unwrap_or(MIN_DELTA),
                definition.max_delta.unwrap_or(MAX_DELTA),
            ),
            Value::Score => definition.column_bounds(index),
        };
        match integer(number) {
            Some(Ok(v)) if (min..=max).contains(&v) => Ok(v),
            _ if named && integer(number).is_none() => Err(ValidationError::ColumnNotInteger {
                field,
                column: column(),
            }),
            _ if named => Err(ValidationError::ColumnOutOfRange {
                field,
                column: column(),
                min,
                max,
            }),
            None => Err(match self.value() {
                Value::Delta => ValidationError::DeltaNotInteger,
                Value::Score => ValidationError::ScoreNotInteger,
            }),
            Some(_) => match self.value() {
                Value::Delta if definition.declared => {
                    Err(ValidationError::BoardDeltaOutOfRange { min, max })
                }
                // An undeclared board answers as before definitions existed.
                Value::Delta => Err(ValidationError::DeltaOutOfRange),
                Value::Score => Err(ValidationError::BoardScoreOutOfRange { min, max }),
            },
        }
    }

    /// The delta bounds a declaration of such a board states (`min`, `max` as declared): the
    /// defaults (±1000) for what is left out where commands carry deltas; none, and a refusal
    /// of any, where they carry scores.
    pub fn delta_bounds(
        self,
        min: Option<i64>,
        max: Option<i64>,
    ) -> Result<(Option<i64>, Option<i64>), DefinitionError> {
        match self.value() {
            Value::Delta => {
                let exact = |v: i64| (-MAX_ABS_SCORE..=MAX_ABS_SCORE).contains(&v);
                let (min, max) = (min.unwrap_or(MIN_DELTA), max.unwrap_or(MAX_DELTA));
                if !exact(min) || !exact(max) || min > max {
                    return Err(DefinitionError::DeltaBounds);
                }
                Ok((Some(min), Some(max)))
            }
            Value::Score if min.is_some() || max.is_some() => {
                Err(DefinitionError::DeltaBoundsNotAllowed(self.as_str()))
            }
            Value::Score => Ok((None, None)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in Operator::ALL {
            assert_eq!(Operator::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operator::parse("sum"), None);
        assert_eq!(
            DefinitionError::Operator.to_string(),
            "operator must be one of add, best, latest"
        );
    }

    use crate::model::{Sort, TieBreak};

    const DESC: Order = Order::of(Sort::Descending, TieBreak::UserId);
    const ASC: Order = Order::of(Sort::Ascending, TieBreak::UserId);

    fn one(v: i64) -> Values {
        (v, [0, 0])
    }

    fn tally(score: i64, version: i64) -> Tally {
        Tally {
            score,
            rest: [0, 0],
            version,
        }
    }

    #[test]
    fn a_new_member_starts_at_its_delta_version_1() {
        assert_eq!(Operator::Add.fold(DESC, None, one(-5)), tally(-5, 1));
    }

    #[test]
    fn each_command_adds_its_delta_and_one_version() {
        assert_eq!(
            Operator::Add.fold(DESC, Some(tally(10, 1)), one(7)),
            tally(17, 2)
        );
    }

    #[test]
    fn best_folds_to_the_best_by_the_sort_and_latest_to_the_last() {
        let best = Operator::Best;
        assert_eq!(best.expected(DESC, []), None);
        assert_eq!(
            best.expected(DESC, [10, 30, 20, 30].map(one)),
            Some(tally(30, 2))
        );
        assert_eq!(
            best.expected(ASC, [10, 30, 5, 7].map(one)),
            Some(tally(5, 2))
        );
        assert_eq!(
            Operator::Latest.expected(DESC, [10, 30, 5].map(one)),
            Some(tally(5, 3))
        );
        assert_eq!(
            Operator::Add.expected(DESC, [10, -3, 7].map(one)),
            Some(tally(14, 3))
        );
    }

    #[test]
    fn best_keeps_a_whole_submitted_tuple_never_a_mix() {
        // Laps descending, time ascending: time is stored negated (order-key form).
        let racing = Order {
            columns: crate::model::Columns::of(&[Sort::Descending, Sort::Ascending]).expect("two"),
            ..DESC
        };
        let run = |laps: i64, time: i64| (laps, [racing.columns.key(1, time), 0]);
        let got = Operator::Best
            .expected(racing, [run(10, 95), run(9, 80), run(10, 90), run(10, 92)])
            .expect("a tally");
        // 9 laps in 80 is not better than 10 laps; 10 laps in 90 beats 10 in 95; 92 does not.
        // Nakama's per-column best would hold (10, 80), which nobody submitted.
        assert_eq!((got.score, got.rest[0], got.version), (10, -90, 2));
        let added = Operator::Add
            .expected(racing, [run(1, 30), run(2, 45)])
            .expect("a tally");
        assert_eq!((added.score, racing.columns.key(1, added.rest[0])), (3, 75));
    }

    /// The parameters a statement names, `$1` to `$19` as `PARAMETERS` types them.
    fn parameters(sql: &str) -> std::collections::BTreeSet<u32> {
        let b = sql.as_bytes();
        let mut found = std::collections::BTreeSet::new();
        for (i, _) in sql.match_indices('$') {
            let digits: String = b[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .map(|&c| c as char)
                .collect();
            if let Ok(n) = digits.parse() {
                found.insert(n);
            }
        }
        found
    }

    #[test]
    fn each_statement_is_the_shared_parts_around_its_operators_part() {
        let parts = [
            include_str!("sql/command/add.sql"),
            include_str!("sql/command/best.sql"),
            include_str!("sql/command/latest.sql"),
        ];
        assert_eq!(parts.len(), Operator::ALL.len());
        for (op, part) in Operator::ALL.into_iter().zip(parts) {
            assert_eq!(
                op.statement(true).sql(),
                format!("{HEAD}{GUARDS}{HOLD}{part}{TAIL}"),
                "{op:?}"
            );
            let sql = op.statement(false).sql();
            assert_eq!(
                sql,
                format!("{HEAD}{UNGUARDED}{HOLD}{part}{TAIL}"),
                "{op:?}"
            );
            // Nothing left to fill in: the statement takes exactly the shared parameters, and
            // its part names its operator as score_events spells it.
            assert_eq!(
                parameters(sql),
                (1..=PARAMETER_COUNT as u32).collect(),
                "{op:?}: parameters"
            );
            assert!(
                part.contains(&format!("'{}'::text AS operator", op.as_str())),
                "{op:?}: its part names it"
            );
            assert!(!sql.contains("{{") && !sql.contains("}}"), "{op:?}");
        }
        // The parts are what differs: no two operators share one.
        for (i, a) in parts.iter().enumerate() {
            for b in &parts[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
