//! The scoring rule of a board: what a command may carry, which statement applies it, and the
//! score and version a member's accepted commands add up to. A score command's path reads
//! top to bottom: the HTTP handler parses the body and calls [`submit`], which validates it
//! against the board's definition ([`command`], `definition/`), runs the operator's statement
//! through the command groups (`group.rs`, [`apply_score_command`]: one statement, one
//! transaction: score, event and outbox row), and the projector carries the outbox row to
//! Redis. The chaos run checks PostgreSQL against [`Operator::expected`].
//!
//! Everything that differs between operators is the table in `operator.rs`; each operator's
//! statement is the shared head and tail of `sql/command/` around its part, all taking the
//! same parameters and answering the same columns (`outcome, board_id, user_id, operator,
//! submitted, metadata, score, version, improved`, and what the command's attempt said), so
//! the duplicate check, the outbox and the projection are shared.

mod apply;
mod command;
pub mod definition;
pub mod group;
pub mod guard;
mod guarded;
pub mod link;
pub mod moderation;
pub mod operator;
pub mod periods;
pub mod schedule;
mod submit;
pub mod verification;

pub use apply::apply_score_command;
pub use command::{Fields, ScoreCommand, Writer, command};
pub use link::{Refused, apply_set, fed_event};
pub use operator::{Operator, Tally, Value, Values};
pub use submit::{SubmitError, check_write_policy, submit};
