//! Which statement a command runs: the guarded one (an attempt's verdict, a competition's
//! window and entry: `sql/command/guards.sql`) or the one without the guards
//! (`sql/command/unguarded.sql`), about 15% less PostgreSQL CPU per command
//! (docs/performance.md).
//!
//! A command with an attempt needs the guards. Whether its board is a competition is not in
//! the board's cached definition, and can change without the definition's revision changing,
//! so the unguarded statement probes it in its own snapshot: a competition's command answers
//! `guarded`, writes nothing, and is run again guarded (`apply.rs`, `link.rs`). The boards
//! found so are remembered here for the process's life, so each costs that extra run once;
//! they are competitions' ids, so the set grows with the competitions declared, not with load.
//! A competition deleted since stays here and keeps the guarded statement, which is right for
//! any board.

use std::collections::HashSet;
use std::sync::{LazyLock, RwLock};

use super::command::ScoreCommand;
use super::operator::PARAMETER_COUNT;
use crate::db::Statement;
use crate::model::BoardId;

/// The outcome the unguarded statement answers for a competition's command.
pub(super) const OUTCOME: &str = "guarded";

static COMPETITIONS: LazyLock<RwLock<HashSet<BoardId>>> =
    LazyLock::new(|| RwLock::new(HashSet::new()));

/// The statement that applies `cmd`: guarded unless it has no attempt and its board is not
/// known to be a competition.
pub(super) fn statement(cmd: &ScoreCommand) -> &'static Statement<PARAMETER_COUNT> {
    cmd.operator.statement(needs_guards(cmd))
}

/// Whether `cmd` must run the guarded statement.
fn needs_guards(cmd: &ScoreCommand) -> bool {
    // A poisoned lock (a panic while inserting) still holds a usable set.
    cmd.attempt.is_some()
        || COMPETITIONS
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&cmd.board)
}

/// `board` answered [`OUTCOME`]: its commands run guarded from now on.
pub(super) fn remember(board: &BoardId) {
    COMPETITIONS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(board.clone());
}
