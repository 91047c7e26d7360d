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

use super::definition::{BoardDefinition, DefinitionError, Sort};
use crate::db::{Op, Statement};
use crate::model::{MAX_ABS_SCORE, MAX_DELTA, MIN_DELTA, ValidationError};

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

/// A member's score and the number of commands that changed it (its version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    pub score: i64,
    pub version: i64,
}

/// The parameters of every operator's statement: event id, board, user, value, trace context,
/// revision, tie sign, min score, max score, metadata, direction (`sql/command/head.sql`).
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

/// The shared head and tail of every operator's statement, around its part.
pub const HEAD: &str = include_str!("sql/command/head.sql");
pub const TAIL: &str = include_str!("sql/command/tail.sql");

/// One operator's statement, assembled at compile time from the head, its part and the tail.
macro_rules! command_statement {
    ($part:literal) => {
        Statement::new(
            Op::ScoreCommand,
            concat!(
                include_str!("sql/command/head.sql"),
                include_str!($part),
                include_str!("sql/command/tail.sql")
            ),
            PARAMETERS,
        )
    };
}

/// `sql/command/add.sql`: the score grows by the delta.
pub static ADD: Statement<11> = command_statement!("sql/command/add.sql");
/// `sql/command/best.sql`: the better of the standing and the submitted score.
pub static BEST: Statement<11> = command_statement!("sql/command/best.sql");
/// `sql/command/latest.sql`: the submitted score.
pub static LATEST: Statement<11> = command_statement!("sql/command/latest.sql");

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

    /// The statement that applies one command of this operator exactly once per event id.
    pub fn statement(self) -> &'static Statement<11> {
        match self {
            Self::Add => &ADD,
            Self::Best => &BEST,
            Self::Latest => &LATEST,
        }
    }

    /// The member's tally after one more accepted command carrying `value` (None: the member
    /// has none yet), on a board sorted by `sort`. A best submission that does not improve
    /// leaves the tally as it was.
    pub fn fold(self, sort: Sort, prior: Option<Tally>, value: i64) -> Tally {
        let version = prior.map_or(0, |p| p.version) + 1;
        match (self, prior) {
            (Self::Add, _) => Tally {
                score: prior.unwrap_or_default().score + value,
                version,
            },
            (Self::Latest, _) => Tally {
                score: value,
                version,
            },
            (Self::Best, Some(p)) if !sort.ahead(value, p.score) => p,
            (Self::Best, _) => Tally {
                score: value,
                version,
            },
        }
    }

    /// What a member's accepted commands add up to, in the order they were applied; None
    /// when there are none (the member does not exist).
    pub fn expected(self, sort: Sort, values: impl IntoIterator<Item = i64>) -> Option<Tally> {
        values
            .into_iter()
            .fold(None, |prior, value| Some(self.fold(sort, prior, value)))
    }

    /// The name of the field a command on such a board carries its value in.
    pub fn value_field(self) -> &'static str {
        match self.value() {
            Value::Delta => "delta",
            Value::Score => "score",
        }
    }

    /// A command's value from the body's fields, as they came: exactly the one this operator
    /// takes must be present, an integer within the board's bounds.
    pub fn command_value(
        self,
        definition: &BoardDefinition,
        score: Option<&serde_json::Number>,
        delta: Option<&serde_json::Number>,
    ) -> Result<i64, ValidationError> {
        match (self.value(), score, delta) {
            (Value::Delta, None, Some(d)) => {
                let (min, max) = (
                    definition.min_delta.unwrap_or(MIN_DELTA),
                    definition.max_delta.unwrap_or(MAX_DELTA),
                );
                match integer(d) {
                    None => Err(ValidationError::DeltaNotInteger),
                    Some(Ok(v)) if (min..=max).contains(&v) => Ok(v),
                    Some(_) if definition.declared => {
                        Err(ValidationError::BoardDeltaOutOfRange { min, max })
                    }
                    // An undeclared board answers as before definitions existed.
                    Some(_) => Err(ValidationError::DeltaOutOfRange),
                }
            }
            (Value::Score, Some(s), None) => {
                let (min, max) = (definition.min_score, definition.max_score);
                match integer(s) {
                    None => Err(ValidationError::ScoreNotInteger),
                    Some(Ok(v)) if (min..=max).contains(&v) => Ok(v),
                    Some(_) => Err(ValidationError::BoardScoreOutOfRange { min, max }),
                }
            }
            _ => Err(ValidationError::WrongValueField {
                operator: self.as_str(),
                field: self.value_field(),
            }),
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

    #[test]
    fn a_new_member_starts_at_its_delta_version_1() {
        assert_eq!(
            Operator::Add.fold(Sort::Descending, None, -5),
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
            Operator::Add.fold(Sort::Descending, Some(prior), 7),
            Tally {
                score: 17,
                version: 2
            }
        );
    }

    #[test]
    fn best_folds_to_the_best_by_the_sort_and_latest_to_the_last() {
        let best = Operator::Best;
        assert_eq!(best.expected(Sort::Descending, []), None);
        assert_eq!(
            best.expected(Sort::Descending, [10, 30, 20, 30]),
            Some(Tally {
                score: 30,
                version: 2
            })
        );
        assert_eq!(
            best.expected(Sort::Ascending, [10, 30, 5, 7]),
            Some(Tally {
                score: 5,
                version: 2
            })
        );
        assert_eq!(
            Operator::Latest.expected(Sort::Descending, [10, 30, 5]),
            Some(Tally {
                score: 5,
                version: 3
            })
        );
        assert_eq!(
            Operator::Add.expected(Sort::Descending, [10, -3, 7]),
            Some(Tally {
                score: 14,
                version: 3
            })
        );
    }

    /// The parameters a statement names, `$1` to `$11` as `PARAMETERS` types them.
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
    fn each_statement_is_the_shared_head_and_tail_around_its_operators_part() {
        let parts = [
            include_str!("sql/command/add.sql"),
            include_str!("sql/command/best.sql"),
            include_str!("sql/command/latest.sql"),
        ];
        assert_eq!(parts.len(), Operator::ALL.len());
        for (op, part) in Operator::ALL.into_iter().zip(parts) {
            let sql = op.statement().sql();
            assert_eq!(sql, format!("{HEAD}{part}{TAIL}"), "{op:?}");
            // Nothing left to fill in: the statement takes exactly the shared parameters, and
            // its part names its operator as score_events spells it.
            assert_eq!(parameters(sql), (1..=11).collect(), "{op:?}: parameters");
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
