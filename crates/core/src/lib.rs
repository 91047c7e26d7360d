//! ledgerboard's core: domain types, configuration, the PostgreSQL access and the Redis read
//! model (`projection/`) that the daemons and `lbctl` share.

pub mod auth;
pub mod backoff;
pub mod board;
pub mod config;
pub mod daemon;
pub mod db;
pub mod ids;
pub mod model;
pub mod projection;
pub mod ranking;
pub mod shutdown;
pub mod telemetry;
pub mod tls;

// Old paths, kept until the lead moves the callers: `definition::` is now
// `board::definition::`, `board::definitions::` is `board::definition::`, `domain::` is
// `model::` (and `domain::ScoreCommand` is `board::ScoreCommand`), and `board::BoardKind` is
// `board::Operator` with the board's `Sort` passed where it matters.

pub mod definition {
    pub use crate::board::definition::*;
}

pub mod domain {
    pub use crate::board::ScoreCommand;
    pub use crate::model::*;
}

#[doc(hidden)]
pub mod old_paths {
    use crate::board::definition::{BoardDefinition, Sort};
    use crate::board::{Operator, Tally};
    use crate::db::Statement;

    /// An operator and, for best, its sort: what `board::Operator` and the definition's
    /// `sort` say together.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum BoardKind {
        #[default]
        Add,
        Best(Sort),
        Latest,
    }

    impl BoardKind {
        pub fn of(definition: &BoardDefinition) -> BoardKind {
            Self::from_parts(definition.operator, definition.sort)
        }

        fn from_parts(operator: Operator, sort: Sort) -> BoardKind {
            match operator {
                Operator::Add => BoardKind::Add,
                Operator::Best => BoardKind::Best(sort),
                Operator::Latest => BoardKind::Latest,
            }
        }

        pub fn operator(self) -> Operator {
            match self {
                BoardKind::Add => Operator::Add,
                BoardKind::Best(_) => Operator::Best,
                BoardKind::Latest => Operator::Latest,
            }
        }

        fn sort(self) -> Sort {
            match self {
                BoardKind::Best(sort) => sort,
                BoardKind::Add | BoardKind::Latest => Sort::Descending,
            }
        }

        pub fn statement(self) -> &'static Statement<11> {
            self.operator().statement()
        }

        pub fn fold(self, prior: Option<Tally>, value: i64) -> Tally {
            self.operator().fold(self.sort(), prior, value)
        }

        pub fn expected(self, values: impl IntoIterator<Item = i64>) -> Option<Tally> {
            self.operator().expected(self.sort(), values)
        }
    }
}
