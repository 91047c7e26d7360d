//! A board's definition, in one home: what it is (`types.rs`), how an operator states it and
//! why a statement is refused (`parse.rs`, `error.rs`), what it asks of players' scores
//! (`rules.rs`), where it is stored, declared, changed and listed
//! (`store.rs`), and the api's cache of it (`cache.rs`).

mod cache;
mod error;
mod parse;
mod rules;
mod store;
mod types;

pub use crate::board::operator::Operator;
pub use cache::Definitions;
pub use error::{DefinitionError, MAX_FEEDS};
pub use parse::{
    Declaration, parse_column, parse_operator, parse_reset, parse_sort, parse_tie_break,
};
pub use rules::{AttemptRule, ReviewRules};
pub use store::{
    DEFINE, DefineError, Defined, Expect, GET, LINKS, LIST, LOCK_ENTRIES, LOCK_LINKS, LOCK_TIMEOUT,
    LOCK_WAIT, MAX_PAGE, OPEN_FIRST_PERIOD, TIME_ZONE_KNOWN, declare, define, from_row, get, list,
    update,
};
pub use types::{
    BoardDefinition, Column, Columns, Cron, DEFAULT_TIME_ZONE, MAX_DISPLAY_NAME_CHARS, Order,
    Reset, Sort, TieBreak, WritePolicy,
};
