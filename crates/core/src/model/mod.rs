//! Domain types below every store and the board rule: ids (`ids.rs`), a command's values and
//! its outcome (`command.rs`), entries as read and projected (`entry.rs`), validation errors
//! (`error.rs`), and a board's order (`order.rs`). Every value that reaches a SQL statement or a
//! Redis key is built here from validated input, so the rest of the code never handles an
//! unchecked id. The validated score command itself is `board::ScoreCommand`: it carries the
//! board's operator, which lives with the rule in `board/`.

mod command;
mod entry;
mod error;
mod ids;
pub mod order;

pub use command::{
    CommandOutcome, Delta, FedOutcome, MAX_ABS_SCORE, MAX_DELTA, MAX_METADATA_BYTES, MIN_DELTA,
    Submitted,
};
pub use entry::{EntryChange, MemberStanding, ProjectionEntry, RankedEntry};
pub use error::ValidationError;
pub use ids::{
    BoardId, EventId, MAX_BOARD_ID_LEN, MAX_COHORT, MAX_USER_ID_BYTES, PERIOD_SEPARATOR, UserId,
    cohort_key, is_period_id, is_period_key,
};
pub use order::{Columns, Key, MAX_COLUMNS, Order, Sort, TieBreak};
